// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What each datapath counter is to an operator: the section `isnguard stats`
 * shows it in and the series `isnguard exporter` exports it as (Prometheus'
 * conventions: isnguard_ prefix, _total, base units, a label where several
 * counters are the reasons of one event); and the sample of the pinned maps
 * both read. docs/operations.md's glossary is this table in words.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "counters.h"
#include "pinned.h"
#include "policy.h"

#define STAT_NAME(name, text) [name] = text,
static const char *const stat_names[STAT_COUNT] = { ISNGUARD_STATS(STAT_NAME) };
#undef STAT_NAME

static const char *const section_titles[SECTION_COUNT] = {
	[SECTION_RETIRED] = "retired",
	[SECTION_PASSED] = "passed untouched",
	[SECTION_REWRITING] = "rewriting",
	[SECTION_FLOWS] = "flow table",
	[SECTION_SYNPROXY] = "SYN proxy",
	[SECTION_SYN_POLICY] = "SYN proxy, source policy",
	[SECTION_SYNPROXY_LOCAL] = "SYN proxy, local path",
	[SECTION_TRANSLATE] = "SYN proxy, translate path",
	[SECTION_SWEEPER] = "sweeper",
	[SECTION_EVENTS] = "events",
};

/* ---- the families ---- */

#define FAMILY(var, metric, label_name, text) \
	static const struct metric_family var = { .name = "isnguard_" metric, .help = text, \
						  .label = label_name }

/* Every packet a program sees ends in one decision: these four families and the proxy's. */
FAMILY(passed, "packets_passed_total", "reason",
       "Packets passed untouched, by why (a decision: each packet has one).");
FAMILY(rewritten, "packets_rewritten_total", "rewrite",
       "Packets rewritten: the host's SYN or SYN-ACK given the keyed ISN, its segments' seq, "
       "the peer's ack and SACK, a quoted seq in ICMP.");
FAMILY(dropped, "packets_dropped_total", "reason",
       "Packets dropped on purpose, by why.");
FAMILY(unprotected, "connections_unprotected_total", NULL,
       "New connections left with the host's own ISN: the flow table was at --max-flows.");
FAMILY(sack_blocks, "sack_blocks_translated_total", NULL,
       "SACK blocks translated in the peer's segments.");

FAMILY(flows_created, "flows_created_total", NULL, "Flow entries made.");
FAMILY(flows_reused, "flows_reused_total", NULL,
       "Entries of closed connections taken by a new connection on their tuple.");
FAMILY(flows_promoted, "flows_promoted_total", NULL,
       "Handshakes moved to the established table.");
FAMILY(promotions_failed, "flow_promotions_failed_total", NULL,
       "Promotions refused by a full sweep queue: the flow stays in the handshake table.");
FAMILY(flows_removed, "flows_removed_total", "reason",
       "Flow entries removed: by the sweeper after their timeout, or by the datapath.");
FAMILY(flows_reopened, "flows_reopened_by_cookie_total", NULL,
       "Closed connections' tuples taken by a valid cookie ACK.");

FAMILY(sp_syns, "synproxy_syns_total", NULL, "SYNs to ports under the SYN proxy.");
FAMILY(sp_cookies, "synproxy_cookies_sent_total", NULL, "Cookie SYN-ACKs sent.");
FAMILY(sp_syns_passed, "synproxy_syns_passed_total", "reason",
       "SYNs to protected ports passed to the host unanswered, by why.");
FAMILY(sp_auto, "synproxy_auto_switches_total", "state",
       "Auto mode switching a port's cookies on or off.");
FAMILY(sp_cookie_acks, "synproxy_cookie_acks_total", "result",
       "ACKs judged as cookie ACKs: valid, or failing the check (forged, too old, of a retired key).");
FAMILY(sp_invalid_to_stack, "synproxy_invalid_acks_to_stack_total", NULL,
       "Invalid cookie ACKs handed to the host's stack for its RST (--invalid-ack-rate).");
FAMILY(sp_acks_passed, "synproxy_acks_passed_total", "reason",
       "ACKs to protected ports passed before any cookie check, by why.");

FAMILY(sp_monitor, "synproxy_monitor_syns_total", "verdict",
       "Monitor mode: SYNs passed to the host, by what the SYN proxy would have done.");
