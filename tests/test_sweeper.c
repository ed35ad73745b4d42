// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The flow sweeper (bpf/sweeper.h, bpf/sweep_queue.h) on the datapath's own
 * maps, with the fixture's sweep interval of DP_SWEEP_INTERVAL_MS. Flows
 * are made in bulk by tests/bpf/sweep_fill.bpf.c, as the datapath makes
 * them (an entry and its slot), or by the datapath itself. Issue 17: the
 * sweeper walked both tables whole every tick, milliseconds of softirq even
 * idle; now a run looks at due slots only, at most ISN_SWEEP_BATCH.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/types.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_fixture.h"
#include "harness.h"
#include "pkt.h"
#include "sweep_fill.h"
#include "isnguard.skel.h"
#include "sweep_fill.skel.h"

#define SEC_NS 1000000000ULL
#define ESTABLISHED_FLAGS (FLOW_F_PASSIVE_OPEN | FLOW_F_HOST_ACKED | FLOW_F_ESTABLISHED)

static struct sweep_fill *fill_skel(void)
{
	static struct sweep_fill *skel;

	if (skel)
		return skel;
	skel = sweep_fill__open();
	if (!skel || !dp_share_maps(skel->obj) || sweep_fill__load(skel)) {
		FAIL("load sweep_fill.bpf.o: %s", strerror(errno));
		sweep_fill__destroy(skel);
		skel = NULL;
	}
	return skel;
}

/* Runs sweep_fill once; args in, made and full out. */
static bool fill_run(struct fill_args *args)
{
	struct sweep_fill *skel = fill_skel();
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);

	if (!skel)
		return false;
	args->made = 0;
	args->full = 0;
	skel->bss->fill = *args;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.sweep_fill), &opts)) {
		FAIL("run sweep_fill: %s", strerror(errno));
		return false;
	}
	*args = skel->bss->fill;
	return true;
}

static void fill_key(uint32_t n, struct flow_key *fk)
{
	const uint8_t local[4] = SWEEP_FILL_LOCAL_ADDR, remote[4] = SWEEP_FILL_REMOTE_ADDR(n);

	memset(fk, 0, sizeof(*fk));
	fk->family = FLOW_FAMILY_IPV4;
	memcpy(fk->local_addr, local, 4);
	memcpy(fk->remote_addr, remote, 4);
	fk->local_port = htons(SWEEP_FILL_LOCAL_PORT);
	fk->remote_port = htons(SWEEP_FILL_REMOTE_PORT);
}

static uint64_t queue_len(enum sweep_queue t)
{
	struct flow_sweeper sw;

	return dp_sweeper_get(&sw) ? sw.tail[t] - sw.head[t] : UINT64_MAX;
}

/* The default timeouts but the closed one, s seconds (the long delay's, here). */
static bool set_closed_timeout(uint32_t s)
{
	return dp_set_timeouts(ISN_DEFAULT_TIMEOUT_OPENING, ISN_DEFAULT_TIMEOUT_ESTABLISHED,
			       ISN_DEFAULT_TIMEOUT_CLOSING, s);
}

/*
 * Waits for two sweeper runs to end (sweep_runs), so that one began after
 * the caller's change, at most 10 intervals: the timer's 1 s is a floor,
 * and a loaded machine's softirq runs it later. False when none came.
 */
static bool sweeper_two_runs(void)
{
	uint64_t runs = dp_stat(STAT_SWEEP_RUNS);

	for (int waited = 0; waited < 10 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (dp_stat(STAT_SWEEP_RUNS) >= runs + 2)
			return true;
		usleep(50000);
	}
	FAIL("no two sweeper runs in %d ms", 10 * DP_SWEEP_INTERVAL_MS);
	return false;
}

/*
 * Both tables emptied and every slot left in the queues looked at: the
 * test's slots are then the only ones. Slots of the long queue may be due
 * up to a long delay on (89.5 s at the default timeouts, an hour after a
 * test that set them all to 3600 s); with the closed timeout at 2 s for
 * a moment, the delay is 1.5 s and the sweeper looks at them at once (a
 * slot due further on than its queue's delay, bpf/sweeper.h).
 */
static bool sweeper_clean(void)
{
	if (!dp_setup() || !dp_flows_clear() || !set_closed_timeout(2))
		return false;
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (!queue_len(SWEEP_FLOWS) && !queue_len(SWEEP_OPENING) && !queue_len(SWEEP_LONG))
			return dp_restore_config();
		usleep(50000);
	}
	FAIL("the sweep queues did not empty within %d ms (flows %llu, opening %llu, long %llu slots)",
	     3 * DP_SWEEP_INTERVAL_MS, (unsigned long long)queue_len(SWEEP_FLOWS),
	     (unsigned long long)queue_len(SWEEP_OPENING), (unsigned long long)queue_len(SWEEP_LONG));
	dp_restore_config();
	return false;
}

