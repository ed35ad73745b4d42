// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN policy (bpf/syn_policy.h) through BPF_PROG_TEST_RUN: the SYN-ACK
 * limits per source prefix and for the host, the deny and allow lists, and
 * monitor mode. Each row's SYNs go through the three programs that answer
 * SYNs (isnguard_xdp, isnguard_xdp_cookie beside tc ingress, and
 * isnguard_tc_ingress with `--syn-hook tc`), each from full buckets, and
 * each SYN's outcome is its verdict, its frame (untouched when it is not
 * answered) and the one counter that moved. The tests listen on their own
 * port, and leave no policy behind them for the other tests.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dp_fixture.h"
#include "harness.h"
#include "pkt.h"

#define POLICY_PORT 18460	/* protected, with listeners (IPv4 and IPv6) */
#define POLICY_OTHER_PORT 18461	/* not protected: a monitored port that is not this one */
#define POLICY_HOST4 "10.0.9.1"
#define POLICY_HOST6 "2001:db8:9::1"
#define POLICY_SPORT 41000

#define XDP_DROP_VERDICT 1
#define XDP_PASS_VERDICT 2
#define XDP_TX_VERDICT 3
#define TC_ACT_SHOT_VERDICT 2
#define TC_ACT_REDIRECT_VERDICT 7
#define TC_ACT_UNSPEC_VERDICT ((uint32_t)-1)

static const struct synproxy_config policy_sp = {
	.mode = SYNPROXY_ALWAYS,
	.path = SYNPROXY_PATH_LOCAL,
	.flags = SYNPROXY_F_SACK | SYNPROXY_F_TIMESTAMPS | SYNPROXY_F_WSCALE,
	.syn_threshold = 1000,
	.rcv_wscale = 7,
	.window = 64240,
};

static const enum dp_prog syn_progs[] = { DP_XDP_INGRESS, DP_XDP_COOKIE, DP_TC_SYN };
#define SYN_PROGS (sizeof(syn_progs) / sizeof(syn_progs[0]))

/* What became of one SYN: the verdict's kind and the counter it moved. */
enum outcome {
	ANSWERED = 1,		/* the cookie SYN-ACK (cookie_sent) */
	SOURCE_LIMITED,		/* dropped: syn_source_limited */
	TOTAL_LIMITED,		/* dropped: syn_total_limited */
	DENIED,			/* dropped: syn_prefix_denied */
	ALLOWED,		/* passed untouched: syn_prefix_allowed */
	WOULD_ANSWER,		/* passed untouched: syn_monitor_would_answer */
	WOULD_LIMIT,		/* passed untouched: syn_monitor_would_limit */
	WOULD_DROP,		/* passed untouched: syn_monitor_would_drop */
	BAD_CHECKSUM,		/* dropped: syn_bad_checksum */
};

static const struct {
	const char *name;
	enum isn_stat stat;
	enum { ANSWER, DROP, PASS } verdict;
} outcomes[] = {
	[ANSWERED] = { "answered", STAT_COOKIE_SENT, ANSWER },
	[SOURCE_LIMITED] = { "source-limited", STAT_SYN_SOURCE_LIMITED, DROP },
	[TOTAL_LIMITED] = { "total-limited", STAT_SYN_TOTAL_LIMITED, DROP },
	[DENIED] = { "denied", STAT_SYN_PREFIX_DENIED, DROP },
	[ALLOWED] = { "allowed", STAT_SYN_PREFIX_ALLOWED, PASS },
	[WOULD_ANSWER] = { "would-answer", STAT_SYN_MONITOR_ANSWER, PASS },
	[WOULD_LIMIT] = { "would-limit", STAT_SYN_MONITOR_LIMIT, PASS },
	[WOULD_DROP] = { "would-drop", STAT_SYN_MONITOR_DROP, PASS },
	[BAD_CHECKSUM] = { "bad-checksum", STAT_SYN_BAD_CHECKSUM, DROP },
};