FAMILY(sp_buckets_made, "synproxy_source_buckets_made_total", NULL,
       "Source prefixes given a bucket of the SYN policy's table.");
FAMILY(sp_buckets_evicted, "synproxy_source_buckets_evicted_total", NULL,
       "Buckets of sources still spending past their rate forgotten for a new source.");

FAMILY(local_handshakes, "synproxy_local_handshakes_total", NULL,
       "Local path: valid cookie ACKs that gave the listener its request socket.");
FAMILY(local_assign_errors, "synproxy_local_assign_errors_total", NULL,
       "Local path: request sockets the kernel refused.");
FAMILY(local_before_socket, "synproxy_local_acks_before_socket_total", NULL,
       "Local path: segments judged as cookie ACKs again before the host's socket existed.");

FAMILY(tr_server_syns, "synproxy_translate_server_syns_total", NULL,
       "Translate path: valid cookie ACKs turned into the SYN to the server.");
FAMILY(tr_syns_resent, "synproxy_translate_syns_resent_total", NULL,
       "Translate path: SYNs to a silent server resent by the tick.");
FAMILY(tr_server_synacks, "synproxy_translate_server_synacks_total", NULL,
       "Translate path: server SYN-ACKs turned into isnguard's ACK to the server.");
FAMILY(tr_own_passed, "synproxy_translate_own_packets_passed_total", NULL,
       "Translate path: isnguard's own ACK or resent SYN passing ingress untouched.");
FAMILY(tr_windows_opened, "synproxy_translate_client_windows_opened_total", NULL,
       "Translate path: clients given the server's window once it answered.");
FAMILY(tr_windows, "synproxy_translate_windows_rewritten_total", NULL,
       "Translate path: server windows rewritten into the client's scale.");
FAMILY(tr_opening_to_tc, "synproxy_translate_opening_to_tc_total", NULL,
       "Translate path: client segments while the server had not answered, left to tc.");
FAMILY(tr_failures, "synproxy_translate_server_failures_total", "reason",
       "Translate path: servers that refused (RST) or did not answer, the client sent a RST.");
FAMILY(tr_untracked, "synproxy_translate_resends_untracked_total", NULL,
       "Translate path: connections opened with no resend slot.");

FAMILY(rs_runs, "resend_runs_total", NULL,
       "Runs of the resend tick (each query of the tick device, each run handed over to).");
FAMILY(rs_slots, "resend_slots_total", NULL, "Resend queue slots taken by the tick.");
static const struct metric_family rs_seconds = {
	.name = "isnguard_resend_run_seconds_total",
	.help = "Time the resend tick's runs took.",
	.nanoseconds = true,
};
FAMILY(rs_chained, "resend_runs_chained_total", NULL,
       "Resend tick runs that stopped at their bound and handed the rest to a next run.");
FAMILY(rs_slow, "resend_slow_runs_total", NULL, "Resend tick runs that took over 1 ms.");

FAMILY(sw_runs, "sweeper_runs_total", NULL, "Runs of the sweeper's timer.");
FAMILY(sw_slots, "sweeper_slots_total", NULL, "Sweep slots looked at.");
static const struct metric_family sw_seconds = {
	.name = "isnguard_sweeper_run_seconds_total",
	.help = "Time the sweeper's runs took.",
	.nanoseconds = true,
};
FAMILY(sw_cut, "sweeper_runs_cut_total", NULL,
       "Sweeper runs stopped by their 0.5 ms clock before all due slots were seen.");
FAMILY(sw_slow, "sweeper_slow_runs_total", NULL, "Sweeper runs that took over 1 ms.");
FAMILY(sw_queue_full, "sweeper_queue_full_total", NULL,
       "Entries refused a slot by a full sweep queue.");
FAMILY(sw_unqueued, "sweeper_handshakes_unqueued_total", NULL,
       "Handshakes entered without a sweep slot (the LRU table bounds them).");
FAMILY(sw_adopted, "sweeper_flows_adopted_total", NULL,
       "Kept flows given a slot by a new sweeper.");
FAMILY(sw_timer_errors, "sweeper_timer_errors_total", NULL,
       "Times the sweeper's timer failed to start.");

FAMILY(ev_lost, "events_lost_total", NULL,
       "Events a reader's ring buffer had no room for (isnguard monitor, the exporter).");