/* Waits up to ms for isn_flow_count to reach want. */
static bool flow_count_reaches(int64_t want, int ms)
{
	for (int waited = 0; waited < ms; waited += 20) {
		if (dp_flow_count() == want)
			return true;
		usleep(20000);
	}
	return dp_flow_count() == want;
}

/*
 * 3000 flows idle past the established timeout, all due at once: each run
 * looks at no more than ISN_SWEEP_BATCH slots (fewer when the clock cuts
 * it short), the rest follow in later runs, and every one is expired and
 * uncounted.
 */
TEST(test_sweeper_expires_many_flows_in_bounded_runs)
{
	enum { N = 3000 };
	struct fill_args args = { .count = N, .mode = FILL_FLOWS, .flags = ESTABLISHED_FLAGS,
				  .age_ns = 60 * SEC_NS };
	uint64_t runs, slots, expired, ns, cut;
	struct flow_sweeper sw;
	struct flow_state st;
	struct flow_key fk;
	uint32_t present = 0;

	if (!sweeper_clean() || !dp_set_timeouts(3600, 30, 3600, 3600))
		goto out;
	runs = dp_stat(STAT_SWEEP_RUNS);
	slots = dp_stat(STAT_SWEEP_SLOTS);
	ns = dp_stat(STAT_SWEEP_NS);
	cut = dp_stat(STAT_SWEEP_CUT);
	expired = dp_stat(STAT_FLOW_EXPIRED);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, N, "flows made") ||
	    !ASSERT_EQ(dp_flow_count(), N, "isn_flow_count after the fill"))
		goto out;
	ASSERT_EQ(queue_len(SWEEP_FLOWS), N, "one slot per flow");
	ASSERT_TRUE(flow_count_reaches(0, 3 * DP_SWEEP_INTERVAL_MS),
		    "every flow removed within an interval or two");
	for (uint32_t n = 0; n < N; n++) {
		fill_key(n, &fk);
		present += dp_flow_get(&fk, &st);
	}
	ASSERT_EQ(present, 0, "entries left in isn_flows");
	ASSERT_EQ(dp_stat(STAT_FLOW_EXPIRED) - expired, N, "flow_expired");
	ASSERT_TRUE(dp_stat(STAT_SWEEP_SLOTS) - slots >= N, "sweep_slots counts every slot");
	ASSERT_TRUE(dp_stat(STAT_SWEEP_RUNS) - runs >= (N + ISN_SWEEP_BATCH - 1) / ISN_SWEEP_BATCH,
		    "runs enough for batches of ISN_SWEEP_BATCH");
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "slots left");
	if (dp_sweeper_get(&sw)) {
		ASSERT_TRUE(sw.run_slots_max <= ISN_SWEEP_BATCH, "no run looked at more than a batch");
		/* Stopped by the batch, or sooner by the clock (a slow CPU: qemu's TCG). */
		ASSERT_TRUE(sw.run_slots_max == ISN_SWEEP_BATCH || dp_stat(STAT_SWEEP_CUT) > cut,
			    "a run took a whole batch, or was cut short by the clock");
		test_log("%d flows expired in %llu runs (%llu us in all, %llu cut by the clock), "
			 "longest run %llu us", N,
			 (unsigned long long)(dp_stat(STAT_SWEEP_RUNS) - runs),
			 (unsigned long long)((dp_stat(STAT_SWEEP_NS) - ns) / 1000),
			 (unsigned long long)(dp_stat(STAT_SWEEP_CUT) - cut),
			 (unsigned long long)(sw.run_ns_max / 1000));
	}
out:
	dp_restore_config();
	dp_flows_clear();
}

/* Slots given so far in queue t (its tail). */
static uint64_t queue_given(enum sweep_queue t)
{
	struct flow_sweeper sw;

	return dp_sweeper_get(&sw) ? sw.tail[t] : 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC_NS + (uint64_t)ts.tv_nsec;
}

/* Waits up to 3 intervals for fk's entry to hold a long slot; the entry in *st. */
static bool long_slot_reached(const struct flow_key *fk, struct flow_state *st)
{
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 20) {
		if (dp_flow_get(fk, st) && (st->sweep_id & SWEEP_ID_LONG))
			return true;
		usleep(20000);
	}
	return false;
}

/* ns from since until fk's entry is gone, polled until max_ns from since; 0 if it stays. */
static uint64_t ns_until_gone(const struct flow_key *fk, uint64_t since, uint64_t max_ns)
{
	struct flow_state st;

	while (mono_ns() - since < max_ns) {
		if (!dp_flow_get(fk, &st))
			return mono_ns() - since;
		usleep(20000);
	}
	return 0;
}

