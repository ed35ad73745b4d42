// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench, the resend tick (bpf/resend.h): what a run of
 * isnguard_tc_tick costs with the resend table (isn_syn_resend,
 * SYNPROXY_RESEND_MAX records) empty, half full and full of flows whose
 * next resend is not due, beside a walk of the whole table
 * (tests/bpf/resend_walk.bpf.c) on the same records; and, with every one
 * due, how many runs resend them all and what each costs.
 *
 * The datapath object is loaded with the tick program alone, its flows and
 * records made by tests/bpf/resend_fill.bpf.c as the translate path makes
 * them, each level on a fresh load. Each run is a BPF_PROG_TEST_RUN of the
 * tick on its carrier, an IGMP query, timed by the kernel (the run's wall
 * time, 1 ns resolution); the median of --runs. In a network namespace of
 * its own: the resent SYNs go in at its lo, and end there.
 *
 * Usage: bench_resend [--runs N] [--json]
 */
#include <errno.h>
#include <getopt.h>
#include <linux/types.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "isnguard.h"
#include "isnguard.skel.h"
#include "json_writer.h"
#include "bpf_run.h"
#include "map_share.h"
#include "resend_fill.h"
#include "resend_fill.skel.h"
#include "resend_walk.skel.h"

/* Far more than a table's worth of runs: a tick that never ends its backlog. */
#define DRAIN_RUNS_MAX 4096
#define DUE_AGE_NS 1500000000ULL	/* past the first resend (1 s), before the second (3 s) */

struct level {
	__u32 records;
	double tick_us;		/* a run, none due: the median */
	double walk_us;		/* a walk of the table, the median */
	__u32 drain_runs;	/* all due: runs until every one was resent */
	__u64 first_run_resent;
	double mean_run_us;
	double longest_run_us;
	__u32 runs_over_1ms;
	double ns_per_resend;	/* all due: the runs' time over the resends */
};

static struct isnguard *dp;
static struct resend_fill *fill;
static struct resend_walk *walk;
static int ncpus;

static int fail(const char *what, int err)
{
	fprintf(stderr, "bench_resend: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static __u64 stat_sum(enum isn_stat stat)
{
	return percpu_u64_sum(bpf_map__fd(dp->maps.isn_stats), stat, sizeof(__u64), 0);
}

/* The tick's carrier: an IGMPv2 general query from 0.0.0.0 to 224.0.0.1, as a bridge's querier sends. */
static size_t igmp_query(unsigned char *buf)
{
	static const unsigned char frame[] = {
		0x01, 0x00, 0x5e, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0xe0, 0x00, 0x00, 0x01,
		0x11, 0x64, 0xee, 0x9b, 0x00, 0x00, 0x00, 0x00,
	};

	memcpy(buf, frame, sizeof(frame));
	return sizeof(frame);
}

static int run_prog(const struct bpf_program *prog, __u32 *duration)
{
	unsigned char frame[64] = { 0 }, out[256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);

	opts.data_size_in = (__u32)igmp_query(frame);
	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts))
		return -errno;
	if (duration)
		*duration = opts.duration;
	return (int)opts.retval;
}

/* The median of runs runs of prog, in us; -1 when one failed. */
static double median_us(const struct bpf_program *prog, int runs)
{
	double us[runs], t;
	__u32 duration;

	for (int i = 0; i < runs; i++) {
		if (run_prog(prog, &duration) < 0)
			return -1;
		us[i] = (double)duration / 1e3;
		for (int j = i; j > 0 && us[j] < us[j - 1]; j--) {
			t = us[j];
			us[j] = us[j - 1];
			us[j - 1] = t;
		}
	}
	return us[runs / 2];
}

static void unload(void)
{
	resend_walk__destroy(walk);
	resend_fill__destroy(fill);
	isnguard__destroy(dp);
	walk = NULL;
	fill = NULL;
	dp = NULL;
}

/* A fresh load of the tick, the fill and the walk on its maps. 0 or an exit code. */
static int load(void)
{
	struct bpf_program *prog;
	int err;

	unload();
	dp = isnguard__open();
	if (!dp)
		return fail("open isnguard.bpf.o", errno);
	bpf_object__for_each_program(prog, dp->obj)
		bpf_program__set_autoload(prog, prog == dp->progs.isnguard_tc_tick);
	err = isnguard__load(dp);
	if (err)
		return fail("load isnguard.bpf.o", err);
	fill = resend_fill__open();
	if (!fill || map_share(fill->obj, dp->obj, NULL) || resend_fill__load(fill))
		return fail("load resend_fill.bpf.o", errno);
	walk = resend_walk__open();
	if (!walk || map_share(walk->obj, dp->obj, NULL) || resend_walk__load(walk))
		return fail("load resend_walk.bpf.o", errno);
	return 0;
}

/* count flows whose first SYN went age_ns ago, each with its record. 0 or an exit code. */
static int make_flows(__u32 count, __u64 age_ns)
{
	int err;

	fill->bss->fill = (struct resend_fill_args){ .count = count, .age_ns = age_ns };
	err = run_prog(fill->progs.resend_fill, NULL);
	if (err < 0)
		return fail("run resend_fill", err);
	if (fill->bss->fill.made != count || fill->bss->fill.untracked) {
		fprintf(stderr, "bench_resend: made %u of %u flows, %u without a record\n",
			fill->bss->fill.made, count, fill->bss->fill.untracked);
		return 1;
	}
	return 0;
}