#undef FAMILY

#define ROW(s, sec, fam, value) { .stat = s, .section = sec, .family = fam, .label_value = value }

const struct counter_desc counter_descs[STAT_COUNT] = {
	ROW(STAT_PASS_NOT_IP, SECTION_PASSED, &passed, "not_ip"),
	ROW(STAT_PASS_NOT_TCP, SECTION_PASSED, &passed, "not_tcp"),
	ROW(STAT_PASS_FRAGMENT, SECTION_PASSED, &passed, "fragment"),
	ROW(STAT_PASS_IPV6_EXTHDR, SECTION_PASSED, &passed, "ipv6_exthdr"),
	ROW(STAT_PASS_IPV6_AH, SECTION_PASSED, &passed, "ipv6_ah"),
	ROW(STAT_PASS_TRUNCATED, SECTION_PASSED, &passed, "truncated"),
	ROW(STAT_PASS_UNTRACKED, SECTION_PASSED, &passed, "untracked"),
	ROW(STAT_PASS_NOTHING_TO_DO, SECTION_PASSED, &passed, "nothing_to_do"),
	ROW(STAT_PASS_TCP_SIGNED, SECTION_PASSED, &passed, "tcp_signed"),
	ROW(STAT_PASS_ICMP, SECTION_PASSED, &passed, "icmp"),
	ROW(STAT_PASS_PEER_SYN, SECTION_PASSED, &passed, "peer_syn"),

	ROW(STAT_SYN_REWRITTEN, SECTION_REWRITING, &rewritten, "syn"),
	ROW(STAT_SYNACK_REWRITTEN, SECTION_REWRITING, &rewritten, "synack"),
	ROW(STAT_SYN_RETRANSMIT, SECTION_REWRITING, &rewritten, "syn_retransmit"),
	ROW(STAT_SEQ_TRANSLATED, SECTION_REWRITING, &rewritten, "seq"),
	ROW(STAT_ACK_TRANSLATED, SECTION_REWRITING, &rewritten, "ack"),
	ROW(STAT_ICMP_TRANSLATED, SECTION_REWRITING, &rewritten, "icmp"),
	ROW(STAT_SACK_BLOCKS, SECTION_REWRITING, &sack_blocks, NULL),
	ROW(STAT_PASS_TABLE_FULL, SECTION_REWRITING, &unprotected, NULL),
	ROW(STAT_DROP_ERROR, SECTION_REWRITING, &dropped, "rewrite_error"),

	ROW(STAT_FLOW_CREATED, SECTION_FLOWS, &flows_created, NULL),
	ROW(STAT_FLOW_REUSED, SECTION_FLOWS, &flows_reused, NULL),
	ROW(STAT_FLOW_PROMOTED, SECTION_FLOWS, &flows_promoted, NULL),
	ROW(STAT_FLOW_PROMOTE_FAILED, SECTION_FLOWS, &promotions_failed, NULL),
	ROW(STAT_FLOW_EXPIRED, SECTION_FLOWS, &flows_removed, "expired"),
	ROW(STAT_FLOW_REMOVED, SECTION_FLOWS, &flows_removed, "datapath"),
	ROW(STAT_FLOW_REOPENED, SECTION_FLOWS, &flows_reopened, NULL),

	ROW(STAT_SYN_SEEN, SECTION_SYNPROXY, &sp_syns, NULL),
	ROW(STAT_COOKIE_SENT, SECTION_SYNPROXY, &sp_cookies, NULL),
	ROW(STAT_SYN_PASSED_AUTO, SECTION_SYNPROXY, &sp_syns_passed, "below_threshold"),
	ROW(STAT_SYN_PASSED_SOCKET, SECTION_SYNPROXY, &sp_syns_passed, "socket_exists"),
	ROW(STAT_SYN_NO_LISTENER, SECTION_SYNPROXY, &sp_syns_passed, "no_listener"),
	ROW(STAT_SYN_UNANSWERABLE, SECTION_SYNPROXY, &sp_syns_passed, "unanswerable"),
	ROW(STAT_SYN_NOT_UNICAST, SECTION_SYNPROXY, &sp_syns_passed, "not_unicast"),
	ROW(STAT_SYN_OTHER_HOST, SECTION_SYNPROXY, &sp_syns_passed, "other_host"),
	ROW(STAT_SYN_NOT_LOCAL, SECTION_SYNPROXY, &sp_syns_passed, "not_local"),
	ROW(STAT_SYN_BAD_CHECKSUM, SECTION_SYNPROXY, &dropped, "syn_bad_checksum"),
	ROW(STAT_AUTO_ON, SECTION_SYNPROXY, &sp_auto, "on"),
	ROW(STAT_AUTO_OFF, SECTION_SYNPROXY, &sp_auto, "off"),
	ROW(STAT_COOKIE_ACK_VALID, SECTION_SYNPROXY, &sp_cookie_acks, "valid"),
	ROW(STAT_COOKIE_BAD_MAC, SECTION_SYNPROXY, &sp_cookie_acks, "invalid"),
	ROW(STAT_COOKIE_INVALID_TO_STACK, SECTION_SYNPROXY, &sp_invalid_to_stack, NULL),
	ROW(STAT_COOKIE_ACK_SOCKET, SECTION_SYNPROXY, &sp_acks_passed, "socket_exists"),
	ROW(STAT_COOKIE_ACK_NO_LISTENER, SECTION_SYNPROXY, &sp_acks_passed, "no_listener"),

	ROW(STAT_SYN_PREFIX_DENIED, SECTION_SYN_POLICY, &dropped, "syn_prefix_denied"),
	ROW(STAT_SYN_PREFIX_ALLOWED, SECTION_SYN_POLICY, &sp_syns_passed, "prefix_allowed"),
	ROW(STAT_SYN_SOURCE_LIMITED, SECTION_SYN_POLICY, &dropped, "syn_source_limited"),
	ROW(STAT_SYN_TOTAL_LIMITED, SECTION_SYN_POLICY, &dropped, "syn_total_limited"),
	ROW(STAT_SYN_MONITOR_ANSWER, SECTION_SYN_POLICY, &sp_monitor, "answer"),
	ROW(STAT_SYN_MONITOR_LIMIT, SECTION_SYN_POLICY, &sp_monitor, "limit"),
	ROW(STAT_SYN_MONITOR_DROP, SECTION_SYN_POLICY, &sp_monitor, "drop"),
	ROW(STAT_SYN_BUCKET_NEW, SECTION_SYN_POLICY, &sp_buckets_made, NULL),
	ROW(STAT_SYN_BUCKET_EVICTED, SECTION_SYN_POLICY, &sp_buckets_evicted, NULL),

	ROW(STAT_COOKIE_HANDSHAKE, SECTION_SYNPROXY_LOCAL, &local_handshakes, NULL),
	ROW(STAT_COOKIE_QUEUE_FULL, SECTION_SYNPROXY_LOCAL, &dropped, "accept_queue_full"),
	ROW(STAT_COOKIE_ASSIGN_ERROR, SECTION_SYNPROXY_LOCAL, &local_assign_errors, NULL),
	ROW(STAT_SYN_MARTIAN, SECTION_SYNPROXY, &dropped, "syn_martian"),
	ROW(STAT_COOKIE_ACK_BEFORE_SOCKET, SECTION_SYNPROXY_LOCAL, &local_before_socket, NULL),

	ROW(STAT_PROXY_SYN, SECTION_TRANSLATE, &tr_server_syns, NULL),
	ROW(STAT_PROXY_SYN_RESENT, SECTION_TRANSLATE, &tr_syns_resent, NULL),
	ROW(STAT_PROXY_SYNACK, SECTION_TRANSLATE, &tr_server_synacks, NULL),
	ROW(STAT_PROXY_INJECTED, SECTION_TRANSLATE, &tr_own_passed, NULL),
	ROW(STAT_PROXY_WINDOW_OPENED, SECTION_TRANSLATE, &tr_windows_opened, NULL),
	ROW(STAT_PROXY_WINDOW, SECTION_TRANSLATE, &tr_windows, NULL),
	ROW(STAT_PROXY_OPENING, SECTION_TRANSLATE, &tr_opening_to_tc, NULL),
	ROW(STAT_PROXY_HELD, SECTION_TRANSLATE, &dropped, "translate_server_opening"),
	ROW(STAT_PROXY_REFUSED, SECTION_TRANSLATE, &tr_failures, "refused"),
	ROW(STAT_PROXY_TIMEOUT, SECTION_TRANSLATE, &tr_failures, "timeout"),
	ROW(STAT_PROXY_GAVE_UP, SECTION_TRANSLATE, &tr_failures, "gave_up"),
	ROW(STAT_PROXY_RESEND_UNTRACKED, SECTION_TRANSLATE, &tr_untracked, NULL),
	ROW(STAT_PROXY_TABLE_FULL, SECTION_TRANSLATE, &dropped, "translate_table_full"),
	ROW(STAT_PROXY_CHALLENGE_RST, SECTION_TRANSLATE, &tr_failures, "challenge_reset"),

	ROW(STAT_RESEND_RUNS, SECTION_TRANSLATE, &rs_runs, NULL),
	ROW(STAT_RESEND_SLOTS, SECTION_TRANSLATE, &rs_slots, NULL),
	ROW(STAT_RESEND_NS, SECTION_TRANSLATE, &rs_seconds, NULL),
	ROW(STAT_RESEND_CHAINED, SECTION_TRANSLATE, &rs_chained, NULL),
	ROW(STAT_RESEND_LONG_RUNS, SECTION_TRANSLATE, &rs_slow, NULL),
	ROW(STAT_SWEEP_RUNS, SECTION_SWEEPER, &sw_runs, NULL),
	ROW(STAT_SWEEP_SLOTS, SECTION_SWEEPER, &sw_slots, NULL),
	ROW(STAT_SWEEP_NS, SECTION_SWEEPER, &sw_seconds, NULL),
	ROW(STAT_SWEEP_CUT, SECTION_SWEEPER, &sw_cut, NULL),
	ROW(STAT_SWEEP_LONG_RUNS, SECTION_SWEEPER, &sw_slow, NULL),
	ROW(STAT_SWEEP_QUEUE_FULL, SECTION_SWEEPER, &sw_queue_full, NULL),
	ROW(STAT_SWEEP_UNQUEUED, SECTION_SWEEPER, &sw_unqueued, NULL),
	ROW(STAT_SWEEP_ADOPTED, SECTION_SWEEPER, &sw_adopted, NULL),
	ROW(STAT_FLOW_TIMER_ERROR, SECTION_SWEEPER, &sw_timer_errors, NULL),

	ROW(STAT_EVENTS_LOST, SECTION_EVENTS, &ev_lost, NULL),

	/*
	 * A cookie no longer says its slot or key: such an ACK is a bad MAC.
	 * Their slots stay in isn_stats, so kept state's counters copy index
	 * for index (user/state.c), but nothing shows them.
	 */
	ROW(STAT_COOKIE_EXPIRED, SECTION_RETIRED, NULL, NULL),
	ROW(STAT_COOKIE_UNKNOWN_KEY, SECTION_RETIRED, NULL, NULL),
};