/* The counters an outcome is told by: every SYN moves exactly one of them. */
static const enum isn_stat outcome_stats[] = {
	STAT_COOKIE_SENT, STAT_SYN_SOURCE_LIMITED, STAT_SYN_TOTAL_LIMITED, STAT_SYN_PREFIX_DENIED,
	STAT_SYN_PREFIX_ALLOWED, STAT_SYN_MONITOR_ANSWER, STAT_SYN_MONITOR_LIMIT,
	STAT_SYN_MONITOR_DROP, STAT_SYN_BAD_CHECKSUM,
};
#define OUTCOME_STATS (sizeof(outcome_stats) / sizeof(outcome_stats[0]))

static int policy_listeners[2] = { -1, -1 };

static bool listen_port(int family, int *fd)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(POLICY_PORT) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(POLICY_PORT) };
	int one = 1;

	*fd = socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return false;
	setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == 6)
		setsockopt(*fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(*fd, family == 4 ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		 family == 4 ? sizeof(a4) : sizeof(a6)) || listen(*fd, 16)) {
		close(*fd);
		*fd = -1;
		return false;
	}
	return true;
}

/* The SYN proxy on POLICY_PORT (and POLICY_OTHER_PORT's bit set too), the policy cleared. */
static bool policy_setup(void)
{
	struct isn_key key;

	if (!dp_setup())
		return false;
	if (policy_listeners[0] < 0 &&
	    (!listen_port(4, &policy_listeners[0]) || !listen_port(6, &policy_listeners[1]))) {
		FAIL("listen on port %u: %s", POLICY_PORT, strerror(errno));
		return false;
	}
	dp_test_key(&key);
	return dp_set_key(&key) && dp_set_synproxy(&policy_sp, POLICY_PORT) &&
	       dp_flows_clear() && dp_syn_policy_clear();
}

/* Linux's SYN from src (an IPv4 or IPv6 address) to the host's port dport. */
static size_t policy_syn(const char *src, uint16_t sport, uint16_t dport, bool bad_checksum,
			 uint8_t *buf)
{
	bool v6 = strchr(src, ':') != NULL;
	struct pkt_spec s = { 0 };
	struct pkt_layout lay;
	size_t len;

	memcpy(s.eth_src, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s.eth_dst, "\x02\x00\x00\x00\x00\x01", 6);	/* DP_DEV_MAC */
	if (!pkt_set_addrs(&s, src, v6 ? POLICY_HOST6 : POLICY_HOST4))
		return 0;
	s.ttl = 61;
	s.sport = sport;
	s.dport = dport;
	s.seq = 0x1a2b3c4d;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, v6 ? 1440 : 1460);
	pkt_opt_sack_perm(&s);
	pkt_opt_timestamp(&s, 0x11223344, 0);
	pkt_opt_nop(&s);
	pkt_opt_wscale(&s, 7);
	len = pkt_build(&s, buf, PKT_MAX_LEN);
	if (len && bad_checksum && pkt_parse(buf, len, &lay))
		buf[lay.l4_off + 17] ^= 0x5a;
	return len;
}

/*
 * One SYN through prog, judged as want: the verdict, the frame (untouched
 * unless answered), and exactly want's counter moved among the outcomes'.
 */
static void expect_outcome(enum dp_prog prog, const uint8_t *in, size_t in_len,
			   enum outcome want, const char *what)
{
	bool tc = prog == DP_TC_SYN;
	uint32_t verdict, expected;
	uint64_t before[OUTCOME_STATS];
	uint8_t out[PKT_MAX_LEN];
	size_t out_len = 0;
	char label[96];

	for (size_t i = 0; i < OUTCOME_STATS; i++)
		before[i] = dp_stat(outcome_stats[i]);
	if (!ASSERT_TRUE(in_len > 0, "SYN built") ||
	    !dp_run(prog, in, in_len, out, &out_len, &verdict))
		return;
	switch (outcomes[want].verdict) {
	case ANSWER:
		expected = tc ? TC_ACT_REDIRECT_VERDICT : XDP_TX_VERDICT;
		break;
	case DROP:
		expected = tc ? TC_ACT_SHOT_VERDICT : XDP_DROP_VERDICT;
		break;
	default:
		expected = tc ? TC_ACT_UNSPEC_VERDICT : XDP_PASS_VERDICT;
	}
	snprintf(label, sizeof(label), "%s: %s (verdict)", what, outcomes[want].name);
	ASSERT_EQ(verdict, expected, label);
	if (outcomes[want].verdict != ANSWER) {
		snprintf(label, sizeof(label), "%s: the SYN untouched", what);
		ASSERT_TRUE(out_len == in_len && !memcmp(out, in, in_len), label);
	}
	for (size_t i = 0; i < OUTCOME_STATS; i++) {
		snprintf(label, sizeof(label), "%s: counter %u", what, outcome_stats[i]);
		ASSERT_EQ(dp_stat(outcome_stats[i]) - before[i],
			  outcome_stats[i] == outcomes[want].stat, label);
	}
}

