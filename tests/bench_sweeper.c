// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench, the flow sweeper (bpf/sweeper.h): its softirq time per second
 * and its longest run, beside the walk it replaced (issue 17), measured in
 * the same run on the same tables.
 *
 * The datapath object is loaded with its maps sized for --max-flows as the
 * loader sizes them, the sweeper started as the loader starts it, and the
 * sweep interval set to --interval-ms (default: the loader's for that size,
 * isn_sweep_interval_ms). The sweeper's own counters (sweep_ns, sweep_runs,
 * sweep_slots; per run, bpf_ktime_get_ns around its work) give its time:
 * - idle: both tables empty, for --seconds;
 * - full: --max-flows live flows (tests/bpf/sweep_fill.bpf.c), for
 *   --seconds from when they were made: each is looked at once, at one
 *   interval, and then waits in the long queue (a look per long delay: the
 *   steady state is computed from the ns per slot measured here);
 * - expiring: the established timeout cut to 1 s, until every flow is gone
 *   (within an interval: each is removed at its next look; those in the
 *   long queue are looked at at once, its delay cut with the timeout).
 * The baseline, tests/bpf/sweep_walk.bpf.c, is the old timer's work: both
 * tables walked whole, run through BPF_PROG_TEST_RUN on the empty and on
 * the full tables; the old timer did it once a second per 256 Ki of
 * --max-flows (ms/s = one walk / that interval).
 *
 * Then churn (issue 18): connections closed as soon as made, --churn-rate a
 * second for CHURN_MAKE_S, at the default timeouts' proportions scaled ten
 * times down (interval 1 s, closed timeout 9 s: long delay 8.5 s), until
 * every one has expired: the sweeper's slots and ns per connection, with
 * the long queue and, in the same run, without it (a second datapath
 * object whose long queue has one slot: all flows but the one at a time
 * that slot holds stay in the interval queue, as before the long queue).
 *
 * Usage: bench_sweeper [--max-flows N] [--interval-ms MS] [--seconds S]
 *                      [--churn-rate R] [--json]
 */
#include <errno.h>
#include <getopt.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "isnguard.h"
#include "isnguard.skel.h"
#include "json_writer.h"
#include "bpf_run.h"
#include "map_share.h"
#include "sweep_fill.h"
#include "sweep_fill.skel.h"
#include "sweep_walk.skel.h"

#define FILL_CHUNK 65536
/* Churn: flows made for this long, in batches this far apart. */
#define CHURN_MAKE_S 3
#define CHURN_BATCH_MS 100
#define CHURN_INTERVAL_MS 1000
#define CHURN_CLOSED_S 9

struct sample {
	double t;
	__u64 ns, runs, slots, long_runs;
};

struct phase {
	double ms_per_s;	/* sweeper time per second of wall time */
	double runs_per_s;
	double slots_per_s;
	double ns_per_slot;
	double mean_run_us;
	double max_run_us;	/* the longest run so far (isn_sweeper.run_ns_max) */
	__u64 runs, long_runs;	/* runs, and those over 1 ms (sweep_runs_over_1ms) */
};

static struct isnguard *dp;
static int ncpus;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __u64 stat_sum(enum isn_stat stat)
{
	return percpu_u64_sum(bpf_map__fd(dp->maps.isn_stats), stat, sizeof(__u64), 0);
}

static void sample(struct sample *s)
{
	s->t = now_s();
	s->ns = stat_sum(STAT_SWEEP_NS);
	s->runs = stat_sum(STAT_SWEEP_RUNS);
	s->slots = stat_sum(STAT_SWEEP_SLOTS);
	s->long_runs = stat_sum(STAT_SWEEP_LONG_RUNS);
}

static bool sweeper_get(struct flow_sweeper *sw)
{
	__u32 zero = 0;

	return !bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_sweeper), &zero, sw);
}

static void phase_of(const struct sample *a, const struct sample *b, struct phase *p)
{
	double dt = b->t - a->t;
	__u64 ns = b->ns - a->ns, runs = b->runs - a->runs, slots = b->slots - a->slots;
	struct flow_sweeper sw;

	p->ms_per_s = (double)ns / 1e6 / dt;
	p->runs_per_s = (double)runs / dt;
	p->slots_per_s = (double)slots / dt;
	p->ns_per_slot = slots ? (double)ns / (double)slots : 0;
	p->mean_run_us = runs ? (double)ns / (double)runs / 1e3 : 0;
	p->max_run_us = sweeper_get(&sw) ? (double)sw.run_ns_max / 1e3 : 0;
	p->runs = runs;
	p->long_runs = b->long_runs - a->long_runs;
}

