/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sweeper: one timer (map isn_sweeper) that expires the flow tables'
 * entries from their queues (bpf/sweep_queue.h). A run looks at the slots
 * that are due, oldest first, at most SWEEP_BATCH of them over the three
 * queues: a slot whose entry is gone, or now another's (its sweep_id
 * differs), is dropped; an entry idle past its phase's timeout is removed;
 * a live one takes a new slot one interval on, or, an isn_flows entry with
 * at least the long delay less an interval left (isn_sweep_long_ms: the
 * shortest timeout less half an interval), one long delay on. The timer is
 * set again for the next slot due, 1 ms on while due slots are left, or an
 * interval on when the queues are empty. So an idle table costs a run per
 * interval, no run looks at more than SWEEP_BATCH slots whatever the
 * tables' size, and the entry of a connection that lasted less than half
 * an interval is looked at twice, not once an interval until its closed
 * timeout (issue 18: at a steady rate of new connections, closed ones are
 * most of the table; isn_sweep_long_ms says what longer ones cost). The
 * delays follow isn_config (the interval, the timeouts) on each run; a
 * long slot due further on than the long delay now (taken before a
 * timeout was shortened) is looked at at once, so the slots behind it are
 * not held up. Looking at it early is harmless: its entry is removed only
 * if idle past its timeout, else it takes a new slot. The program
 * isnguard_sweeper starts it; the loader runs that once per attach
 * (BPF_PROG_TEST_RUN), before any flow is made.
 */
#ifndef ISNGUARD_BPF_SWEEPER_H
#define ISNGUARD_BPF_SWEEPER_H

#include <bpf/bpf_helpers.h>
#include "config.h"
#include "flow.h"
#include "isnguard.h"
#include "stats.h"
#include "sweep_queue.h"

#define CLOCK_MONOTONIC 1
#define EBUSY 16	/* errno values are #defines, not in vmlinux.h */
#define ENOENT 2

#define SWEEP_BATCH ISN_SWEEP_BATCH
/* The next run while due slots are left, and the least wait otherwise. */
#define SWEEP_BACKLOG_NS 1000000ULL
#define SWEEP_MIN_WAIT_NS 10000000ULL
/* A run longer than this is counted (sweep_runs_over_1ms): issue 17's bound. */
#define SWEEP_LONG_RUN_NS 1000000ULL
/*
 * And one past half of it stops at the next check, every SWEEP_CLOCK_EVERY
 * slots: a batch is a few hundred us, but slots in tables far larger than
 * the cache, or a CPU slowed by interrupts, may cost more than planned.
 */
#define SWEEP_RUN_CUT_NS 500000ULL
#define SWEEP_CLOCK_EVERY 32

struct sweep_run {
	struct flow_sweeper *sw;
	__u64 now;
	__u64 wait;		/* until the next run: the least of what the queues ask */
	__u64 interval_ns;
	__u64 long_ns;		/* the long queue's delay (0: not used) */
	__u64 closed_ns;	/* the closed timeout, adapted to the table's fill */
	__u32 now_due;		/* now >> SWEEP_DUE_SHIFT */
	__u32 due_next;		/* a live entry's next slot, an interval on */
	__u32 due_long;		/* or one long delay on */
	__u32 long_units;	/* the long delay in SWEEP_DUE_SHIFT units, rounded up */
	__u32 looked;		/* slots looked at, all queues */
	__u32 cut;		/* stopped by the clock (SWEEP_RUN_CUT_NS) */
	__u32 idx;		/* a slot's index, as a map key */
};

static __always_inline void sweep_wait(struct sweep_run *r, __u64 wait)
{
	if (wait < r->wait)
		r->wait = wait;
}

/*
 * The next slot of a live entry that had one in queue t, with left ns to
 * live if nothing comes: its id. An isn_flows entry goes to the long queue
 * if it has at least the long delay less an interval left, to the interval
 * queue otherwise; either way, to the queue it came from when the other
 * is full (the slot just freed there is free).
 */
static __always_inline __u32 sweep_requeue(struct sweep_run *r, __u32 t, const struct flow_key *fk,
					   __s64 left)
{
	__u32 q = t;

	if (t != SWEEP_OPENING) {
		q = r->long_ns && left + (__s64)r->interval_ns >= (__s64)r->long_ns ? SWEEP_LONG
										   : SWEEP_FLOWS;
		if (q != t && !sweep_queue_room(r->sw, q))
			q = t;
	}
	return sweep_slot_take(r->sw, q, fk, q == SWEEP_LONG ? r->due_long : r->due_next, 0,
			       &r->idx);
}

