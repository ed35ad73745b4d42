// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard stats: the datapath counters summed over CPUs, once or every interval. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "maps.h"
#include "pinned.h"
#include "policy.h"

#define STAT_NAME(name, text) [name] = text,
static const char *const stat_names[STAT_COUNT] = { ISNGUARD_STATS(STAT_NAME) };
#undef STAT_NAME

/* Bounds of --watch: fast enough for a test, slow enough to stay readable. */
#define WATCH_MIN_S 0.1
#define WATCH_MAX_S 86400.0
#define WATCH_DEFAULT_S 1.0

struct stats_params {
	bool json;
	bool watch;
	double interval_s;
};

/* The maps a sample reads, opened once. */
struct stats_source {
	int stats_fd;
	struct flow_tables flows;
	__u32 flows_max;
	int ncpus;
	__u64 *per_cpu;		/* one lookup's worth: ncpus values of 8 bytes */
};

struct stats_sample {
	__u64 counters[STAT_COUNT];
	__u64 flows_present;
	__u64 flows_max;
	__u64 buckets_held;	/* the SYN policy's source buckets (isn_syn_buckets) */
	__u64 buckets_spending;	/* of them, not full */
	__u64 buckets_max;
	double taken_s;		/* CLOCK_MONOTONIC */
};

static bool is_number(const char *text, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(text, &end);
	return !errno && end != text && !*end && isfinite(*value);
}

/*
 * getopt_long takes an optional argument only when attached (--watch=2), so
 * "--watch 2" leaves 2 as the next word: a number there is the interval.
 */
static int watch_option(struct cli_parser *p, const struct cli_option *o, int argc,
			char **argv, const char *arg)
{
	struct stats_params *prm = o->dest;
	double seconds;

	prm->watch = true;
	if (!arg && optind < argc && is_number(argv[optind], &seconds))
		arg = argv[optind++];
	if (!arg)
		return 0;
	if (!is_number(arg, &seconds) || seconds < WATCH_MIN_S || seconds > WATCH_MAX_S)
		return cli_usage_error(p, "bad --watch '%s': expected seconds from %.1f to %.0f",
				       arg, WATCH_MIN_S, WATCH_MAX_S);
	prm->interval_s = seconds;
	return 0;
}

static struct stats_params stats_prm = { .interval_s = WATCH_DEFAULT_S };

static const struct cli_option stats_options[] = {
	CLI_JSON_ROW(&stats_prm.json, "print one JSON object (one per line with --watch)"),
	CLI_OPT_CUSTOM("watch", optional_argument, 'w', "[SECONDS]", &stats_prm, watch_option,
		       "print again every SECONDS (default 1) with per-second deltas, until Ctrl-C"),
	CLI_HELP_ROW,
	{ 0 },
};