static int run_prog(const struct bpf_program *prog, __u32 repeat, __u32 *duration)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = repeat);

	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts))
		return -errno;
	if (duration)
		*duration = opts.duration;
	return (int)opts.retval;
}

static int share_maps(struct bpf_object *obj)
{
	return map_share(obj, dp->obj, NULL) ? -errno : 0;
}

static int config_write(__u32 max_flows, __u32 interval_ms, __u32 established_s, __u32 closed_s)
{
	struct isn_config cfg = {
		.hash = ISN_HASH_SIPHASH,
		.timeout_opening = ISN_DEFAULT_TIMEOUT_OPENING,
		.timeout_established = established_s,
		.timeout_closing = ISN_DEFAULT_TIMEOUT_CLOSING,
		.timeout_closed = closed_s,
		.sweep_interval_ms = interval_ms,
		.max_flows = max_flows,
	};
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(dp->maps.isn_config), &zero, &cfg, 0) ? -errno : 0;
}

static __s64 flow_count(void)
{
	__u32 zero = 0;
	__s64 count = -1;

	bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_flow_count), &zero, &count);
	return count;
}

/* One walk of both tables, the median of 5 (ms). */
static double walk_ms(struct sweep_walk *walk)
{
	double ms[5], t;
	__u32 duration;

	for (int i = 0; i < 5; i++) {
		if (run_prog(walk->progs.sweep_walk, 1, &duration) < 0)
			return -1;
		ms[i] = (double)duration / 1e6;
		for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
			t = ms[j];
			ms[j] = ms[j - 1];
			ms[j - 1] = t;
		}
	}
	return ms[2];
}

static void print_phase(const char *name, const struct phase *p)
{
	printf("  %-9s %8.4f ms/s  %7.1f runs/s  %9.0f slots/s  %6.1f ns/slot  "
	       "mean run %6.1f us  over 1 ms %llu of %llu  longest so far %6.1f us\n", name,
	       p->ms_per_s, p->runs_per_s, p->slots_per_s, p->ns_per_slot, p->mean_run_us,
	       (unsigned long long)p->long_runs, (unsigned long long)p->runs, p->max_run_us);
}