/*
 * The head slot of queue t, whose table is map (isn_flows, or isn_opening
 * for SWEEP_OPENING): 0 to go on, 1 to stop (queue empty, or its head not
 * due or not written).
 */
static __always_inline long sweep_step(struct sweep_run *r, __u32 t, void *queue, void *map)
{
	struct flow_sweeper *sw = r->sw;
	struct sweep_slot *slot;
	struct flow_state *st;
	__u32 size, idx, id, flags;
	__u64 head;
	__s64 idle, timeout;
	__s32 early;

	t &= SWEEP_QUEUE_SLOTS - 1;
	head = sw->head[t];
	size = sw->size[t];
	if (head == sw->tail[t] || !size)
		return 1;	/* empty: this queue asks for nothing */
	idx = (__u32)(head % size);
	slot = bpf_map_lookup_elem(queue, &idx);
	if (!slot)
		return 1;
	id = __sync_fetch_and_or(&slot->id, 0);	/* ordered before the reads of key and due */
	if (!id) {
		sweep_wait(r, SWEEP_MIN_WAIT_NS);	/* a CPU is writing it */
		return 1;
	}
	/*
	 * Not due: wait. But a long slot due further on than the long delay
	 * now (its timeouts shortened since) is looked at at once: only the
	 * timer takes long slots, for entries that exist, and due_long and
	 * now_due come from the same clock read. Not so an interval queue's:
	 * a CPU publishes its slot before it inserts the entry, with its own
	 * clock and the interval of the last run, and a look before the insert
	 * would drop the entry's only slot.
	 */
	early = (__s32)(slot->due - r->now_due);
	if (early > 0 && (t != SWEEP_LONG || early <= (__s32)r->long_units)) {
		sweep_wait(r, (__u64)early << SWEEP_DUE_SHIFT);
		return 1;
	}
	r->looked++;
	slot->id = 0;
	sw->head[t] = head + 1;
	st = bpf_map_lookup_elem(map, &slot->key);
	if (!st || st->sweep_id != id)
		return 0;	/* gone, or the tuple's newer entry has a slot of its own */
	flags = st->flags;
	idle = (__s64)(r->now - st->last_seen_ns);
	timeout = (__s64)flow_timeout_ns(flags, r->closed_ns);
	if (idle >= timeout) {
		/* st is not read after this: a deleted element is reused at once. */
		if (bpf_map_delete_elem(map, &slot->key))
			return 0;
		if (t != SWEEP_OPENING)
			flow_count_add(-1);
		if (!(flags & FLOW_F_MOVED))	/* a moved entry's flow lives on in isn_flows */
			stat_inc(STAT_FLOW_EXPIRED);
		return 0;
	}
	st->sweep_id = sweep_requeue(r, t, &slot->key, timeout - idle);
	return 0;
}

/*
 * Whether the run has gone on long enough, asked every SWEEP_CLOCK_EVERY
 * steps of a loop. On bpf_loop's index, not on r->looked: see
 * flow_sweeper_fire.
 */
static __always_inline bool sweep_cut(__u32 i, struct sweep_run *r)
{
	if ((i & (SWEEP_CLOCK_EVERY - 1)) != SWEEP_CLOCK_EVERY - 1 ||
	    bpf_ktime_get_ns() - r->now < SWEEP_RUN_CUT_NS)
		return false;
	r->cut = 1;
	return true;
}

static long sweep_step_flows(__u32 i, struct sweep_run *r)
{
	if (sweep_cut(i, r))
		return 1;
	return sweep_step(r, SWEEP_FLOWS, &isn_sweep_flows, &isn_flows);
}

static long sweep_step_opening(__u32 i, struct sweep_run *r)
{
	if (sweep_cut(i, r))
		return 1;
	return sweep_step(r, SWEEP_OPENING, &isn_sweep_opening, &isn_opening);
}

static long sweep_step_long(__u32 i, struct sweep_run *r)
{
	if (sweep_cut(i, r))
		return 1;
	return sweep_step(r, SWEEP_LONG, &isn_sweep_long, &isn_flows);
}