static int parse_stats_args(struct cli_parser *p, int argc, char **argv)
{
	int err = cli_parse(p, argc, argv);

	if (err)
		return err;
	if (optind < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stats_source_close(struct stats_source *src)
{
	if (src->stats_fd >= 0)
		close(src->stats_fd);
	flow_tables_close(&src->flows);
	free(src->per_cpu);
}

/* --max-flows from the config, else fallback (the connections' table's size). */
static __u32 configured_max_flows(__u32 fallback)
{
	int fd = pinned_map_open(ISN_MAP_CONFIG);
	struct isn_config cfg;
	__u32 zero = 0, max_flows = fallback;

	if (fd < 0)
		return fallback;
	if (!bpf_map_lookup_elem(fd, &zero, &cfg) && cfg.max_flows)
		max_flows = cfg.max_flows;
	close(fd);
	return max_flows;
}

static int stats_source_open(struct stats_source *src)
{
	int err;

	*src = (struct stats_source){ .stats_fd = -1, .flows = { .fd = { -1, -1 } } };
	src->stats_fd = map_open_checked("stats", &isn_stats_layout, NULL);
	if (src->stats_fd < 0)
		return src->stats_fd;
	err = flow_tables_open("stats", &src->flows);
	if (err)
		return err;
	src->flows_max = configured_max_flows(src->flows.max_entries[0]);
	src->ncpus = libbpf_num_possible_cpus();
	if (src->ncpus < 0) {
		cli_error("stats: count possible CPUs: %s", strerror(-src->ncpus));
		return src->ncpus;
	}
	/* Per-CPU values come as ncpus slots of round_up(value_size, 8) = 8 bytes. */
	src->per_cpu = calloc((size_t)src->ncpus, sizeof(__u64));
	if (!src->per_cpu) {
		cli_error("stats: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

static int read_counter(const struct stats_source *src, __u32 index, __u64 *total)
{
	if (bpf_map_lookup_elem(src->stats_fd, &index, src->per_cpu))
		return -errno;
	*total = 0;
	for (int cpu = 0; cpu < src->ncpus; cpu++)
		*total += src->per_cpu[cpu];
	return 0;
}

static int read_sample(const struct stats_source *src, struct stats_sample *s)
{
	uint32_t max_buckets;
	size_t present, spending;
	int err;

	s->taken_s = monotonic_s();
	for (__u32 i = 0; i < STAT_COUNT; i++) {
		err = read_counter(src, i, &s->counters[i]);
		if (err) {
			cli_error("stats: read %s: %s", stat_names[i], strerror(-err));
			return err;
		}
	}
	err = flow_tables_count(&src->flows, &present);
	if (err) {
		cli_error("stats: count the flow tables: %s", strerror(-err));
		return err;
	}
	s->flows_present = present;
	s->flows_max = src->flows_max;
	/* The source buckets in use, where the state has them (a build's before it: none). */
	err = policy_bucket_fill(&present, &spending, &max_buckets);
	if (err && err != -ENOENT) {
		cli_error("stats: count %s: %s", ISN_MAP_SYN_BUCKETS, strerror(-err));
		return err;
	}
	s->buckets_held = err ? 0 : present;
	s->buckets_spending = err ? 0 : spending;
	s->buckets_max = err ? 0 : max_buckets;
	return 0;
}

/*
 * The LRU flow table evicts its least recently used entry without telling
 * anyone when a new flow needs room, so no counter can see it. A flow that
 * was created, has not expired by its timer nor been removed by the
 * datapath (a TCP-MD5/AO SYN on its tuple), and is no longer present, was
 * evicted. The counters and the table are read a moment apart, so this is an
 * estimate and is clamped at 0.
 */
static __u64 flows_evicted(const struct stats_sample *s)
{
	__u64 gone_without_eviction = s->counters[STAT_FLOW_EXPIRED] +
				      s->counters[STAT_FLOW_REMOVED] + s->flows_present;
	__u64 created = s->counters[STAT_FLOW_CREATED];

	return created > gone_without_eviction ? created - gone_without_eviction : 0;
}

/* Counters only grow; a smaller value means a reset, which counts as no change. */
static __u64 counter_delta(const struct stats_sample *now, const struct stats_sample *prev,
			   enum isn_stat stat)
{
	return now->counters[stat] >= prev->counters[stat] ?
	       now->counters[stat] - prev->counters[stat] : 0;
}

static int name_width(void)
{
	size_t width = strlen("flows_present");

	for (int i = 0; i < STAT_COUNT; i++)
		if (strlen(stat_names[i]) > width)
			width = strlen(stat_names[i]);
	return (int)width;
}

static int digits(__u64 value)
{
	int n = 1;

	while (value >= 10) {
		value /= 10;
		n++;
	}
	return n;
}

/* Right-aligned values keep the delta column of --watch straight. */
static int value_width(const struct stats_sample *s)
{
	int width = digits(s->flows_max);

	for (int i = 0; i < STAT_COUNT; i++)
		if (digits(s->counters[i]) > width)
			width = digits(s->counters[i]);
	return width;
}

/* prev is NULL for the first sample, which has nothing to take deltas against. */
static void print_sample_text(const struct stats_sample *now, const struct stats_sample *prev)
{
	double interval_s = prev ? now->taken_s - prev->taken_s : 0;
	int nw = name_width(), vw = value_width(now);

	for (int i = 0; i < STAT_COUNT; i++) {
		printf("%-*s  %*llu", nw, stat_names[i], vw, (unsigned long long)now->counters[i]);
		if (prev && interval_s > 0)
			printf("  (+%.0f/s)", (double)counter_delta(now, prev, i) / interval_s);
		putchar('\n');
	}
	printf("%-*s  %*llu\n", nw, "flows_present", vw, (unsigned long long)now->flows_present);
	printf("%-*s  %*llu\n", nw, "flows_max", vw, (unsigned long long)now->flows_max);
	printf("%-*s  %*llu\n", nw, "flow_evicted", vw, (unsigned long long)flows_evicted(now));
	if (now->buckets_max) {		/* a state with the SYN policy's buckets */
		printf("%-*s  %*llu\n", nw, "source_buckets", vw,
		       (unsigned long long)now->buckets_held);
		printf("%-*s  %*llu\n", nw, "source_buckets_spending", vw,
		       (unsigned long long)now->buckets_spending);
		printf("%-*s  %*llu\n", nw, "source_buckets_max", vw,
		       (unsigned long long)now->buckets_max);
	}
	fflush(stdout);
}

static void print_sample_json(const struct stats_sample *now, const struct stats_sample *prev)
{
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_name(&jw, "counters");
	jw_start_object(&jw);
	for (int i = 0; i < STAT_COUNT; i++)
		jw_uint_field(&jw, stat_names[i], now->counters[i]);
	jw_end_object(&jw);
	jw_uint_field(&jw, "flows_present", now->flows_present);
	jw_uint_field(&jw, "flows_max", now->flows_max);
	jw_uint_field(&jw, "flow_evicted", flows_evicted(now));
	if (now->buckets_max) {
		jw_uint_field(&jw, "source_buckets", now->buckets_held);
		jw_uint_field(&jw, "source_buckets_spending", now->buckets_spending);
		jw_uint_field(&jw, "source_buckets_max", now->buckets_max);
	}
	if (prev) {
		jw_double_field(&jw, "interval_s", now->taken_s - prev->taken_s, 3);
		jw_name(&jw, "deltas");
		jw_start_object(&jw);
		for (int i = 0; i < STAT_COUNT; i++)
			jw_uint_field(&jw, stat_names[i], counter_delta(now, prev, i));
		jw_end_object(&jw);
	}
	jw_end_object(&jw);
	jw_finish(&jw);
}

static void print_sample(const struct stats_params *prm, const struct stats_sample *now,
			 const struct stats_sample *prev)
{
	if (prm->json)
		print_sample_json(now, prev);
	else
		print_sample_text(now, prev);
}

/*
 * Sleeps until the deadline; true when SIGINT or SIGTERM came instead. The
 * signals stay blocked and are taken with sigtimedwait, so one arriving
 * while a sample is printed is not lost between a check and a sleep.
 */
static bool wait_for_stop(const sigset_t *stop, double deadline_s)
{
	double remaining_s = deadline_s - monotonic_s();
	time_t whole_s;
	struct timespec timeout;

	if (remaining_s < 0)
		remaining_s = 0;
	whole_s = (time_t)remaining_s;
	timeout = (struct timespec){
		.tv_sec = whole_s,
		.tv_nsec = (long)((remaining_s - (double)whole_s) * 1e9),
	};
	return sigtimedwait(stop, NULL, &timeout) > 0;
}

/*
 * Samples fall on fixed deadlines, so the time a sample takes to read (the
 * flow count of a full table is a fraction of a second) does not stretch
 * the interval. A sample that overruns its slot skips the missed ones.
 */
static double next_deadline(double deadline_s, double interval_s)
{
	double now_s = monotonic_s();

	deadline_s += interval_s;
	while (deadline_s < now_s)
		deadline_s += interval_s;
	return deadline_s;
}

static int watch_stats(const struct stats_params *prm, const struct stats_source *src)
{
	struct stats_sample samples[2], *now = &samples[0], *prev = &samples[1], *swap;
	double deadline_s = monotonic_s();
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);

	if (read_sample(src, prev))
		return EXIT_RUNTIME;
	print_sample(prm, prev, NULL);
	for (;;) {
		deadline_s = next_deadline(deadline_s, prm->interval_s);
		if (wait_for_stop(&stop, deadline_s))
			return 0;
		if (read_sample(src, now))
			return EXIT_RUNTIME;
		if (!prm->json)
			putchar('\n');
		print_sample(prm, now, prev);
		swap = prev;
		prev = now;
		now = swap;
	}
}

static int show_stats(const struct stats_params *prm, const struct stats_source *src)
{
	struct stats_sample sample;

	if (prm->watch)
		return watch_stats(prm, src);
	if (read_sample(src, &sample))
		return EXIT_RUNTIME;
	print_sample(prm, &sample, NULL);
	return 0;
}

int do_stats(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "stats",
		.args = "",
		.summary = "Print the datapath counters, summed over CPUs, and the flow table's fill:\n"
			   "flows_present, flows_max, and flow_evicted (flows the full LRU table\n"
			   "dropped: created - expired - present).",
		.options = stats_options,
	};
	struct stats_params *prm = &stats_prm;
	struct stats_source src;
	int err;

	stats_prm = (struct stats_params){ .interval_s = WATCH_DEFAULT_S };
	err = parse_stats_args(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	if (stats_source_open(&src)) {
		stats_source_close(&src);
		return EXIT_RUNTIME;
	}
	err = show_stats(prm, &src);
	stats_source_close(&src);
	return err;
}