static void json_phase(struct json_writer *jw, const char *name, const struct phase *p)
{
	jw_name(jw, name);
	jw_start_object(jw);
	jw_double_field(jw, "ms_per_s", p->ms_per_s, 4);
	jw_double_field(jw, "runs_per_s", p->runs_per_s, 1);
	jw_double_field(jw, "slots_per_s", p->slots_per_s, 0);
	jw_double_field(jw, "ns_per_slot", p->ns_per_slot, 1);
	jw_double_field(jw, "mean_run_us", p->mean_run_us, 1);
	jw_double_field(jw, "longest_run_us", p->max_run_us, 1);
	jw_uint_field(jw, "runs", p->runs);
	jw_uint_field(jw, "runs_over_1ms", p->long_runs);
	jw_end_object(jw);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "bench_sweeper: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/*
 * The datapath object (the sweeper alone loaded) into dp, its maps sized as
 * the loader sizes them for max_flows, the long queue long_slots (0: as the
 * loader), and sweep_fill beside it sharing them. 0 or an exit code.
 */
static int load_dp(unsigned long max_flows, __u32 long_slots, struct sweep_fill **fill)
{
	struct bpf_program *prog;
	int err;

	dp = isnguard__open();
	if (!dp)
		return fail("open isnguard.bpf.o", errno);
	bpf_object__for_each_program(prog, dp->obj)
		bpf_program__set_autoload(prog, prog == dp->progs.isnguard_sweeper);
	bpf_map__set_max_entries(dp->maps.isn_flows, isn_flows_capacity((__u32)max_flows));
	bpf_map__set_max_entries(dp->maps.isn_opening, isn_opening_size((__u32)max_flows));
	bpf_map__set_max_entries(dp->maps.isn_sweep_flows, isn_sweep_flows_size((__u32)max_flows));
	bpf_map__set_max_entries(dp->maps.isn_sweep_opening,
				 isn_sweep_opening_size((__u32)max_flows));
	bpf_map__set_max_entries(dp->maps.isn_sweep_long,
				 long_slots ? long_slots : isn_sweep_long_size((__u32)max_flows));
	err = isnguard__load(dp);
	if (err)
		return fail("load isnguard.bpf.o", err);
	*fill = sweep_fill__open();
	if (!*fill || share_maps((*fill)->obj) || sweep_fill__load(*fill))
		return fail("load sweep_fill.bpf.o", errno);
	return 0;
}

/*
 * The config (the established timeout the default) written, and the
 * sweeper started as the loader starts it, on the object in dp. 0 or an
 * exit code.
 */
static int sweeper_start(__u32 max_flows, __u32 interval_ms, __u32 closed_s)
{
	int err = config_write(max_flows, interval_ms, ISN_DEFAULT_TIMEOUT_ESTABLISHED, closed_s);

	if (err)
		return fail("write the config", err);
	err = run_prog(dp->progs.isnguard_sweeper, 1, NULL);
	if (err)
		return fail("start the sweeper (isnguard_sweeper)", err < 0 ? err : EIO);
	return 0;
}

struct churn {
	__u64 flows;
	double slots_per_flow;
	double ns_per_flow;
	double ns_per_slot;
	double last_gone_s;	/* from the last batch made to the last flow gone */
};

/*
 * Closed connections at rate a second for CHURN_MAKE_S, in batches every
 * CHURN_BATCH_MS, with the interval and closed timeout of the churn (the
 * sweeper started on the object in dp), until all are gone. 0 or an exit
 * code.
 */
static int churn_run(struct sweep_fill *fill, unsigned long max_flows, unsigned long rate,
		     struct churn *out)
{
	__u32 batch = (__u32)(rate * CHURN_BATCH_MS / 1000), made = 0;
	double t0, t_last;
	struct sample a, b;
	int err;

	err = sweeper_start((__u32)max_flows, CHURN_INTERVAL_MS, CHURN_CLOSED_S);
	if (err)
		return err;
	usleep(CHURN_INTERVAL_MS * 1000 + 100000);	/* a run has read the config */
	sample(&a);
	t0 = a.t;
	for (int i = 0; i < CHURN_MAKE_S * 1000 / CHURN_BATCH_MS; i++) {
		fill->bss->fill = (struct fill_args){
			.first = made,
			.count = batch,
			.mode = FILL_FLOWS,
			.flags = FLOW_F_PASSIVE_OPEN | FLOW_F_HOST_ACKED | FLOW_F_ESTABLISHED |
				 FLOW_F_FIN_LOCAL | FLOW_F_FIN_REMOTE,
		};
		err = run_prog(fill->progs.sweep_fill, 1, NULL);
		if (err < 0)
			return fail("run sweep_fill", err);
		if (fill->bss->fill.made != batch) {
			fprintf(stderr, "bench_sweeper: churn made %u of %u flows\n",
				fill->bss->fill.made, batch);
			return 1;
		}
		made += batch;
		t0 += CHURN_BATCH_MS / 1000.0;
		while (now_s() < t0)
			usleep(1000);
	}
	t_last = now_s();
	while (flow_count() > 0 && now_s() - t_last < CHURN_CLOSED_S + 3.0 * CHURN_INTERVAL_MS / 1000)
		usleep(10000);
	sample(&b);
	if (flow_count() != 0) {
		fprintf(stderr, "bench_sweeper: churn: %lld flows left\n", (long long)flow_count());
		return 1;
	}
	/* Every slot of these flows has been looked at: the last removal was its entry's last. */
	out->flows = made;
	out->slots_per_flow = (double)(b.slots - a.slots) / made;
	out->ns_per_flow = (double)(b.ns - a.ns) / made;
	out->ns_per_slot = b.slots > a.slots ? (double)(b.ns - a.ns) / (double)(b.slots - a.slots) : 0;
	out->last_gone_s = b.t - t_last;
	return 0;
}

static void json_churn(struct json_writer *jw, const char *name, const struct churn *c)
{
	jw_name(jw, name);
	jw_start_object(jw);
	jw_uint_field(jw, "flows", c->flows);
	jw_double_field(jw, "slots_per_flow", c->slots_per_flow, 2);
	jw_double_field(jw, "ns_per_flow", c->ns_per_flow, 1);
	jw_double_field(jw, "ns_per_slot", c->ns_per_slot, 1);
	jw_double_field(jw, "last_gone_s", c->last_gone_s, 2);
	jw_end_object(jw);
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "max-flows", required_argument, NULL, 'm' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "seconds", required_argument, NULL, 's' },
		{ "churn-rate", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	unsigned long max_flows = ISN_DEFAULT_MAX_FLOWS, interval_ms = 0, seconds = 0;
	unsigned long churn_rate = 20000;
	struct phase idle, full, expiring;
	double walk_empty, walk_full, old_interval_s, expire_s, t0, long_s, closed_s;
	struct churn churn_long, churn_interval;
	struct sample a, b;
	struct sweep_fill *fill, *fill_interval;
	struct sweep_walk *walk;
	struct flow_sweeper sw;
	bool json = false;
	__u64 expired_before;
	int c, err;

	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == 'm')
			max_flows = strtoul(optarg, NULL, 10);
		else if (c == 'i')
			interval_ms = strtoul(optarg, NULL, 10);
		else if (c == 's')
			seconds = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			churn_rate = strtoul(optarg, NULL, 10);
		else if (c == 'j')
			json = true;
		else
			return 2;
	}
	if (max_flows < ISN_SWEEP_BATCH || max_flows > 4 * 1024 * 1024) {
		fprintf(stderr, "bench_sweeper: --max-flows %d-%d\n", ISN_SWEEP_BATCH,
			4 * 1024 * 1024);
		return 2;
	}
	if (churn_rate < 1000 / CHURN_BATCH_MS ||
	    churn_rate * CHURN_MAKE_S > isn_flows_capacity((__u32)max_flows)) {
		fprintf(stderr, "bench_sweeper: --churn-rate %d-%u (%d s of them fit the table)\n",
			1000 / CHURN_BATCH_MS, isn_flows_capacity((__u32)max_flows) / CHURN_MAKE_S,
			CHURN_MAKE_S);
		return 2;
	}
	if (!interval_ms)
		interval_ms = isn_sweep_interval_ms((__u32)max_flows);
	if (!seconds)
		seconds = 2 * interval_ms / 1000 + 1;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return fail("count CPUs", ncpus);

	err = load_dp(max_flows, 0, &fill);
	if (err)
		return err;
	walk = sweep_walk__open();
	if (!walk || share_maps(walk->obj) || sweep_walk__load(walk))
		return fail("load sweep_walk.bpf.o", errno);
	err = sweeper_start((__u32)max_flows, (__u32)interval_ms, ISN_DEFAULT_TIMEOUT_CLOSED);
	if (err)
		return err;
	old_interval_s = (double)((max_flows + 262143) / 262144);

	/* Idle: a first run has found the queues empty, then --seconds of nothing. */
	usleep(100000);
	sample(&a);
	sleep((unsigned int)seconds);
	sample(&b);
	phase_of(&a, &b, &idle);
	walk_empty = walk_ms(walk);

	/* Full: max_flows live flows, made in chunks; measured from then on. */
	for (unsigned long first = 0; first < max_flows; first += FILL_CHUNK) {
		fill->bss->fill = (struct fill_args){
			.first = (__u32)first,
			.count = (__u32)(max_flows - first < FILL_CHUNK ? max_flows - first
									 : FILL_CHUNK),
			.mode = FILL_FLOWS,
			.flags = FLOW_F_PASSIVE_OPEN | FLOW_F_HOST_ACKED | FLOW_F_ESTABLISHED,
		};
		err = run_prog(fill->progs.sweep_fill, 1, NULL);
		if (err < 0)
			return fail("run sweep_fill", err);
	}
	if (flow_count() != (__s64)max_flows) {
		fprintf(stderr, "bench_sweeper: made %lld of %lu flows\n", (long long)flow_count(),
			max_flows);
		return 1;
	}
	sample(&a);
	sleep((unsigned int)seconds);
	sample(&b);
	phase_of(&a, &b, &full);
	long_s = sweeper_get(&sw) ? sw.long_ms / 1000.0 : 0;
	closed_s = sweeper_get(&sw) ? sw.closed_ms / 1000.0 : 0;
	walk_full = walk_ms(walk);

	/* Expiring: every flow past the established timeout at its next look. */
	expired_before = stat_sum(STAT_FLOW_EXPIRED);
	sample(&a);
	t0 = a.t;
	err = config_write((__u32)max_flows, (__u32)interval_ms, 1, ISN_DEFAULT_TIMEOUT_CLOSED);
	if (err)
		return fail("write the config", err);
	while (flow_count() > 0 && now_s() - t0 < 3.0 * interval_ms / 1000 + 5)
		usleep(10000);
	sample(&b);
	expire_s = b.t - t0;
	phase_of(&a, &b, &expiring);
	if (flow_count() != 0 || stat_sum(STAT_FLOW_EXPIRED) - expired_before != max_flows) {
		fprintf(stderr, "bench_sweeper: %lld flows left, %llu expired of %lu\n",
			(long long)flow_count(),
			(unsigned long long)(stat_sum(STAT_FLOW_EXPIRED) - expired_before), max_flows);
		return 1;
	}

	/* Churn, with the long queue, then on an object whose long queue has one slot. */
	err = churn_run(fill, max_flows, churn_rate, &churn_long);
	if (err)
		return err;
	err = load_dp(max_flows, 1, &fill_interval);
	if (err)
		return err;
	err = churn_run(fill_interval, max_flows, churn_rate, &churn_interval);
	if (err)
		return err;

	if (json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "bench", "sweeper");
		jw_uint_field(&jw, "max_flows", max_flows);
		jw_uint_field(&jw, "interval_ms", interval_ms);
		jw_uint_field(&jw, "batch", ISN_SWEEP_BATCH);
		json_phase(&jw, "idle", &idle);
		json_phase(&jw, "full", &full);
		json_phase(&jw, "expiring", &expiring);
		jw_double_field(&jw, "expire_all_s", expire_s, 2);
		jw_double_field(&jw, "long_delay_s", long_s, 1);
		jw_double_field(&jw, "closed_timeout_s", closed_s, 1);
		jw_double_field(&jw, "full_steady_ms_per_s",
				long_s > 0 ? max_flows * full.ns_per_slot / 1e6 / long_s : 0, 4);
		jw_name(&jw, "churn");
		jw_start_object(&jw);
		jw_uint_field(&jw, "rate_per_s", churn_rate);
		jw_uint_field(&jw, "interval_ms", CHURN_INTERVAL_MS);
		jw_uint_field(&jw, "closed_timeout_s", CHURN_CLOSED_S);
		json_churn(&jw, "long_queue", &churn_long);
		json_churn(&jw, "interval_queue_only", &churn_interval);
		jw_end_object(&jw);
		jw_name(&jw, "old_walk");
		jw_start_object(&jw);
		jw_double_field(&jw, "interval_s", old_interval_s, 0);
		jw_double_field(&jw, "empty_ms", walk_empty, 3);
		jw_double_field(&jw, "full_ms", walk_full, 3);
		jw_end_object(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
		return 0;
	}
	printf("sweeper, %lu flows, interval %lu ms, batch %d (per run: bpf_ktime_get_ns around "
	       "its work)\n", max_flows, interval_ms, ISN_SWEEP_BATCH);
	print_phase("idle", &idle);
	print_phase("full", &full);
	if (long_s > 0)
		printf("            (each flow looked at once, then waiting in the long queue: a look "
		       "per %.1f s, %.4f ms/s at %.1f ns/slot; closed timeout adapted to %.1f s)\n",
		       long_s, max_flows * full.ns_per_slot / 1e6 / long_s, full.ns_per_slot, closed_s);
	print_phase("expiring", &expiring);
	printf("  all %lu flows gone %.2f s after their timeout was cut to 1 s\n", max_flows,
	       expire_s);
	printf("churn: %lu closed connections a second for %d s (interval %d ms, closed timeout "
	       "%d s), until all gone\n", churn_rate, CHURN_MAKE_S, CHURN_INTERVAL_MS,
	       CHURN_CLOSED_S);
	printf("  long queue            %5.2f slots/flow  %7.1f ns/flow  %6.1f ns/slot  last gone "
	       "%.2f s after the last made\n", churn_long.slots_per_flow, churn_long.ns_per_flow,
	       churn_long.ns_per_slot, churn_long.last_gone_s);
	printf("  interval queue only   %5.2f slots/flow  %7.1f ns/flow  %6.1f ns/slot  last gone "
	       "%.2f s after the last made\n", churn_interval.slots_per_flow,
	       churn_interval.ns_per_flow, churn_interval.ns_per_slot, churn_interval.last_gone_s);
	printf("before (the walk of both tables, once per %.0f s, one softirq run each):\n",
	       old_interval_s);
	printf("  idle      %8.4f ms/s  one run of %.3f ms\n", walk_empty / old_interval_s,
	       walk_empty);
	printf("  full      %8.4f ms/s  one run of %.3f ms\n", walk_full / old_interval_s,
	       walk_full);
	return 0;
}