/*
 * Live flows stay, each with one slot: when due, it gives way to a new one
 * (sweep_id changes), so the queues hold one slot per flow however long
 * they live. An established flow has far more than the long delay to live:
 * after its first look it is looked at once a long delay (the closed
 * timeout, 3 s here, less half an interval), in the long queue. Slots
 * given are counted at the queues' tails: long slots of entries other
 * tests removed may still be waiting there.
 */
TEST(test_sweeper_keeps_live_flows_with_one_slot_each)
{
	enum { N = 1000 };
	struct fill_args args = { .count = N, .mode = FILL_FLOWS, .flags = ESTABLISHED_FLAGS };
	uint32_t first_id[3] = { 0 }, probe[3] = { 0, N / 2, N - 1 };
	uint64_t expired, given_flows, given_long;
	struct flow_state st;
	struct flow_key fk;

	if (!sweeper_clean() || !set_closed_timeout(3))
		goto out;
	expired = dp_stat(STAT_FLOW_EXPIRED);
	given_flows = queue_given(SWEEP_FLOWS);
	given_long = queue_given(SWEEP_LONG);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, N, "flows made"))
		goto out;
	for (int i = 0; i < 3; i++) {
		fill_key(probe[i], &fk);
		if (ASSERT_TRUE(dp_flow_get(&fk, &st), "probe flow"))
			first_id[i] = st.sweep_id;
		ASSERT_TRUE(first_id[i] != 0, "a new flow has a slot");
		ASSERT_TRUE(!(first_id[i] & SWEEP_ID_LONG), "in the interval queue");
	}
	/* Two looks at each: at one interval, then one long delay (2.5 s) later. */
	for (int waited = 0; waited < 6 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (queue_given(SWEEP_LONG) - given_long >= 2 * N)
			break;
		usleep(50000);
	}
	ASSERT_EQ(queue_given(SWEEP_LONG) - given_long, 2 * N,
		  "two long slots given per flow, one a look");
	ASSERT_EQ(queue_given(SWEEP_FLOWS) - given_flows, N,
		  "interval slots given: the first of each flow alone");
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "interval queue empty");
	ASSERT_EQ(dp_flow_count(), N, "isn_flow_count");
	ASSERT_EQ(dp_stat(STAT_FLOW_EXPIRED), expired, "flow_expired");
	for (int i = 0; i < 3; i++) {
		fill_key(probe[i], &fk);
		if (!ASSERT_TRUE(dp_flow_get(&fk, &st), "live flow kept"))
			continue;
		ASSERT_TRUE(st.sweep_id != first_id[i] && (st.sweep_id & SWEEP_ID_LONG),
			    "the flow's slot is a newer one, in the long queue");
	}
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * Issue 18: a connection's entry outlives it by the closed timeout, and at
 * a steady rate of new connections the closed ones are most of the table.
 * Each was looked at once an interval until then (timeout / interval + 1
 * looks, ten at the defaults; five here, 4 s at 1 s); now twice: its first
 * look puts it in the long queue (3.5 s on), whose look removes it. Not
 * before its timeout, and at most an interval after it.
 */