#define MAX_SYNS 8

/* ---- the SYN-ACK limits ---------------------------------------------------- */

struct limit_row {
	const char *name;
	struct syn_policy policy;	/* rate and burst, prefixes, total: derived by the fixture */
	const char *src[MAX_SYNS];	/* one SYN from each, in order */
	bool bad[MAX_SYNS];		/* that SYN's TCP checksum broken */
	enum outcome want[MAX_SYNS];
};

/* A second a step: nothing refills while a row runs. */
#define LIMIT(burst) .source_rate = 1, .source_burst = (burst), .source_prefix4 = 32, \
		     .source_prefix6 = 64

static const struct limit_row limit_rows[] = {
	{ .name = "ipv4_one_source_its_burst_then_dropped", .policy = { LIMIT(3) },
	  .src = { "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2" },
	  .want = { ANSWERED, ANSWERED, ANSWERED, SOURCE_LIMITED, SOURCE_LIMITED } },
	{ .name = "ipv6_one_source_its_burst_then_dropped", .policy = { LIMIT(3) },
	  .src = { "2001:db8:9::2", "2001:db8:9::2", "2001:db8:9::2", "2001:db8:9::2" },
	  .want = { ANSWERED, ANSWERED, ANSWERED, SOURCE_LIMITED } },
	{ .name = "ipv4_each_source_its_own_bucket", .policy = { LIMIT(1) },
	  .src = { "10.0.9.2", "10.0.9.3", "10.0.9.4", "10.0.9.2", "10.0.9.5" },
	  .want = { ANSWERED, ANSWERED, ANSWERED, SOURCE_LIMITED, ANSWERED } },
	{ .name = "ipv6_one_bucket_per_64", .policy = { LIMIT(2) },
	  .src = { "2001:db8:9::2", "2001:db8:9::3", "2001:db8:9:0:ffff::4", "2001:db8:9:1::2" },
	  .want = { ANSWERED, ANSWERED, SOURCE_LIMITED, ANSWERED } },
	{ .name = "ipv6_prefix_128_one_bucket_per_address",
	  .policy = { .source_rate = 1, .source_burst = 1, .source_prefix4 = 32,
		      .source_prefix6 = 128 },
	  .src = { "2001:db8:9::2", "2001:db8:9::3", "2001:db8:9::2" },
	  .want = { ANSWERED, ANSWERED, SOURCE_LIMITED } },
	{ .name = "ipv4_prefix_24_one_bucket_per_24",
	  .policy = { .source_rate = 1, .source_burst = 2, .source_prefix4 = 24,
		      .source_prefix6 = 64 },
	  .src = { "10.0.9.2", "10.0.9.3", "10.0.9.200", "10.0.8.2" },
	  .want = { ANSWERED, ANSWERED, SOURCE_LIMITED, ANSWERED } },
	{ .name = "no_limit_at_rate_0", .policy = { .source_prefix4 = 32, .source_prefix6 = 64 },
	  .src = { "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2" },
	  .want = { ANSWERED, ANSWERED, ANSWERED, ANSWERED, ANSWERED, ANSWERED } },
	/* 10 a second, a tenth of a second's burst: one at once, whoever sends it. */
	{ .name = "total_rate_caps_every_source", .policy = { .total_rate = 10 },
	  .src = { "10.0.9.2", "10.0.9.3", "2001:db8:9::2" },
	  .want = { ANSWERED, TOTAL_LIMITED, TOTAL_LIMITED } },
	/* A source over its own limit spends none of the host's. */
	{ .name = "source_limit_before_total_rate", .policy = { LIMIT(1), .total_rate = 20 },
	  .src = { "10.0.9.2", "10.0.9.2", "10.0.9.3", "10.0.9.4" },
	  .want = { ANSWERED, SOURCE_LIMITED, ANSWERED, TOTAL_LIMITED } },
	/* A corrupted SYN draws no SYN-ACK, so it spends no token. */
	{ .name = "bad_checksums_spend_no_token", .policy = { LIMIT(2) },
	  .src = { "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2", "10.0.9.2" },
	  .bad = { true, true, true },
	  .want = { BAD_CHECKSUM, BAD_CHECKSUM, BAD_CHECKSUM, ANSWERED, ANSWERED,
		    SOURCE_LIMITED } },
	{ .name = "bad_checksums_spend_none_of_the_hosts", .policy = { .total_rate = 10 },
	  .src = { "10.0.9.2", "10.0.9.3", "10.0.9.4" }, .bad = { true, true },
	  .want = { BAD_CHECKSUM, BAD_CHECKSUM, ANSWERED } },
};

