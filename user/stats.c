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
#include "counters.h"
#include "pinned.h"

/* Bounds of --watch: fast enough for a test, slow enough to stay readable. */
#define WATCH_MIN_S 0.1
#define WATCH_MAX_S 86400.0
#define WATCH_DEFAULT_S 1.0

struct stats_params {
	bool json;
	bool watch;
	bool all;
	double interval_s;
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
	CLI_OPT_FLAG("all", 'a', &stats_prm.all, "show the counters at 0 too (JSON always has them)"),
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

/* Counters only grow; a smaller value means a reset, which counts as no change. */
static __u64 counter_delta(const struct stats_sample *now, const struct stats_sample *prev,
			   enum isn_stat stat)
{
	return now->counters[stat] >= prev->counters[stat] ?
	       now->counters[stat] - prev->counters[stat] : 0;
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

/*
 * The derived values a section ends with, always shown: the flow table's,
 * and the source policy's bucket table where the state has one.
 */
struct derived_value {
	enum counter_section section;
	const char *name;
	__u64 value;
};

#define DERIVED_MAX 6

static int derived_values(const struct stats_sample *s, struct derived_value out[DERIVED_MAX])
{
	int n = 0;

	out[n++] = (struct derived_value){ SECTION_FLOWS, "flows_present", s->flows_present };
	out[n++] = (struct derived_value){ SECTION_FLOWS, "flows_max", s->flows_max };
	out[n++] = (struct derived_value){ SECTION_FLOWS, "flow_evicted", stats_flows_evicted(s) };
	if (!s->buckets_max)
		return n;
	out[n++] = (struct derived_value){ SECTION_SYN_POLICY, "source_buckets", s->buckets_held };
	out[n++] = (struct derived_value){ SECTION_SYN_POLICY, "source_buckets_spending",
					   s->buckets_spending };
	out[n++] = (struct derived_value){ SECTION_SYN_POLICY, "source_buckets_max",
					   s->buckets_max };
	return n;
}

static bool shown(const struct stats_params *prm, const struct counter_desc *d,
		  const struct stats_sample *s)
{
	return d->section != SECTION_RETIRED && (prm->all || s->counters[d->stat]);
}

/* RFC 3339 in UTC, to the millisecond: "2026-06-05T10:11:12.345Z". */
static void format_time(double wall_s, char *buf, size_t len)
{
	time_t whole = (time_t)wall_s;
	unsigned int ms = (unsigned int)((wall_s - (double)whole) * 1000) % 1000;
	struct tm tm;
	char date[24];

	gmtime_r(&whole, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%.19s.%03uZ", date, ms);
}

/*
 * One block: a section's title, then its counters indented, names and
 * right-aligned values in columns that keep the delta column of --watch
 * straight. prev is NULL for the first sample, which has nothing to take
 * deltas against; with_time heads the block with its timestamp (--watch).
 */
static void print_sample_text(const struct stats_params *prm, const struct stats_sample *now,
			      const struct stats_sample *prev, bool with_time)
{
	double interval_s = prev ? now->taken_s - prev->taken_s : 0;
	struct derived_value derived[DERIVED_MAX];
	int nw = 0, vw = 0, hidden = 0, nderived = derived_values(now, derived);
	char when[40];

	for (int i = 0; i < nderived; i++) {
		nw = nw > (int)strlen(derived[i].name) ? nw : (int)strlen(derived[i].name);
		vw = vw > digits(derived[i].value) ? vw : digits(derived[i].value);
	}
	for (int i = 0; i < STAT_COUNT; i++) {
		const struct counter_desc *d = &counter_descs[i];

		if (!shown(prm, d, now)) {
			hidden += d->section != SECTION_RETIRED;
			continue;
		}
		nw = nw > (int)strlen(counter_name(d->stat)) ? nw : (int)strlen(counter_name(d->stat));
		vw = vw > digits(now->counters[d->stat]) ? vw : digits(now->counters[d->stat]);
	}
	if (with_time) {
		format_time(now->wall_s, when, sizeof(when));
		printf("== %s\n", when);
	}
	for (int sec = SECTION_RETIRED + 1; sec < SECTION_COUNT; sec++) {
		bool titled = false;

		for (int i = 0; i < STAT_COUNT; i++) {
			const struct counter_desc *d = &counter_descs[i];

			if (d->section != (enum counter_section)sec || !shown(prm, d, now))
				continue;
			if (!titled)
				printf("%s\n", counter_section_title(d->section));
			titled = true;
			printf("  %-*s  %*llu", nw, counter_name(d->stat), vw,
			       (unsigned long long)now->counters[d->stat]);
			if (prev && interval_s > 0)
				printf("  (+%.0f/s)",
				       (double)counter_delta(now, prev, d->stat) / interval_s);
			putchar('\n');
		}
		for (int i = 0; i < nderived; i++) {
			if (derived[i].section != (enum counter_section)sec)
				continue;
			if (!titled)
				printf("%s\n", counter_section_title(derived[i].section));
			titled = true;
			printf("  %-*s  %*llu\n", nw, derived[i].name, vw,
			       (unsigned long long)derived[i].value);
		}
	}
	if (hidden)
		printf("(%d counters at 0 not shown: --all shows them)\n", hidden);
	fflush(stdout);
}

/*
 * Each interface's counters (isn_stats' slots, user/statslots.c); "" for
 * those counted by no interface's load, when there are any.
 */
static void print_interfaces_json(struct json_writer *jw, const struct stats_sample *now)
{
	jw_name(jw, "interfaces");
	jw_start_array(jw);
	for (int slot = 0; slot < ISN_STATS_SLOTS; slot++) {
		if (!stats_slot_shown(now, slot))
			continue;
		jw_start_object(jw);
		jw_string_field(jw, "interface", now->slot_owner[slot].ifname);
		jw_uint_field(jw, "netns_inode", now->slot_owner[slot].owner.netns_ino);
		jw_name(jw, "counters");
		jw_start_object(jw);
		for (int i = 0; i < STAT_COUNT; i++)
			if (counter_descs[i].section != SECTION_RETIRED)
				jw_uint_field(jw, counter_name(counter_descs[i].stat),
					      now->slot_counters[slot][counter_descs[i].stat]);
		jw_end_object(jw);
		jw_end_object(jw);
	}
	jw_end_array(jw);
}

/* JSON has every counter, 0 or not, so a reader never tells a 0 from a missing key. */
static void print_sample_json(const struct stats_sample *now, const struct stats_sample *prev)
{
	struct derived_value derived[DERIVED_MAX];
	int nderived = derived_values(now, derived);
	struct json_writer jw;
	char when[40];

	format_time(now->wall_s, when, sizeof(when));
	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "time", when);
	jw_name(&jw, "counters");
	jw_start_object(&jw);
	for (int i = 0; i < STAT_COUNT; i++)
		if (counter_descs[i].section != SECTION_RETIRED)
			jw_uint_field(&jw, counter_name(counter_descs[i].stat),
				      now->counters[counter_descs[i].stat]);
	jw_end_object(&jw);
	for (int i = 0; i < nderived; i++)
		jw_uint_field(&jw, derived[i].name, derived[i].value);
	if (stats_per_interface(now))
		print_interfaces_json(&jw, now);
	if (prev) {
		jw_double_field(&jw, "interval_s", now->taken_s - prev->taken_s, 3);
		jw_name(&jw, "deltas");
		jw_start_object(&jw);
		for (int i = 0; i < STAT_COUNT; i++)
			if (counter_descs[i].section != SECTION_RETIRED)
				jw_uint_field(&jw, counter_name(counter_descs[i].stat),
					      counter_delta(now, prev, counter_descs[i].stat));
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
		print_sample_text(prm, now, prev, prm->watch);
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

	if (stats_read_sample("stats", src, prev))
		return EXIT_RUNTIME;
	print_sample(prm, prev, NULL);
	for (;;) {
		deadline_s = next_deadline(deadline_s, prm->interval_s);
		if (wait_for_stop(&stop, deadline_s))
			return 0;
		if (stats_read_sample("stats", src, now))
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
	if (stats_read_sample("stats", src, &sample))
		return EXIT_RUNTIME;
	print_sample(prm, &sample, NULL);
	return 0;
}

int do_stats(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "stats",
		.args = "",
		.summary = "Print the datapath counters, summed over CPUs, by section (passed untouched,\n"
			   "rewriting, flow table, SYN proxy, its local and translate paths,\n"
			   "sweeper), those at 0 left out unless --all; and the flow table's fill:\n"
			   "flows_present, flows_max, and flow_evicted (flows the full LRU table\n"
			   "dropped: created - expired - removed - present). With --watch each\n"
			   "block starts with its time (UTC); each JSON object has \"time\".",
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
	if (stats_source_open("stats", &src)) {
		stats_source_close(&src);
		return EXIT_RUNTIME;
	}
	err = show_stats(prm, &src);
	stats_source_close(&src);
	return err;
}