TEST(test_sweeper_looks_at_a_closed_flow_twice)
{
	enum { N = 1000, CLOSED_S = 4 };
	struct fill_args args = { .count = N, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS | FLOW_F_RST_LOCAL };
	uint64_t expired, given_flows, given_long, t0, first_gone = 0, all_gone = 0;

	if (!sweeper_clean() || !set_closed_timeout(CLOSED_S))
		goto out;
	expired = dp_stat(STAT_FLOW_EXPIRED);
	given_flows = queue_given(SWEEP_FLOWS);
	given_long = queue_given(SWEEP_LONG);
	t0 = mono_ns();
	if (!fill_run(&args) || !ASSERT_EQ(args.made, N, "closed flows made"))
		goto out;
	while (mono_ns() - t0 < (CLOSED_S + 4) * SEC_NS) {
		int64_t left = dp_flow_count();

		if (left < N && !first_gone)
			first_gone = mono_ns() - t0;
		if (left == 0) {
			all_gone = mono_ns() - t0;
			break;
		}
		usleep(20000);
	}
	ASSERT_TRUE(all_gone, "every closed flow removed");
	ASSERT_EQ(dp_stat(STAT_FLOW_EXPIRED) - expired, N, "flow_expired");
	ASSERT_EQ(queue_given(SWEEP_FLOWS) - given_flows, N,
		  "interval slots given: each flow's first alone");
	ASSERT_EQ(queue_given(SWEEP_LONG) - given_long, N, "long slots given: one per flow");
	/* The fill's clock read is after t0: a flow goes no sooner than CLOSED_S after it. */
	ASSERT_TRUE(first_gone >= CLOSED_S * SEC_NS, "none removed before its closed timeout");
	ASSERT_TRUE(all_gone <= (CLOSED_S + 2) * SEC_NS,
		    "all removed within an interval of it (and a second of slack)");
	test_log("%d closed flows: first removed at %.2f s, last at %.2f s (closed timeout %d s, "
		 "interval %d ms)", N, first_gone / 1e9, all_gone / 1e9, CLOSED_S,
		 DP_SWEEP_INTERVAL_MS);
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * A flow that closes while its slot is in the long queue has less left
 * than the delay when that slot is due: it goes back to the interval queue
 * and is removed within an interval of its closed timeout, not a long
 * delay after it.
 */
TEST(test_sweeper_closed_in_the_long_queue_expires_on_time)
{
	enum { CLOSED_S = 4 };
	struct fill_args args = { .first = 91, .count = 1, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS };
	uint64_t given_flows, t_close = 0, gone = 0;
	struct flow_state st;
	struct flow_key fk;

	if (!sweeper_clean() || !set_closed_timeout(CLOSED_S) ||
	    !fill_run(&args) || !ASSERT_EQ(args.made, 1, "flow made"))
		goto out;
	fill_key(91, &fk);
	if (!ASSERT_TRUE(long_slot_reached(&fk, &st),
			 "the established flow's slot is in the long queue"))
		goto out;
	/* Its host resets it now (as the datapath records a RST: the flag, the time). */
	given_flows = queue_given(SWEEP_FLOWS);
	st.flags |= FLOW_F_RST_LOCAL;
	t_close = mono_ns();
	st.last_seen_ns = t_close;
	if (!ASSERT_TRUE(dp_flow_put(&fk, &st), "the entry closed"))
		goto out;
	gone = ns_until_gone(&fk, t_close, (CLOSED_S + 4) * SEC_NS);
	ASSERT_TRUE(gone >= CLOSED_S * SEC_NS, "not removed before its closed timeout");
	ASSERT_TRUE(gone && gone <= (CLOSED_S + 2) * SEC_NS,
		    "removed within an interval of it (and a second of slack), not a long delay on");
	ASSERT_EQ(queue_given(SWEEP_FLOWS) - given_flows, 1,
		  "back in the interval queue for its last look");
	test_log("closed in the long queue: removed %.2f s after (closed timeout %d s)",
		 gone / 1e9, CLOSED_S);
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * The long queue full (slots of entries gone, as after a burst of
 * removals): a live flow keeps its place in the interval queue rather than
 * go without a slot, and nothing counts as sweep_queue_full (the sweeper
 * frees a slot of the queue a flow leaves before it takes another). The
 * long delay is 2.5 s here (closed timeout 3 s): the queue's slots fall
 * due and go before the next test.
 */
TEST(test_sweeper_full_long_queue_keeps_a_flow_in_the_interval_queue)
{
	struct fill_args slots = { .mode = FILL_SLOTS, .queue = SWEEP_LONG };
	struct fill_args args = { .first = 93, .count = 1, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS };
	uint64_t full, given_flows, looked, waiting = UINT64_MAX;
	struct flow_sweeper sw;
	struct flow_state st;
	struct flow_key fk;

	if (!sweeper_clean() || !set_closed_timeout(3))
		goto out;
	if (!sweeper_two_runs() || !dp_sweeper_get(&sw) ||	/* a run read the long delay */ !ASSERT_EQ(sw.long_ms, 2500, "the long delay"))
		goto out;
	waiting = queue_len(SWEEP_LONG);
	slots.count = (uint32_t)(sw.size[SWEEP_LONG] - waiting);
	if (!fill_run(&slots) || !ASSERT_EQ(slots.made, slots.count, "the long queue filled"))
		goto out;
	full = dp_stat(STAT_SWEEP_QUEUE_FULL);
	given_flows = queue_given(SWEEP_FLOWS);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, 1, "flow made"))
		goto out;
	looked = dp_stat(STAT_SWEEP_SLOTS);
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 20) {
		if (queue_given(SWEEP_FLOWS) - given_flows >= 2)
			break;
		usleep(20000);
	}
	ASSERT_TRUE(dp_stat(STAT_SWEEP_SLOTS) > looked, "the flow looked at");
	ASSERT_EQ(queue_given(SWEEP_FLOWS) - given_flows, 2,
		  "its first slot, then another in the interval queue");
	fill_key(93, &fk);
	if (ASSERT_TRUE(dp_flow_get(&fk, &st), "the flow kept"))
		ASSERT_TRUE(st.sweep_id && !(st.sweep_id & SWEEP_ID_LONG),
			    "its slot in the interval queue");
	ASSERT_EQ(dp_stat(STAT_SWEEP_QUEUE_FULL), full, "sweep_queue_full");