/*
 * One source draws at most its burst of SYN-ACKs past its rate; the rest of
 * its SYNs are dropped unanswered and counted (syn_source_limited), per
 * /32 and /64 by default, as configured; the host's cap (syn_total_limited)
 * comes after; a SYN with a bad checksum spends no token of either. Every
 * SYN was answered before.
 */
TEST(test_syn_policy_limits_sources_and_the_host)
{
	uint8_t frame[PKT_MAX_LEN];
	char what[48];

	if (!policy_setup())
		return;
	for (size_t i = 0; i < sizeof(limit_rows) / sizeof(limit_rows[0]); i++) {
		const struct limit_row *r = &limit_rows[i];

		for (size_t j = 0; j < SYN_PROGS; j++) {
			test_case_begin("%s_%s", r->name, dp_prog_name(syn_progs[j]));
			if (!dp_set_syn_policy(&r->policy, NULL))
				break;
			for (int k = 0; k < MAX_SYNS && r->src[k]; k++) {
				size_t len = policy_syn(r->src[k], (uint16_t)(POLICY_SPORT + k),
							POLICY_PORT, r->bad[k], frame);

				snprintf(what, sizeof(what), "SYN %d from %s", k + 1, r->src[k]);
				expect_outcome(syn_progs[j], frame, len, r->want[k], what);
			}
		}
	}
	dp_syn_policy_clear();
}

/*
 * A flood from many sources at a few SYNs each is answered in full, even
 * with a burst of 2: each source has its bucket (syn_source_bucket_made),
 * and the table holds them all while it has room.
 */
TEST(test_syn_policy_many_sources_answered_in_full)
{
	const struct syn_policy pol = { LIMIT(2) };
	uint8_t frame[PKT_MAX_LEN];
	char src[32];

	if (!policy_setup())
		return;
	for (size_t j = 0; j < SYN_PROGS; j++) {
		uint64_t sent = dp_stat(STAT_COOKIE_SENT), made = dp_stat(STAT_SYN_BUCKET_NEW);
		uint64_t limited = dp_stat(STAT_SYN_SOURCE_LIMITED);
		uint64_t evicted = dp_stat(STAT_SYN_BUCKET_EVICTED);

		test_case_begin("300_sources_2_syns_each_%s", dp_prog_name(syn_progs[j]));
		if (!dp_set_syn_policy(&pol, NULL))
			break;
		for (int k = 0; k < 600; k++) {
			uint32_t verdict;
			uint8_t out[PKT_MAX_LEN];
			size_t out_len, len;

			snprintf(src, sizeof(src), "10.1.%d.%d", k % 300 / 200, k % 300 % 200 + 1);
			len = policy_syn(src, (uint16_t)(POLICY_SPORT + k), POLICY_PORT, false, frame);
			if (!dp_run(syn_progs[j], frame, len, out, &out_len, &verdict))
				break;
		}
		ASSERT_EQ(dp_stat(STAT_COOKIE_SENT) - sent, 600, "cookie SYN-ACKs");
		ASSERT_EQ(dp_stat(STAT_SYN_SOURCE_LIMITED) - limited, 0, "syn_source_limited");
		ASSERT_EQ(dp_stat(STAT_SYN_BUCKET_NEW) - made, 300, "syn_source_bucket_made");
		ASSERT_EQ(dp_syn_buckets(), 300, "buckets in isn_syn_buckets");
		ASSERT_EQ(dp_stat(STAT_SYN_BUCKET_EVICTED) - evicted, 0, "syn_source_bucket_evicted");
	}
	dp_syn_policy_clear();
}