#undef ROW

const char *counter_section_title(enum counter_section section)
{
	return section < SECTION_COUNT ? section_titles[section] : "?";
}

const char *counter_name(enum isn_stat stat)
{
	return stat < STAT_COUNT ? stat_names[stat] : "?";
}

bool counter_retired(enum isn_stat stat)
{
	for (int i = 0; i < STAT_COUNT; i++)
		if (counter_descs[i].stat == stat)
			return counter_descs[i].section == SECTION_RETIRED;
	return true;
}

/* ---- the sample ---- */

static double clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void stats_source_close(struct stats_source *src)
{
	if (src->stats_fd >= 0)
		close(src->stats_fd);
	src->stats_fd = -1;
	flow_tables_close(&src->flows);
	free(src->values);
	free(src->keys);
	src->values = NULL;
	src->keys = NULL;
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

int stats_source_open(const char *cmd, struct stats_source *src)
{
	struct bpf_map_info info;
	int err;

	*src = (struct stats_source){ .stats_fd = -1, .flows = { .fd = { -1, -1 } } };
	src->stats_fd = map_open_checked(cmd, &isn_stats_layout, &info);
	if (src->stats_fd < 0)
		return src->stats_fd;
	src->entries = info.max_entries < ISN_STATS_ENTRIES ? info.max_entries : ISN_STATS_ENTRIES;
	err = flow_tables_open(cmd, &src->flows);
	if (err)
		return err;
	src->flows_max = configured_max_flows(src->flows.max_entries[0]);
	src->ncpus = libbpf_num_possible_cpus();
	if (src->ncpus < 0) {
		cli_error("%s: count possible CPUs: %s", cmd, strerror(-src->ncpus));
		return src->ncpus;
	}
	/* Per-CPU values come as ncpus slots of round_up(value_size, 8) = 8 bytes. */
	src->values = calloc((size_t)src->ncpus * src->entries, sizeof(__u64));
	src->keys = calloc(src->entries, sizeof(__u32));
	if (!src->values || !src->keys) {
		cli_error("%s: %s", cmd, strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

/*
 * Every entry of isn_stats in batches (one system call for all its slots'
 * counters where the kernel hands them at once), keys in src->keys and
 * their ncpus values each in src->values. 0, or -errno.
 */
static int read_entries(const struct stats_source *src)
{
	__u32 done = 0, next = 0;

	while (done < src->entries) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 count = src->entries - done;
		int err = bpf_map_lookup_batch(src->stats_fd, done ? &next : NULL, &next,
					       src->keys + done,
					       src->values + (size_t)done * src->ncpus, &count, &opts);

		done += count;
		if (err && errno == ENOENT)
			break;	/* the last batch */
		if (err)
			return -errno;
	}
	return done == src->entries ? 0 : -EIO;
}

int stats_read_sample(const char *cmd, const struct stats_source *src, struct stats_sample *s)
{
	size_t present, spending;
	uint32_t max_buckets;
	int err;

	s->taken_s = clock_s(CLOCK_MONOTONIC);
	s->wall_s = clock_s(CLOCK_REALTIME);
	err = read_entries(src);
	if (err) {
		cli_error("%s: read %s: %s", cmd, ISN_MAP_STATS, strerror(-err));
		return err;
	}
	memset(s->counters, 0, sizeof(s->counters));
	memset(s->slot_counters, 0, sizeof(s->slot_counters));
	s->slots = (int)((src->entries + STAT_COUNT - 1) / STAT_COUNT);
	for (__u32 i = 0; i < src->entries; i++) {
		__u32 key = src->keys[i], slot = key / STAT_COUNT, stat = key % STAT_COUNT;
		__u64 total = 0;

		if (slot >= ISN_STATS_SLOTS)
			continue;
		for (int cpu = 0; cpu < src->ncpus; cpu++)
			total += src->values[(size_t)i * src->ncpus + cpu];
		s->slot_counters[slot][stat] += total;
		s->counters[stat] += total;
	}
	stat_slots_read(s->slot_owner);
	err = flow_tables_count(&src->flows, &present);
	if (err) {
		cli_error("%s: count the flow tables: %s", cmd, strerror(-err));
		return err;
	}
	s->flows_present = present;
	s->flows_max = src->flows_max;
	/* The source buckets in use, where the state has them (a build's before it: none). */
	err = policy_bucket_fill(&present, &spending, &max_buckets);
	if (err && err != -ENOENT) {
		cli_error("%s: count %s: %s", cmd, ISN_MAP_SYN_BUCKETS, strerror(-err));
		return err;
	}
	s->buckets_held = err ? 0 : present;
	s->buckets_spending = err ? 0 : spending;
	s->buckets_max = err ? 0 : max_buckets;
	return 0;
}

__u64 stats_flows_evicted(const struct stats_sample *s)
{
	__u64 gone_without_eviction = s->counters[STAT_FLOW_EXPIRED] +
				      s->counters[STAT_FLOW_REMOVED] + s->flows_present;
	__u64 created = s->counters[STAT_FLOW_CREATED];

	return created > gone_without_eviction ? created - gone_without_eviction : 0;
}

bool stats_per_interface(const struct stats_sample *s)
{
	for (int slot = 1; slot < s->slots && slot < ISN_STATS_SLOTS; slot++)
		if (s->slot_owner[slot].owner.ifindex)
			return true;
	return false;
}

bool stats_slot_shown(const struct stats_sample *s, int slot)
{
	if (slot < 0 || slot >= s->slots || slot >= ISN_STATS_SLOTS)
		return false;
	if (slot)
		return s->slot_owner[slot].owner.ifindex != 0;
	for (int i = 0; i < STAT_COUNT; i++)
		if (s->slot_counters[0][i])
			return true;
	return !stats_per_interface(s);
}