out:
	dp_restore_config();
	dp_flows_clear();
	for (int waited = 0; waiting != UINT64_MAX && waited < 5 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (queue_len(SWEEP_LONG) <= waiting)
			return;
		usleep(50000);
	}
	if (waiting != UINT64_MAX)
		FAIL("the long queue's filled slots not dropped within 5 intervals");
}

/*
 * A timeout shortened takes effect at once: a slot due further on than its
 * queue's delay now (taken at the default 89.5 s) is looked at on the next
 * run, not held until due, and the slots behind it with it.
 */
TEST(test_sweeper_shorter_closed_timeout_takes_effect_at_once)
{
	struct fill_args args = { .first = 95, .count = 1, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS };
	uint64_t given_long = 0, t_change = 0, looked = 0;
	struct flow_sweeper sw;
	struct flow_state st;
	struct flow_key fk;
	uint32_t id = 0;

	if (!sweeper_clean() || !fill_run(&args) || !ASSERT_EQ(args.made, 1, "flow made"))
		goto out;
	fill_key(95, &fk);
	if (!ASSERT_TRUE(long_slot_reached(&fk, &st), "in the long queue") ||
	    !dp_sweeper_get(&sw) || !ASSERT_EQ(sw.long_ms, 89500, "the default long delay"))
		goto out;
	id = st.sweep_id;
	given_long = queue_given(SWEEP_LONG);
	t_change = mono_ns();
	if (!set_closed_timeout(4))
		goto out;
	while (mono_ns() - t_change < 5 * SEC_NS) {
		if (dp_flow_get(&fk, &st) && st.sweep_id != id) {
			looked = mono_ns() - t_change;
			break;
		}
		usleep(20000);
	}
	ASSERT_TRUE(looked && looked <= 2 * DP_SWEEP_INTERVAL_MS * 1000000ULL,
		    "looked at within two intervals of the change, not 89.5 s on");
	ASSERT_TRUE(st.sweep_id & SWEEP_ID_LONG, "its new slot in the long queue");
	ASSERT_EQ(queue_given(SWEEP_LONG) - given_long, 1, "one new long slot");
	if (dp_sweeper_get(&sw))
		ASSERT_EQ(sw.long_ms, 3500, "the long delay now");
	test_log("looked at %.2f s after the closed timeout went from 90 s to 4 s", looked / 1e9);
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * The long delay follows the shortest timeout, not the closed one alone:
 * an established flow waiting in the long queue when the established
 * timeout is cut (24 h to 2 s) is removed within an interval of the new
 * timeout, not at its slot's 89.5 s.
 */
TEST(test_sweeper_shorter_established_timeout_reaches_the_long_queue)
{
	struct fill_args args = { .first = 97, .count = 1, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS };
	uint64_t t_change = 0, gone = 0;
	struct flow_state st;
	struct flow_key fk;

	if (!sweeper_clean() || !fill_run(&args) || !ASSERT_EQ(args.made, 1, "flow made"))
		goto out;
	fill_key(97, &fk);
	if (!ASSERT_TRUE(long_slot_reached(&fk, &st), "in the long queue"))
		goto out;
	t_change = mono_ns();
	if (!dp_set_timeouts(ISN_DEFAULT_TIMEOUT_OPENING, 2, ISN_DEFAULT_TIMEOUT_CLOSING,
			     ISN_DEFAULT_TIMEOUT_CLOSED))
		goto out;
	gone = ns_until_gone(&fk, t_change, 6 * SEC_NS);
	/* Idle since it was made, over an interval before the change: gone within 2 s + 1 s of it. */
	ASSERT_TRUE(gone && gone <= 3 * SEC_NS + 500000000ULL,
		    "removed within an interval of the new timeout (and half a second of slack)");
	test_log("removed %.2f s after the established timeout went from 24 h to 2 s", gone / 1e9);
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * A CPU publishes its slot before it inserts the entry, so the sweeper
 * looks at an interval queue's slot only once it is due, however far on
 * that is: a slot due 2.5 s on (as one taken just before the interval was
 * shortened may be) waits through the runs of a 1 s interval, where a look
 * before the insert would drop the entry's only slot.
 */
TEST(test_sweeper_waits_for_an_interval_slot_due_beyond_the_interval)
{
	struct fill_args slot = { .first = 99, .count = 1, .mode = FILL_SLOTS,
				  .queue = SWEEP_FLOWS, .due_ms = 2500 };
	uint64_t looked, t0;

	if (!sweeper_clean())
		goto out;
	looked = dp_stat(STAT_SWEEP_SLOTS);
	t0 = mono_ns();
	if (!fill_run(&slot) || !ASSERT_EQ(slot.made, 1, "a slot taken, its entry not yet made"))
		goto out;
	usleep(1700 * DP_SWEEP_INTERVAL_MS);	/* a run or two of the 1 s interval */
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 1, "the slot still queued before it is due");
	ASSERT_EQ(dp_stat(STAT_SWEEP_SLOTS), looked, "no slot looked at");
	ASSERT_TRUE(mono_ns() - t0 < 2400000000ULL, "checked before it was due (the test slept too long)");
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (!queue_len(SWEEP_FLOWS))
			break;
		usleep(50000);
	}
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "looked at once due, and dropped (no entry)");
out:
	dp_flows_clear();
}