static int measure(__u32 records, int runs, struct level *l)
{
	__u64 resent0, resent, before;
	double total_ns = 0;
	__u32 duration;
	int err;

	memset(l, 0, sizeof(*l));
	l->records = records;
	err = load() ?: make_flows(records, 0);
	if (err)
		return err;
	resent0 = stat_sum(STAT_PROXY_SYN_RESENT);
	l->tick_us = median_us(dp->progs.isnguard_tc_tick, runs);
	l->walk_us = median_us(walk->progs.resend_walk, runs);
	if (l->tick_us < 0 || l->walk_us < 0)
		return fail("run the tick or the walk", errno);
	if (stat_sum(STAT_PROXY_SYN_RESENT) != resent0) {
		fprintf(stderr, "bench_resend: resends with none due\n");
		return 1;
	}
	if (!records)
		return 0;

	err = load() ?: make_flows(records, DUE_AGE_NS);
	if (err)
		return err;
	resent0 = stat_sum(STAT_PROXY_SYN_RESENT);
	for (resent = 0; resent < records && l->drain_runs < DRAIN_RUNS_MAX; l->drain_runs++) {
		before = stat_sum(STAT_PROXY_SYN_RESENT);
		if (run_prog(dp->progs.isnguard_tc_tick, &duration) < 0)
			return fail("run the tick", errno);
		resent = stat_sum(STAT_PROXY_SYN_RESENT) - resent0;
		if (!l->drain_runs)
			l->first_run_resent = resent;
		if (resent == before - resent0)
			break;	/* nothing more: a run that sends none ends it */
		total_ns += duration;
		if (duration / 1e3 > l->longest_run_us)
			l->longest_run_us = duration / 1e3;
		l->runs_over_1ms += duration > 1000000;
	}
	if (resent != records) {
		fprintf(stderr, "bench_resend: %llu of %u resent in %u runs\n",
			(unsigned long long)resent, records, l->drain_runs);
		return 1;
	}
	l->ns_per_resend = total_ns / (double)resent;
	l->mean_run_us = total_ns / 1e3 / l->drain_runs;
	return 0;
}

/* lo up in a network namespace of the bench's own. */
static int netns_own(void)
{
	struct ifreq ifr = { 0 };
	int fd, err = 0;

	if (unshare(CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			err = -errno;
	} else {
		err = -errno;
	}
	close(fd);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	static const __u32 fills[] = { 0, SYNPROXY_RESEND_MAX / 2, SYNPROXY_RESEND_MAX };
	struct level levels[sizeof(fills) / sizeof(fills[0])];
	bool json = false;
	int c, err, runs = 9;

	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == 'r')
			runs = atoi(optarg);
		else if (c == 'j')
			json = true;
		else
			return 2;
	}
	if (runs < 1 || runs > 1000) {
		fprintf(stderr, "bench_resend: --runs 1-1000\n");
		return 2;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return fail("count CPUs", ncpus);
	err = netns_own();
	if (err)
		return fail("a network namespace of its own", err);
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
		err = measure(fills[i], runs, &levels[i]);
		if (err)
			return err;
	}
	unload();

	if (json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "bench", "resend");
		jw_uint_field(&jw, "table", SYNPROXY_RESEND_MAX);
		jw_name(&jw, "levels");
		jw_start_array(&jw);
		for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
			const struct level *l = &levels[i];

			jw_start_object(&jw);
			jw_uint_field(&jw, "records", l->records);
			jw_double_field(&jw, "tick_none_due_us", l->tick_us, 2);
			jw_double_field(&jw, "tick_ns_per_record",
					l->records ? l->tick_us * 1e3 / l->records : 0, 1);
			jw_double_field(&jw, "walk_us", l->walk_us, 2);
			jw_double_field(&jw, "walk_ns_per_record",
					l->records ? l->walk_us * 1e3 / l->records : 0, 1);
			jw_uint_field(&jw, "all_due_runs", l->drain_runs);
			jw_uint_field(&jw, "all_due_first_run_resent", l->first_run_resent);
			jw_double_field(&jw, "all_due_mean_run_us", l->mean_run_us, 1);
			jw_double_field(&jw, "all_due_longest_run_us", l->longest_run_us, 1);
			jw_uint_field(&jw, "all_due_runs_over_1ms", l->runs_over_1ms);
			jw_double_field(&jw, "all_due_ns_per_resend", l->ns_per_resend, 1);
			jw_end_object(&jw);
		}
		jw_end_array(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
		return 0;
	}
	printf("resend tick, table of %d records (per run: BPF_PROG_TEST_RUN's time, median of %d)\n",
	       SYNPROXY_RESEND_MAX, runs);
	printf("  %8s  %22s  %22s  %s\n", "records", "tick, none due", "walk of the table",
	       "all due: runs, first run's resends, mean run, longest, over 1 ms, per resend");
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
		const struct level *l = &levels[i];

		printf("  %8u  %9.2f us %6.1f ns/rec  %9.2f us %6.1f ns/rec  %5u runs %5llu "
		       "%7.1f us %7.1f us %3u %7.1f ns\n",
		       l->records, l->tick_us, l->records ? l->tick_us * 1e3 / l->records : 0,
		       l->walk_us, l->records ? l->walk_us * 1e3 / l->records : 0, l->drain_runs,
		       (unsigned long long)l->first_run_resent, l->mean_run_us, l->longest_run_us,
		       l->runs_over_1ms, l->ns_per_resend);
	}
	return 0;
}