/* The source prefix of an IPv4 address at /32, as the datapath makes it. */
static void source_of4(const char *addr, struct syn_source *src)
{
	memset(src, 0, sizeof(*src));
	src->addr[10] = src->addr[11] = 0xff;
	inet_pton(AF_INET, addr, src->addr + 12);
}

/*
 * The table is bounded (sets of SYN_BUCKET_WAYS ways); a new source takes
 * the way closest to full, so a source spending past its rate keeps its
 * bucket while other sources come through its set. Sources of two SYNs
 * (past a rate of one a second) each take a way, the lightest goes and is
 * counted (syn_source_bucket_evicted); then sources of one SYN, at the
 * rate, are forgotten uncounted: only the first of them takes a way from
 * a source past its rate, the others from each other. The heavy one is
 * still limited after them all. The sources are picked by the hash the
 * datapath uses (include/isnguard.h), with the test's key.
 */
#define POLICY_TWO_SYN_SOURCES (SYN_BUCKET_WAYS + 3)
#define POLICY_ONE_SYN_SOURCES 3

TEST(test_syn_policy_heavy_source_keeps_its_bucket_in_a_full_set)
{
	struct syn_policy pol = { LIMIT(3), .source_hash_key = { 0x1234, 0x5678 } };
	const char *heavy = "10.0.9.2";
	char colliding[POLICY_TWO_SYN_SOURCES + POLICY_ONE_SYN_SOURCES][32], addr[32];
	const int wanted = POLICY_TWO_SYN_SOURCES + POLICY_ONE_SYN_SOURCES;
	struct syn_source src;
	uint8_t frame[PKT_MAX_LEN];
	uint32_t set;
	int found = 0;

	if (!policy_setup())
		return;
	source_of4(heavy, &src);
	set = syn_source_set(syn_source_hash(&src, pol.source_hash_key));
	for (int i = 1; i < (1 << 22) && found < wanted; i++) {
		snprintf(addr, sizeof(addr), "10.%d.%d.%d", 64 + (i >> 16), (i >> 8) & 0xff,
			 i & 0xff);
		source_of4(addr, &src);
		if (syn_source_set(syn_source_hash(&src, pol.source_hash_key)) == set)
			snprintf(colliding[found++], sizeof(colliding[0]), "%s", addr);
	}
	if (!ASSERT_EQ(found, wanted, "sources in the heavy one's set"))
		return;
	for (size_t j = 0; j < SYN_PROGS; j++) {
		uint64_t evicted = dp_stat(STAT_SYN_BUCKET_EVICTED);

		test_case_begin("%s", dp_prog_name(syn_progs[j]));
		if (!dp_set_syn_policy(&pol, NULL))
			break;
		for (int k = 0; k < 4; k++)
			expect_outcome(syn_progs[j], frame,
				       policy_syn(heavy, (uint16_t)(POLICY_SPORT + k), POLICY_PORT,
						  false, frame),
				       k < 3 ? ANSWERED : SOURCE_LIMITED, "the heavy source");
		for (int k = 0; k < POLICY_TWO_SYN_SOURCES; k++)
			for (int n = 0; n < 2; n++)
				expect_outcome(syn_progs[j], frame,
					       policy_syn(colliding[k], (uint16_t)(POLICY_SPORT + n),
							  POLICY_PORT, false, frame),
					       ANSWERED, colliding[k]);
		/* Three ways free at first, then a way of a two-SYN source each time. */
		ASSERT_EQ(dp_stat(STAT_SYN_BUCKET_EVICTED) - evicted,
			  POLICY_TWO_SYN_SOURCES - (SYN_BUCKET_WAYS - 1),
			  "syn_source_bucket_evicted (sources past their rate)");
		for (int k = POLICY_TWO_SYN_SOURCES; k < found; k++)
			expect_outcome(syn_progs[j], frame,
				       policy_syn(colliding[k], POLICY_SPORT, POLICY_PORT, false,
						  frame), ANSWERED, colliding[k]);
		ASSERT_EQ(dp_stat(STAT_SYN_BUCKET_EVICTED) - evicted,
			  POLICY_TWO_SYN_SOURCES - (SYN_BUCKET_WAYS - 1) + 1,
			  "syn_source_bucket_evicted (sources at their rate forgotten uncounted)");
		expect_outcome(syn_progs[j], frame,
			       policy_syn(heavy, POLICY_SPORT + 9, POLICY_PORT, false, frame),
			       SOURCE_LIMITED, "the heavy source after them");
		ASSERT_EQ(dp_syn_buckets(), SYN_BUCKET_WAYS, "buckets: the set's ways, no more");
	}
	dp_syn_policy_clear();
}