/* isn_closed_timeout_ms against pf's formula, worked by hand for a 262144 limit and 90 s. */
TEST(test_sweeper_adaptive_closed_timeout_values)
{
	static const struct {
		int64_t entries;
		uint32_t max_flows, want_ms;
	} rows[] = {
		{ 0, 262144, 90000 },
		{ 157286, 262144, 90000 },	/* 60% (157286.4): not yet */
		{ 196608, 262144, 67500 },	/* 75%: (314572.8 - 196608) / 157286.4 = 0.75 */
		{ 262144, 262144, 30000 },	/* 100%: a third */
		{ 314572, 262144, 0 },		/* 120% (314572.8, floored): nothing */
		{ 400000, 262144, 0 },
		{ 262144, 0, 90000 },		/* no limit: never scaled */
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t got = isn_closed_timeout_ms(90, rows[i].entries, rows[i].max_flows);
		int64_t diff = (int64_t)got - rows[i].want_ms;

		/* Integer division of the limits (start 157286, end 314572): within a ms. */
		ASSERT_TRUE(diff >= -1 && diff <= 1, "closed timeout for the fill");
		if (diff < -1 || diff > 1)
			test_log("%lld entries of %u: %u ms, want %u", (long long)rows[i].entries,
				 rows[i].max_flows, got, rows[i].want_ms);
	}
}

/*
 * pf's adaptive timeouts, for closed entries: past 60% of max_flows the
 * closed timeout is scaled by (120% - entries) / (120% - 60%). 900 closed
 * flows of a 1000 limit, all as old: half of it, 4 s of 8, so they start
 * to go at 4 s, and then as the fill falls, each at the timeout the fill
 * of the moment gives (at t s, 1200 - 75 t are left), the last at 8 s,
 * the fill at 60% again; the table empty, the timeout is whole. Below 60%
 * (500 flows), it is not scaled.
 */
TEST(test_sweeper_closed_timeout_adapts_to_a_filling_table)
{
	enum { MAX = 1000, CLOSED_S = 8 };
	struct fill_args few = { .first = 0, .count = MAX / 2, .mode = FILL_FLOWS,
				 .flags = ESTABLISHED_FLAGS | FLOW_F_RST_LOCAL };
	struct fill_args many = { .first = MAX, .count = 9 * MAX / 10, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS | FLOW_F_RST_LOCAL };
	uint64_t t0, first_gone = 0, all_gone = 0;
	struct flow_sweeper sw;

	if (!sweeper_clean() || !dp_set_max_flows(MAX) || !set_closed_timeout(CLOSED_S))
		goto out;
	if (!fill_run(&few) || !ASSERT_EQ(few.made, MAX / 2, "500 closed flows made"))
		goto out;
	if (sweeper_two_runs() && dp_sweeper_get(&sw))	/* a run has seen them */
		ASSERT_EQ(sw.closed_ms, CLOSED_S * 1000, "50% of max_flows: the closed timeout whole");
	if (!dp_flows_clear() || !sweeper_clean() || !dp_set_max_flows(MAX) ||
	    !set_closed_timeout(CLOSED_S))
		goto out;
	t0 = mono_ns();
	if (!fill_run(&many) || !ASSERT_EQ(many.made, 9 * MAX / 10, "900 closed flows made"))
		goto out;
	if (sweeper_two_runs() && dp_sweeper_get(&sw))
		ASSERT_EQ(sw.closed_ms, CLOSED_S * 1000 / 2, "90% of max_flows: half the closed timeout");
	while (mono_ns() - t0 < (CLOSED_S + 3) * SEC_NS) {
		int64_t left = dp_flow_count();

		if (left < 9 * MAX / 10 && !first_gone)
			first_gone = mono_ns() - t0;
		if (left == 0) {
			all_gone = mono_ns() - t0;
			break;
		}
		usleep(20000);
	}
	ASSERT_TRUE(first_gone >= CLOSED_S * SEC_NS / 2, "none gone before the scaled timeout");
	ASSERT_TRUE(first_gone && first_gone < (CLOSED_S / 2 + 2) * SEC_NS,
		    "the first gone within an interval of it (and a second of slack), not at 8 s");
	ASSERT_TRUE(all_gone && all_gone < (CLOSED_S + 2) * SEC_NS,
		    "all gone within an interval of the whole timeout (and a second of slack)");
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (dp_sweeper_get(&sw) && sw.closed_ms == CLOSED_S * 1000)
			break;
		usleep(50000);
	}
	ASSERT_EQ(sw.closed_ms, CLOSED_S * 1000, "the table empty: the closed timeout whole again");
	test_log("900 closed flows of a 1000 limit, closed timeout %d s: first gone %.2f s, "
		 "last %.2f s", CLOSED_S, first_gone / 1e9, all_gone / 1e9);
