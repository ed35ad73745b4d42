/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The datapath's counters as an operator reads them (user/counters.c): the
 * section `stats` shows each in, the series it is in /metrics, and the
 * sample both read from the pinned maps. The counters themselves (their
 * index, their name) are include/isnguard.h's ISNGUARD_STATS.
 */
#ifndef ISNGUARD_COUNTERS_H
#define ISNGUARD_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "isnguard.h"
#include "maps.h"
#include "statslots.h"

/* Where `stats` shows a counter, in this order. */
enum counter_section {
	SECTION_RETIRED,	/* nothing counts it any more: never shown */
	SECTION_PASSED,
	SECTION_REWRITING,
	SECTION_FLOWS,
	SECTION_SYNPROXY,
	SECTION_SYN_POLICY,
	SECTION_SYNPROXY_LOCAL,
	SECTION_TRANSLATE,
	SECTION_SWEEPER,
	SECTION_EVENTS,
	SECTION_COUNT
};

/* A Prometheus counter family: one series per counter, told apart by label's value. */
struct metric_family {
	const char *name;	/* isnguard_..._total */
	const char *help;
	const char *label;	/* NULL: one counter, no label */
	bool nanoseconds;	/* counts ns, exported in seconds (base units) */
};

struct counter_desc {
	enum isn_stat stat;
	enum counter_section section;
	const struct metric_family *family;	/* NULL when retired */
	const char *label_value;
};

/* Every counter once, in the order `stats` shows them (retired ones last). */
extern const struct counter_desc counter_descs[STAT_COUNT];
/* The section's title ("SYN proxy, local path"). */
const char *counter_section_title(enum counter_section section);
/* ISNGUARD_STATS' name of the counter ("cookie_sent"). */
const char *counter_name(enum isn_stat stat);
bool counter_retired(enum isn_stat stat);

/* The maps a sample reads. */
struct stats_source {
	int stats_fd;
	struct flow_tables flows;
	__u32 flows_max;
	__u32 entries;		/* isn_stats': STAT_COUNT a slot (a planted or kept map may hold one) */
	int ncpus;
	__u64 *values;		/* every entry's ncpus values of 8 bytes */
	__u32 *keys;
};

struct stats_sample {
	__u64 counters[STAT_COUNT];	/* summed over CPUs and slots */
	__u64 slot_counters[ISN_STATS_SLOTS][STAT_COUNT];	/* summed over CPUs */
	int slots;			/* how many isn_stats holds */
	struct stat_slot slot_owner[ISN_STATS_SLOTS];	/* isn_stat_slots: whose each is */
	__u64 flows_present;
	__u64 flows_max;
	__u64 buckets_held;	/* the SYN policy's source buckets (isn_syn_buckets) */
	__u64 buckets_spending;	/* of them, not full */
	__u64 buckets_max;	/* 0: a state without them */
	double taken_s;		/* CLOCK_MONOTONIC */
	double wall_s;		/* CLOCK_REALTIME, for the timestamp */
};

/* Opens them, layout-checked; on failure the one-line error names cmd. 0 or -errno. */
int stats_source_open(const char *cmd, struct stats_source *src);
void stats_source_close(struct stats_source *src);
/* Every counter summed over CPUs, the flow tables and source buckets counted. 0 or -errno after the error line. */
int stats_read_sample(const char *cmd, const struct stats_source *src, struct stats_sample *s);
/*
 * The LRU handshake table evicts without telling anyone: flows created and
 * not expired, removed or present were evicted. An estimate (the counters
 * and the tables are read a moment apart), clamped at 0.
 */
__u64 stats_flows_evicted(const struct stats_sample *s);
/*
 * Whether a slot's counters are shown on their own: a slot with an
 * interface; slot 0 (counted by no interface's load) when it counted
 * anything, or when no slot has an interface, so that its counters are the
 * totals.
 */
bool stats_slot_shown(const struct stats_sample *s, int slot);
/* Whether any slot has an interface: per-interface counters to show. */
bool stats_per_interface(const struct stats_sample *s);

#endif /* ISNGUARD_COUNTERS_H */