/* ---- the prefix lists --------------------------------------------------------- */

struct list_row {
	const char *name;
	const char *deny[4];
	const char *allow[4];
	struct syn_policy policy;
	const char *src;
	int syns;		/* from src, 1 if 0 */
	enum outcome want[MAX_SYNS];
};

static const struct list_row list_rows[] = {
	{ .name = "ipv4_denied_dropped", .deny = { "10.0.9.0/24" }, .src = "10.0.9.2",
	  .want = { DENIED } },
	{ .name = "ipv4_not_on_a_list_answered", .deny = { "10.0.8.0/24" },
	  .allow = { "10.0.7.0/24" }, .src = "10.0.9.2", .want = { ANSWERED } },
	{ .name = "ipv4_allowed_passed_to_the_host", .allow = { "10.0.9.0/24" }, .src = "10.0.9.2",
	  .want = { ALLOWED } },
	{ .name = "ipv4_address_alone_denied", .deny = { "10.0.9.2" }, .src = "10.0.9.2",
	  .want = { DENIED } },
	{ .name = "ipv4_allow_inside_deny_wins", .deny = { "10.0.0.0/8" },
	  .allow = { "10.0.9.0/24" }, .src = "10.0.9.2", .want = { ALLOWED } },
	{ .name = "ipv4_deny_inside_allow_wins", .deny = { "10.0.9.2/32" },
	  .allow = { "10.0.0.0/8" }, .src = "10.0.9.2", .want = { DENIED } },
	{ .name = "ipv6_denied_dropped", .deny = { "2001:db8:9::/48" }, .src = "2001:db8:9::2",
	  .want = { DENIED } },
	{ .name = "ipv6_allowed_passed_to_the_host", .allow = { "2001:db8::/32" },
	  .src = "2001:db8:9::2", .want = { ALLOWED } },
	{ .name = "ipv4_source_with_only_ipv6_lists_answered", .deny = { "2001:db8::/32" },
	  .src = "10.0.9.2", .want = { ANSWERED } },
	{ .name = "ipv4_allowed_exempt_from_the_limit", .allow = { "10.0.9.0/24" },
	  .policy = { LIMIT(1) }, .src = "10.0.9.2", .syns = 3,
	  .want = { ALLOWED, ALLOWED, ALLOWED } },
	{ .name = "ipv4_denied_before_the_limit", .deny = { "10.0.9.0/24" },
	  .policy = { LIMIT(1) }, .src = "10.0.9.2", .syns = 2, .want = { DENIED, DENIED } },
};

/*
 * deny drops a source's SYNs to the protected ports before any other work
 * (syn_prefix_denied), allow passes them to the host as without the SYN
 * proxy, never answered nor limited (syn_prefix_allowed); the longest
 * prefix of either list wins. Both were answered before.
 */