out:
	dp_restore_config();
	dp_flows_clear();
}

/*
 * A tuple's entry removed and made again has two slots: the old one's id
 * is not the entry's, so it is dropped when due rather than taking the new
 * entry for its own (which would leave the entry two slots for good).
 */
TEST(test_sweeper_drops_a_tuples_older_slot)
{
	struct fill_args args = { .first = 77, .count = 1, .mode = FILL_FLOWS,
				  .flags = ESTABLISHED_FLAGS };
	uint64_t slots, given_flows, given_long;
	struct flow_state st;
	struct flow_key fk;

	if (!sweeper_clean())
		goto out;
	given_flows = queue_given(SWEEP_FLOWS);
	given_long = queue_given(SWEEP_LONG);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, 1, "first entry") ||
	    !dp_flows_clear() || !fill_run(&args) || !ASSERT_EQ(args.made, 1, "second entry"))
		goto out;
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 2, "two slots, one per entry made");
	slots = dp_stat(STAT_SWEEP_SLOTS);
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (!queue_len(SWEEP_FLOWS))
			break;
		usleep(50000);
	}
	ASSERT_TRUE(dp_stat(STAT_SWEEP_SLOTS) - slots >= 2, "both slots looked at");
	fill_key(77, &fk);
	ASSERT_TRUE(dp_flow_get(&fk, &st), "the entry lives on");
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "interval queue empty");
	ASSERT_EQ(queue_given(SWEEP_FLOWS) - given_flows, 2, "interval slots: one per entry made");
	ASSERT_EQ(queue_given(SWEEP_LONG) - given_long, 1,
		  "one long slot given, the live entry's: the older slot dropped");
	ASSERT_TRUE(st.sweep_id & SWEEP_ID_LONG, "the entry's slot is the long one");
out:
	dp_flows_clear();
}

/* Empty tables: a run an interval, and not one slot looked at. */
TEST(test_sweeper_idle_tables_cost_a_run_an_interval)
{
	uint64_t runs, slots;

	if (!sweeper_clean())
		return;
	runs = dp_stat(STAT_SWEEP_RUNS);
	slots = dp_stat(STAT_SWEEP_SLOTS);
	usleep(3 * DP_SWEEP_INTERVAL_MS * 1000 + 200000);
	ASSERT_EQ(dp_stat(STAT_SWEEP_SLOTS), slots, "slots looked at");
	ASSERT_TRUE(dp_stat(STAT_SWEEP_RUNS) - runs >= 2, "the timer still runs");
	ASSERT_TRUE(dp_stat(STAT_SWEEP_RUNS) - runs <= 4, "about a run an interval");
	test_log("%llu runs in %d ms with both tables empty",
		 (unsigned long long)(dp_stat(STAT_SWEEP_RUNS) - runs),
		 3 * DP_SWEEP_INTERVAL_MS + 200);
}

/*
 * The flow table's queue full (slots of gone entries, as after a burst of
 * removals): a handshake the peer completes stays in the handshake table,
 * established and translated, rather than enter isn_flows with nothing to
 * expire it; the queue's room comes back as the slots fall due.
 */