static __always_inline __u32 sweep_interval_ms(void)
{
	struct isn_config *cfg = config_get();

	return cfg && cfg->sweep_interval_ms ? cfg->sweep_interval_ms : ISN_SWEEP_INTERVAL_MS;
}

static __always_inline __u64 sweep_min(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* The closed timeout (ms) as the table's fill adapts it (isn_closed_timeout_ms). */
static __always_inline __u32 sweep_closed_ms(void)
{
	struct isn_config *cfg = config_get();
	__u32 zero = 0, closed = ISN_DEFAULT_TIMEOUT_CLOSED;
	__s64 *count = bpf_map_lookup_elem(&isn_flow_count, &zero);

	if (cfg && cfg->timeout_closed)
		closed = cfg->timeout_closed;
	return isn_closed_timeout_ms(closed, count ? *count : 0, cfg ? cfg->max_flows : 0);
}

/* The long queue's delay (ms, 0: not used), from the shortest timeout, closed_ms the closed one. */
static __always_inline __u32 sweep_long_ms(__u32 interval_ms, __u32 closed_ms)
{
	struct isn_config *cfg = config_get();
	__u64 shortest_ns;

	shortest_ns = sweep_min(timeout_or_default(cfg ? cfg->timeout_opening : 0,
						   ISN_DEFAULT_TIMEOUT_OPENING),
				timeout_or_default(cfg ? cfg->timeout_established : 0,
						   ISN_DEFAULT_TIMEOUT_ESTABLISHED));
	shortest_ns = sweep_min(shortest_ns, timeout_or_default(cfg ? cfg->timeout_closing : 0,
								 ISN_DEFAULT_TIMEOUT_CLOSING));
	/* Below closed_ms, a __u32: in ms the shortest fits. */
	return isn_sweep_long_ms((__u32)sweep_min(shortest_ns / 1000000ULL, closed_ms), interval_ms);
}

static int flow_sweeper_fire(void *map __maybe_unused, __u32 *key __maybe_unused,
			     struct flow_sweeper *sw)
{
	__u32 interval_ms = sweep_interval_ms();
	__u64 interval = (__u64)interval_ms * 1000000ULL, start = bpf_ktime_get_ns(), ns;
	struct sweep_run r = { .sw = sw, .now = start, .wait = interval, .interval_ns = interval };
	long n;

	sw->interval_ms = interval_ms;	/* what new entries' slots are due by */
	/*
	 * Read back from the map: the verifier then takes them as any value,
	 * not one per path through the arithmetic, and verifies the loops'
	 * callbacks once rather than once a path.
	 */
	sw->closed_ms = sweep_closed_ms();
	r.closed_ns = (__u64)*(volatile __u32 *)&sw->closed_ms * 1000000ULL;
	sw->long_ms = sweep_long_ms(interval_ms, *(volatile __u32 *)&sw->closed_ms);
	r.long_ns = (__u64)*(volatile __u32 *)&sw->long_ms * 1000000ULL;
	r.now_due = (__u32)(start >> SWEEP_DUE_SHIFT);
	r.due_next = sweep_due(sw, start);
	r.due_long = (__u32)((start + r.long_ns) >> SWEEP_DUE_SHIFT);
	r.long_units = (__u32)(r.long_ns >> SWEEP_DUE_SHIFT) + 1;
	/*
	 * Decided on bpf_loop's counts (the stopping step included), never on
	 * r.looked: the verifier then need not tell one iteration's state
	 * from the next.
	 */
	n = bpf_loop(SWEEP_BATCH, sweep_step_flows, &r, 0);
	if (n < SWEEP_BATCH && !r.cut)
		n = bpf_loop(SWEEP_BATCH - n, sweep_step_long, &r, 0) + n;
	if (n < SWEEP_BATCH && !r.cut)
		n = bpf_loop(SWEEP_BATCH - n, sweep_step_opening, &r, 0) + n;
	if (n >= SWEEP_BATCH || r.cut)
		r.wait = SWEEP_BACKLOG_NS;	/* stopped by batch or clock: due slots may be left */
	else if (r.wait < SWEEP_MIN_WAIT_NS)
		r.wait = SWEEP_MIN_WAIT_NS;
	ns = bpf_ktime_get_ns() - start;
	stat_inc(STAT_SWEEP_RUNS);
	stat_add(STAT_SWEEP_SLOTS, r.looked);
	stat_add(STAT_SWEEP_NS, ns);
	if (r.cut)
		stat_inc(STAT_SWEEP_CUT);
	if (ns > SWEEP_LONG_RUN_NS)
		stat_inc(STAT_SWEEP_LONG_RUNS);	/* the bound broken, or the CPU taken away */
	if (ns > sw->run_ns_max)
		sw->run_ns_max = ns;
	if (r.looked > sw->run_slots_max)
		sw->run_slots_max = r.looked;
	bpf_timer_start(&sw->timer, r.wait, 0);
	return 0;
}

/*
 * bpf_for_each_map_elem's callback: the entry gets a slot of table t's
 * queue (an older build left it none, or one of queues now gone). The
 * slot's index goes through this frame, not the per-CPU word of the
 * datapath's sweep_queue: this runs from the loader with bottom halves on,
 * and a packet on the same CPU may take a slot meanwhile. An entry whose id
 * changed meanwhile (a new flow in a reused element) keeps its own; the
 * slot taken for it here is dropped when due.
 */
struct sweep_adopt {
	struct flow_sweeper *sw;
	__u32 due;		/* sweep_due of the start, for every slot */
	__u32 t;
	__u32 idx;
};

static long sweep_adopt_one(void *map __maybe_unused, const struct flow_key *fk,
			    struct flow_state *st, struct sweep_adopt *a)
{
	__u32 seen = st->sweep_id, id;

	id = sweep_slot_take(a->sw, a->t, fk, a->due, ISN_SWEEP_MARGIN, &a->idx);
	if (id && __sync_val_compare_and_swap(&st->sweep_id, seen, id) == seen)
		stat_inc(STAT_SWEEP_ADOPTED);
	return 0;	/* a full queue is counted in sweep_queue_full */
}

/*
 * Sets the timer up, or takes it over from an earlier load (its callback
 * is then this program's), with the queues' sizes read from their maps.
 * A sweeper never armed is new: the tables may still hold flows kept from
 * an isnguard whose sweeper had no queues (the loader makes the sweeper's
 * maps anew over kept state of another layout), and each of those gets its
 * slot here, due one interval on (sweep_flows_adopted). 0, or which
 * bpf_timer call failed and how (SWEEPER_START_RETVAL, counted in
 * flow_timer_error). The state's pins keep the timer running across
 * reloads; it goes with them.
 */
static __always_inline __u32 flow_sweeper_failed(enum sweeper_start_step step, long err)
{
	stat_inc(STAT_FLOW_TIMER_ERROR);
	return SWEEPER_START_RETVAL(step, err);
}

static __always_inline __u32 flow_sweeper_start(void)
{
	struct flow_sweeper *sw = sweeper_get();
	struct sweep_adopt a;
	long err;

	if (!sw)
		return SWEEPER_START_RETVAL(SWEEPER_START_NO_MAP, -ENOENT);
	sw->size[SWEEP_FLOWS] = ((struct bpf_map *)&isn_sweep_flows)->max_entries;
	sw->size[SWEEP_OPENING] = ((struct bpf_map *)&isn_sweep_opening)->max_entries;
	sw->size[SWEEP_LONG] = ((struct bpf_map *)&isn_sweep_long)->max_entries;
	sw->interval_ms = sweep_interval_ms();
	if (!sw->armed) {
		a.sw = sw;
		a.due = sweep_due(sw, bpf_ktime_get_ns());
		a.t = SWEEP_FLOWS;
		bpf_for_each_map_elem(&isn_flows, sweep_adopt_one, &a, 0);
		a.t = SWEEP_OPENING;
		bpf_for_each_map_elem(&isn_opening, sweep_adopt_one, &a, 0);
	}
	/* -EBUSY: the timer of kept state, initialised by the build before. */
	err = bpf_timer_init(&sw->timer, &isn_sweeper, CLOCK_MONOTONIC);
	if (err && err != -EBUSY)
		return flow_sweeper_failed(SWEEPER_START_INIT, err);
	err = bpf_timer_set_callback(&sw->timer, flow_sweeper_fire);
	if (err)
		return flow_sweeper_failed(SWEEPER_START_CALLBACK, err);
	err = bpf_timer_start(&sw->timer, SWEEP_MIN_WAIT_NS, 0);
	if (err)
		return flow_sweeper_failed(SWEEPER_START_TIMER, err);
	sw->armed = 1;
	return 0;
}

#endif /* ISNGUARD_BPF_SWEEPER_H */