TEST(test_syn_policy_prefix_lists)
{
	uint8_t frame[PKT_MAX_LEN];
	char what[48];

	if (!policy_setup())
		return;
	for (size_t i = 0; i < sizeof(list_rows) / sizeof(list_rows[0]); i++) {
		const struct list_row *r = &list_rows[i];
		int syns = r->syns ? r->syns : 1;

		for (size_t j = 0; j < SYN_PROGS; j++) {
			bool ok = true;

			test_case_begin("%s_%s", r->name, dp_prog_name(syn_progs[j]));
			ok = dp_syn_policy_clear() && dp_set_syn_policy(&r->policy, NULL);
			for (int k = 0; k < 4 && ok && r->deny[k]; k++)
				ok = dp_prefix_put(r->deny[k], SYN_LIST_DENY);
			for (int k = 0; k < 4 && ok && r->allow[k]; k++)
				ok = dp_prefix_put(r->allow[k], SYN_LIST_ALLOW);
			if (!ok)
				break;
			for (int k = 0; k < syns; k++) {
				size_t len = policy_syn(r->src, (uint16_t)(POLICY_SPORT + k),
							POLICY_PORT, false, frame);

				snprintf(what, sizeof(what), "SYN %d from %s", k + 1, r->src);
				expect_outcome(syn_progs[j], frame, len, r->want[k], what);
			}
			if (r->policy.source_rate)
				ASSERT_EQ(dp_syn_buckets(), 0, "no bucket: no token spent");
		}
	}
	dp_syn_policy_clear();
}

/* ---- monitor mode ------------------------------------------------------------ */

struct monitor_row {
	const char *name;
	enum syn_monitor monitor;
	uint16_t monitored_port;	/* SYN_MONITOR_PORTS: the one port in the bitmap */
	const char *deny;
	const char *allow;
	struct syn_policy policy;
	const char *src;
	bool bad[MAX_SYNS];	/* that SYN's TCP checksum broken */
	int syns;
	enum outcome want[MAX_SYNS];
};

static const struct monitor_row monitor_rows[] = {
	{ .name = "all_ports_would_answer", .monitor = SYN_MONITOR_ALL, .src = "10.0.9.2",
	  .want = { WOULD_ANSWER } },
	{ .name = "ipv6_all_ports_would_answer", .monitor = SYN_MONITOR_ALL,
	  .src = "2001:db8:9::2", .want = { WOULD_ANSWER } },
	{ .name = "its_port_listed_would_answer", .monitor = SYN_MONITOR_PORTS,
	  .monitored_port = POLICY_PORT, .src = "10.0.9.2", .want = { WOULD_ANSWER } },
	{ .name = "another_port_listed_answered", .monitor = SYN_MONITOR_PORTS,
	  .monitored_port = POLICY_OTHER_PORT, .src = "10.0.9.2", .want = { ANSWERED } },
	{ .name = "denied_would_drop", .monitor = SYN_MONITOR_ALL, .deny = "10.0.9.0/24",
	  .src = "10.0.9.2", .want = { WOULD_DROP } },
	{ .name = "allowed_passed_as_allowed", .monitor = SYN_MONITOR_ALL,
	  .allow = "10.0.9.0/24", .src = "10.0.9.2", .want = { ALLOWED } },
	{ .name = "over_its_limit_would_limit", .monitor = SYN_MONITOR_ALL,
	  .policy = { LIMIT(1) }, .src = "10.0.9.2", .syns = 3,
	  .want = { WOULD_ANSWER, WOULD_LIMIT, WOULD_LIMIT } },
	{ .name = "over_the_total_would_limit", .monitor = SYN_MONITOR_ALL,
	  .policy = { .total_rate = 10 }, .src = "10.0.9.2", .syns = 2,
	  .want = { WOULD_ANSWER, WOULD_LIMIT } },
	{ .name = "martian_would_drop", .monitor = SYN_MONITOR_ALL, .src = "0.1.2.3",
	  .want = { WOULD_DROP } },
	{ .name = "bad_checksum_would_drop", .monitor = SYN_MONITOR_ALL, .src = "10.0.9.2",
	  .bad = { true }, .want = { WOULD_DROP } },
	{ .name = "ipv6_bad_checksum_would_drop", .monitor = SYN_MONITOR_ALL,
	  .src = "2001:db8:9::2", .bad = { true }, .want = { WOULD_DROP } },
	{ .name = "bad_checksum_would_drop_spending_no_token", .monitor = SYN_MONITOR_ALL,
	  .policy = { LIMIT(1) }, .src = "10.0.9.2", .syns = 3, .bad = { true },
	  .want = { WOULD_DROP, WOULD_ANSWER, WOULD_LIMIT } },
};