TEST(test_sweeper_full_queue_keeps_a_handshake_where_it_is)
{
	uint8_t frame[PKT_MAX_LEN], out[PKT_MAX_LEN];
	struct fill_args args = { .mode = FILL_SLOTS };
	uint64_t full, failed, promoted;
	struct flow_state st;
	struct flow_sweeper sw;
	struct pkt_spec s;
	struct flow_key fk;
	size_t len, out_len;
	uint32_t verdict, wire;
	bool opening = false;

	if (!sweeper_clean() || !dp_sweeper_get(&sw))
		goto out;
	args.count = sw.size[SWEEP_FLOWS] - ISN_SWEEP_MARGIN;
	full = dp_stat(STAT_SWEEP_QUEUE_FULL);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, args.count, "slots taken"))
		goto out;
	args.count = 1;
	if (!fill_run(&args) || !ASSERT_EQ(args.full, 1, "the next refused"))
		goto out;
	/* The host's SYN-ACK, then the peer's ACK of it. */
	pkt_tcp_segment(&s, "10.0.9.1", "10.0.9.2", 443, 33001, TH_SYN | TH_ACK, 5000, 9001);
	len = pkt_build(&s, frame, sizeof(frame));
	if (!dp_run(DP_TC_EGRESS, frame, len, out, &out_len, &verdict))
		goto out;
	wire = get_be32(out + 34 + 4);
	failed = dp_stat(STAT_FLOW_PROMOTE_FAILED);
	promoted = dp_stat(STAT_FLOW_PROMOTED);
	pkt_tcp_segment(&s, "10.0.9.2", "10.0.9.1", 33001, 443, TH_ACK, 9001, wire + 1);
	len = pkt_build(&s, frame, sizeof(frame));
	if (!dp_run(DP_TC_INGRESS, frame, len, out, &out_len, &verdict))
		goto out;
	ASSERT_EQ(get_be32(out + 34 + 8), 5001, "the ACK translated to the host's ISN + 1");
	ASSERT_EQ(dp_stat(STAT_FLOW_PROMOTE_FAILED), failed + 1, "flow_promote_failed");
	ASSERT_EQ(dp_stat(STAT_FLOW_PROMOTED), promoted, "flow_promoted");
	ASSERT_TRUE(dp_stat(STAT_SWEEP_QUEUE_FULL) >= full + 2, "sweep_queue_full");
	pkt_tcp_segment(&s, "10.0.9.1", "10.0.9.2", 443, 33001, TH_ACK, 5001, 9001);
	dp_flow_key_of(&s, true, &fk);
	if (ASSERT_TRUE(dp_flow_get_in(&fk, &st, &opening), "the flow's entry")) {
		ASSERT_TRUE(opening, "still in the handshake table");
		ASSERT_TRUE(st.flags & FLOW_F_ESTABLISHED, "established");
		ASSERT_TRUE(st.sweep_id != 0, "with its handshake slot");
	}
	/* The gone entries' slots are dropped when due: room again. */
	for (int waited = 0; waited < 3 * DP_SWEEP_INTERVAL_MS; waited += 50) {
		if (!queue_len(SWEEP_FLOWS))
			break;
		usleep(50000);
	}
	ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "the full queue's slots dropped");
out:
	dp_flows_clear();
}

/*
 * State kept from an isnguard whose sweeper had no queues (the walk before
 * issue 17): its entries have no slot, and the running sweeper never looks
 * at them. The loader then makes the sweeper's maps anew (user/state.c,
 * struct kept_maps); a new sweeper, never armed, gives each entry found in
 * the tables a slot when it starts, and the idle ones expire. Here a
 * second datapath object shares every map but the sweeper's, as an attach
 * over such state does.
 */
TEST(test_sweeper_new_sweeper_adopts_kept_flows_without_slots)
{
	enum { N = 200 };
	struct fill_args args = { .count = N, .mode = FILL_UNQUEUED, .flags = ESTABLISHED_FLAGS,
				  .age_ns = 60 * SEC_NS };
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	struct isnguard *upgraded = NULL;
	uint64_t adopted, expired;

	if (!sweeper_clean() || !dp_set_timeouts(3600, 30, 3600, 3600))
		goto out;
	expired = dp_stat(STAT_FLOW_EXPIRED);
	if (!fill_run(&args) || !ASSERT_EQ(args.made, N, "entries made") ||
	    !ASSERT_EQ(queue_len(SWEEP_FLOWS), 0, "none has a slot"))
		goto out;
	/* Idle past their timeout, yet the running sweeper has nothing due. */
	usleep(2 * DP_SWEEP_INTERVAL_MS * 1000 + 200000);
	if (!ASSERT_EQ(dp_flow_count(), N, "kept without a slot, never expired"))
		goto out;
	upgraded = isnguard__open();
	if (!ASSERT_TRUE(upgraded != NULL, "open a second datapath object") ||
	    !dp_share_maps_except(upgraded->obj, "isn_sweep") ||
	    !ASSERT_EQ(isnguard__load(upgraded), 0, "load it over the shared tables"))
		goto out;
	adopted = dp_stat(STAT_SWEEP_ADOPTED);
	if (!ASSERT_EQ(bpf_prog_test_run_opts(bpf_program__fd(upgraded->progs.isnguard_sweeper),
					      &opts), 0, "run its isnguard_sweeper") ||
	    !ASSERT_EQ(opts.retval, 0, "its timer started"))
		goto out;
	ASSERT_EQ(dp_stat(STAT_SWEEP_ADOPTED) - adopted, N, "sweep_flows_adopted");
	ASSERT_TRUE(flow_count_reaches(0, 3 * DP_SWEEP_INTERVAL_MS),
		    "every kept flow expired within an interval or two of the start");
	ASSERT_EQ(dp_stat(STAT_FLOW_EXPIRED) - expired, N, "flow_expired");
out:
	isnguard__destroy(upgraded);	/* its sweeper's map, and so its timer, go with it */
	dp_restore_config();
	dp_flows_clear();
}
