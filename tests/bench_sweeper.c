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
 * - full: --max-flows live flows (tests/bpf/sweep_fill.bpf.c), one interval
 *   after they were made, for --seconds; each is looked at once an interval;
 * - expiring: the established timeout cut to 1 s, until every flow is gone
 *   (within an interval: each is removed at its next look).
 * The baseline, tests/bpf/sweep_walk.bpf.c, is the old timer's work: both
 * tables walked whole, run through BPF_PROG_TEST_RUN on the empty and on
 * the full tables; the old timer did it once a second per 256 Ki of
 * --max-flows (ms/s = one walk / that interval).
 *
 * Usage: bench_sweeper [--max-flows N] [--interval-ms MS] [--seconds S] [--json]
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
#include "sweep_fill.h"
#include "sweep_fill.skel.h"
#include "sweep_walk.skel.h"

#define FILL_CHUNK 65536

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
	__u64 values[ncpus], sum = 0;
	__u32 key = stat;

	if (bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_stats), &key, values))
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += values[i];
	return sum;
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
	struct bpf_map *map, *ours;

	bpf_object__for_each_map(map, obj) {
		if (bpf_map__is_internal(map))
			continue;
		ours = bpf_object__find_map_by_name(dp->obj, bpf_map__name(map));
		if (ours && bpf_map__reuse_fd(map, bpf_map__fd(ours)))
			return -errno;
	}
	return 0;
}

static int config_write(__u32 max_flows, __u32 interval_ms, __u32 established_s)
{
	struct isn_config cfg = {
		.hash = ISN_HASH_SIPHASH,
		.timeout_opening = ISN_DEFAULT_TIMEOUT_OPENING,
		.timeout_established = established_s,
		.timeout_closing = ISN_DEFAULT_TIMEOUT_CLOSING,
		.timeout_closed = ISN_DEFAULT_TIMEOUT_CLOSED,
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

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "max-flows", required_argument, NULL, 'm' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "seconds", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	unsigned long max_flows = ISN_DEFAULT_MAX_FLOWS, interval_ms = 0, seconds = 0;
	struct phase idle, full, expiring;
	double walk_empty, walk_full, old_interval_s, expire_s, t0;
	struct sample a, b;
	struct sweep_fill *fill;
	struct sweep_walk *walk;
	struct bpf_program *prog;
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
	if (!interval_ms)
		interval_ms = isn_sweep_interval_ms((__u32)max_flows);
	if (!seconds)
		seconds = 2 * interval_ms / 1000 + 1;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return fail("count CPUs", ncpus);

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
	err = isnguard__load(dp);
	if (err)
		return fail("load isnguard.bpf.o", err);
	fill = sweep_fill__open();
	if (!fill || share_maps(fill->obj) || sweep_fill__load(fill))
		return fail("load sweep_fill.bpf.o", errno);
	walk = sweep_walk__open();
	if (!walk || share_maps(walk->obj) || sweep_walk__load(walk))
		return fail("load sweep_walk.bpf.o", errno);
	err = config_write((__u32)max_flows, (__u32)interval_ms, ISN_DEFAULT_TIMEOUT_ESTABLISHED);
	if (err)
		return fail("write the config", err);
	err = run_prog(dp->progs.isnguard_sweeper, 1, NULL);
	if (err)
		return fail("start the sweeper (isnguard_sweeper)", err < 0 ? err : EIO);
	old_interval_s = (double)((max_flows + 262143) / 262144);

	/* Idle: a first run has found the queues empty, then --seconds of nothing. */
	usleep(100000);
	sample(&a);
	sleep((unsigned int)seconds);
	sample(&b);
	phase_of(&a, &b, &idle);
	walk_empty = walk_ms(walk);

	/* Full: max_flows live flows, made in chunks; measured from one interval on. */
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
	usleep((useconds_t)(interval_ms * 1000 + 200000));
	sample(&a);
	sleep((unsigned int)seconds);
	sample(&b);
	phase_of(&a, &b, &full);
	walk_full = walk_ms(walk);

	/* Expiring: every flow past the established timeout at its next look. */
	expired_before = stat_sum(STAT_FLOW_EXPIRED);
	sample(&a);
	t0 = a.t;
	err = config_write((__u32)max_flows, (__u32)interval_ms, 1);
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
	print_phase("expiring", &expiring);
	printf("  all %lu flows gone %.2f s after their timeout was cut to 1 s\n", max_flows,
	       expire_s);
	printf("before (the walk of both tables, once per %.0f s, one softirq run each):\n",
	       old_interval_s);
	printf("  idle      %8.4f ms/s  one run of %.3f ms\n", walk_empty / old_interval_s,
	       walk_empty);
	printf("  full      %8.4f ms/s  one run of %.3f ms\n", walk_full / old_interval_s,
	       walk_full);
	return 0;
}