/*
 * Monitor mode decides as the SYN proxy would (lists, martians, checksums,
 * limits), counts it (syn_monitor_would_answer, _limit, _drop), and passes
 * every SYN to the host untouched; a port not listed is answered as
 * before. Those SYNs were answered or dropped before.
 */
TEST(test_syn_policy_monitor_mode_counts_and_passes)
{
	static uint64_t monitor[SYNPROXY_PORT_WORDS];
	uint8_t frame[PKT_MAX_LEN];
	char what[48];

	if (!policy_setup())
		return;
	for (size_t i = 0; i < sizeof(monitor_rows) / sizeof(monitor_rows[0]); i++) {
		const struct monitor_row *r = &monitor_rows[i];
		struct syn_policy pol = r->policy;
		int syns = r->syns ? r->syns : 1;

		memset(monitor, 0, sizeof(monitor));
		if (r->monitored_port)
			monitor[r->monitored_port >> 6] = 1ULL << (r->monitored_port & 63);
		pol.monitor = (uint8_t)r->monitor;
		if (!pol.source_prefix4) {
			pol.source_prefix4 = 32;
			pol.source_prefix6 = 64;
		}
		for (size_t j = 0; j < SYN_PROGS; j++) {
			bool ok;

			test_case_begin("%s_%s", r->name, dp_prog_name(syn_progs[j]));
			ok = dp_syn_policy_clear() && dp_set_syn_policy(&pol, monitor) &&
			     (!r->deny || dp_prefix_put(r->deny, SYN_LIST_DENY)) &&
			     (!r->allow || dp_prefix_put(r->allow, SYN_LIST_ALLOW));
			if (!ok)
				break;
			for (int k = 0; k < syns; k++) {
				size_t len = policy_syn(r->src, (uint16_t)(POLICY_SPORT + k),
							POLICY_PORT, r->bad[k], frame);

				snprintf(what, sizeof(what), "SYN %d from %s", k + 1, r->src);
				expect_outcome(syn_progs[j], frame, len, r->want[k], what);
			}
		}
	}
	dp_syn_policy_clear();
}

/*
 * A port only watched answers no SYN, so an ACK to it that no socket owns
 * is the host's (its own SYN-ACK's, or a stray one it answers with a RST):
 * it passes unjudged, through tc beside XDP and tc ingress alike, where the
 * SYN proxy drops it as a bad cookie (cookie_ack_invalid_mac).
 */
TEST(test_syn_policy_monitored_port_acks_pass_unjudged)
{
	static const enum dp_prog ack_progs[] = { DP_TC_COOKIE, DP_TC_INGRESS };
	uint8_t frame[PKT_MAX_LEN], out[PKT_MAX_LEN];
	struct pkt_spec s;
	size_t len, out_len;

	if (!policy_setup())
		return;
	pkt_tcp_segment(&s, "10.0.9.2", POLICY_HOST4, POLICY_SPORT, POLICY_PORT, TH_ACK,
			0x1a2b3c4e, 0x55667788);
	memcpy(s.eth_dst, "\x02\x00\x00\x00\x00\x01", 6);
	s.window = 1024;
	len = pkt_build(&s, frame, sizeof(frame));
	for (int monitor = 0; monitor < 2; monitor++) {
		const struct syn_policy pol = { .monitor = monitor ? SYN_MONITOR_ALL : SYN_MONITOR_OFF };

		for (size_t j = 0; j < sizeof(ack_progs) / sizeof(ack_progs[0]); j++) {
			uint64_t bad = dp_stat(STAT_COOKIE_BAD_MAC);
			uint32_t verdict;

			test_case_begin("%s_%s", monitor ? "monitor_all" : "answered_port_control",
					dp_prog_name(ack_progs[j]));
			if (!dp_flows_clear() || !dp_set_syn_policy(&pol, NULL) ||
			    !dp_run(ack_progs[j], frame, len, out, &out_len, &verdict))
				break;
			ASSERT_EQ(verdict, monitor ? TC_ACT_UNSPEC_VERDICT : TC_ACT_SHOT_VERDICT,
				  monitor ? "passed" : "dropped");
			ASSERT_EQ(dp_stat(STAT_COOKIE_BAD_MAC) - bad, !monitor, "cookie_ack_invalid_mac");
		}
	}
	dp_syn_policy_clear();
}
