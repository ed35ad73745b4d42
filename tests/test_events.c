// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The datapath's events (bpf/events.h) as its readers get them from the
 * ring buffers: auto mode's switch with the flood it starts or ends and
 * the rate that decided, sampled drops with reason and tuple at most
 * ISN_EVENT_DROPS_PER_SEC a second on a CPU, a full flow table once a
 * second with its limit, a key rotation once per generation, nothing made while no reader is there, and a full ring
 * counted in events_lost.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_fixture.h"
#include "harness.h"
#include "pkt.h"

#define EV_PORT 18543		/* protected */
#define EV_CLIENT4 "10.0.9.2"
#define EV_HOST4 "10.0.9.1"
#define EV_CLIENT_PORT 40405
#define EV_MAX 4096

struct event_log {
	struct isn_event ev[EV_MAX];
	unsigned int n;
};

static int log_event(void *ctx, void *data, size_t size)
{
	struct event_log *log = ctx;

	if (size == sizeof(struct isn_event) && log->n < EV_MAX)
		memcpy(&log->ev[log->n++], data, size);
	return 0;
}

/* What the monitor's ring holds now, in order; false (and a failed test) if it cannot be read. */
static bool events_take(struct event_log *log)
{
	int fd = dp_map_fd(ISN_MAP_EVENTS);
	struct ring_buffer *rb;

	log->n = 0;
	if (fd < 0)
		return false;
	rb = ring_buffer__new(fd, log_event, log, NULL);
	if (!rb) {
		FAIL("ring_buffer__new: %s", strerror(errno));
		return false;
	}
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return true;
}

/* The monitor's ring gets events (this process its reader), or none does. */
static bool events_reader(bool on)
{
	struct isn_event_state es = { 0 };
	int fd = dp_map_fd(ISN_MAP_EVENT_STATE);
	uint32_t zero = 0;

	if (fd < 0 || bpf_map_lookup_elem(fd, &zero, &es)) {
		FAIL("read %s: %s", ISN_MAP_EVENT_STATE, strerror(errno));
		return false;
	}
	es.reader_pid[ISN_EVENT_READER_MONITOR] = on ? (uint32_t)getpid() : 0;
	memset(es.table_full_ns, 0, sizeof(es.table_full_ns));	/* each test's first is reported */
	es.reader_pid[ISN_EVENT_READER_EXPORTER] = 0;
	if (bpf_map_update_elem(fd, &zero, &es, BPF_ANY)) {
		FAIL("write %s: %s", ISN_MAP_EVENT_STATE, strerror(errno));
		return false;
	}
	return true;
}

static uint64_t mono_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t ev_syn(uint8_t *frame)
{
	struct pkt_spec s;

	memset(&s, 0, sizeof(s));
	memcpy(s.eth_src, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s.eth_dst, "\x02\x00\x00\x00\x00\x01", 6);
	pkt_set_addrs(&s, EV_CLIENT4, EV_HOST4);
	s.sport = EV_CLIENT_PORT;
	s.dport = EV_PORT;
	s.seq = 0x3c1a5e77u;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, 1460);
	return pkt_build(&s, frame, PKT_MAX_LEN);
}

/* A listener on EV_PORT, so SYNs get as far as their checksums (kept for the run). */
static bool ev_listen(void)
{
	static int fd = -1;
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(EV_PORT) };
	int one = 1;

	if (fd >= 0)
		return true;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a4, sizeof(a4)) || listen(fd, 16)) {
		FAIL("listen on port %u: %s", EV_PORT, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
		return false;
	}
	return true;
}

static bool ev_setup(enum synproxy_mode mode)
{
	struct synproxy_config cfg = {
		.mode = mode,
		.flags = SYNPROXY_F_SACK | SYNPROXY_F_TIMESTAMPS | SYNPROXY_F_WSCALE,
		.syn_threshold = 100,
		.rcv_wscale = 7,
		.window = 64240,
	};
	struct isn_key key;
	struct event_log log;

	if (!dp_setup() || !ev_listen())
		return false;
	dp_test_key(&key);
	if (!dp_set_key_slot(0, &key) || !dp_set_key_gen(0, 0) || !dp_set_synproxy(&cfg, EV_PORT) ||
	    !events_reader(true))
		return false;
	return events_take(&log);	/* what earlier tests left */
}

/* One SYN to EV_PORT through XDP with the port's window set to rate first. */
static bool ev_syn_with_window(const struct syn_rate *rate)
{
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN];
	size_t in_len = ev_syn(in), out_len;
	uint32_t verdict;

	return dp_set_syn_rate(EV_PORT, rate) &&
	       dp_run(DP_XDP_INGRESS, in, in_len, out, &out_len, &verdict);
}

/*
 * rate: the window's SYNs over its two seconds; the run comes a little
 * later (ms on a slow guest), so the window is a little longer and the rate
 * may read up to 5% lower.
 */
static void assert_rate_event(const struct isn_event *ev, uint32_t type, uint32_t rate,
			      const char *what)
{
	test_case_begin("%s", what);
	ASSERT_EQ(ev->type, type, "type");
	ASSERT_EQ(ntohs(ev->dport), EV_PORT, "port");
	if (!ASSERT_TRUE(ev->rate <= rate && ev->rate >= rate - rate / 20,
			 "rate (SYNs a second in the window) within 5% below the window's"))
		test_log("rate %u, the window's %u", ev->rate, rate);
	ASSERT_EQ(ev->threshold, 100, "threshold");
	ASSERT_TRUE(ev->ts_ns > 0, "stamped");
	test_case_end();
}

TEST(test_events_auto_switch_reports_the_flood_and_the_switch_with_its_rate)
{
	struct event_log *log = calloc(1, sizeof(*log));
	struct syn_rate rate;

	if (!log || !ev_setup(SYNPROXY_AUTO))
		goto out;
	/* 300 SYNs in the last two seconds, 150/s: above 100, a flood; cookies on. */
	rate = (struct syn_rate){ .window_start_ns = mono_coarse_ns() - 2000000000ULL,
				  .last_syn_ns = mono_coarse_ns(), .syns = 300 };
	if (!ev_syn_with_window(&rate) || !events_take(log))
		goto out;
	ASSERT_EQ(log->n, 2, "events at the window that switched cookies on");
	if (log->n == 2) {
		assert_rate_event(&log->ev[0], ISN_EVENT_FLOOD_START, 150, "flood_start first");
		assert_rate_event(&log->ev[1], ISN_EVENT_AUTO_ON, 150, "then auto_on");
	}
	/* 120 in two seconds, 60/s: above half the threshold, nothing changes, no event. */
	rate = (struct syn_rate){ .window_start_ns = mono_coarse_ns() - 2000000000ULL,
				  .last_syn_ns = mono_coarse_ns(), .syns = 120, .active = 1 };
	if (!ev_syn_with_window(&rate) || !events_take(log))
		goto out;
	ASSERT_EQ(log->n, 0, "events while the port stays on");
	/* 80 in two seconds, 40/s: below half, off; the flood is over. */
	rate = (struct syn_rate){ .window_start_ns = mono_coarse_ns() - 2000000000ULL,
				  .last_syn_ns = mono_coarse_ns(), .syns = 80, .active = 1 };
	if (!ev_syn_with_window(&rate) || !events_take(log))
		goto out;
	ASSERT_EQ(log->n, 2, "events at the window that switched cookies off");
	if (log->n == 2) {
		assert_rate_event(&log->ev[0], ISN_EVENT_AUTO_OFF, 40, "auto_off first");
		assert_rate_event(&log->ev[1], ISN_EVENT_FLOOD_END, 40, "then flood_end");
	}
out:
	events_reader(false);
	free(log);
}

TEST(test_events_none_made_without_a_reader)
{
	struct event_log *log = calloc(1, sizeof(*log));
	struct syn_rate rate;
	uint64_t lost;

	if (!log || !ev_setup(SYNPROXY_AUTO) || !events_reader(false))
		goto out;
	lost = dp_stat(STAT_EVENTS_LOST);
	rate = (struct syn_rate){ .window_start_ns = mono_coarse_ns() - 2000000000ULL,
				  .last_syn_ns = mono_coarse_ns(), .syns = 300 };
	if (!ev_syn_with_window(&rate) || !events_take(log))
		goto out;
	ASSERT_EQ(dp_stat(STAT_AUTO_ON) > 0, 1, "the port switched on");
	ASSERT_EQ(log->n, 0, "events in the ring");
	ASSERT_EQ(dp_stat(STAT_EVENTS_LOST), lost, "events_lost");
out:
	free(log);
}

TEST(test_events_drops_sampled_with_reason_and_tuple_at_most_n_a_second)
{
	struct event_log *log = calloc(1, sizeof(*log));
	uint8_t in[PKT_MAX_LEN];
	struct isn_event_drops *budget = NULL;
	struct pkt_layout lay;
	uint32_t zero = 0, verdict, bad_runs = 200;
	int ncpus = libbpf_num_possible_cpus(), fd;
	uint64_t bad;
	size_t in_len;
	uint8_t client[4], host[4];

	if (!log || ncpus <= 0 || !ev_setup(SYNPROXY_ALWAYS))
		goto out;
	in_len = ev_syn(in);
	if (!ASSERT_TRUE(pkt_parse(in, in_len, &lay), "SYN parsed"))
		goto out;
	in[lay.l4_off + 16] ^= 0x5a;	/* a bad TCP checksum: syn_bad_checksum, dropped */
	/* Every CPU's second starts now, nothing sent: the run has a whole budget. */
	budget = calloc((size_t)ncpus, sizeof(*budget));
	fd = dp_map_fd(ISN_MAP_EVENT_DROPS);
	if (!budget || fd < 0)
		goto out;
	for (int c = 0; c < ncpus; c++)
		budget[c].window_start_ns = mono_coarse_ns();
	if (!ASSERT_OK(bpf_map_update_elem(fd, &zero, budget, BPF_ANY), "reset the drop budget"))
		goto out;
	bad = dp_stat(STAT_SYN_BAD_CHECKSUM);
	if (!dp_run_repeat(DP_XDP_INGRESS, in, in_len, bad_runs, &verdict) || !events_take(log))
		goto out;
	ASSERT_EQ(verdict, 1, "XDP_DROP");
	ASSERT_EQ(dp_stat(STAT_SYN_BAD_CHECKSUM), bad + bad_runs, "syn_bad_checksum");
	ASSERT_EQ(log->n, ISN_EVENT_DROPS_PER_SEC, "drop events from one CPU in one second");
	inet_pton(AF_INET, EV_CLIENT4, client);
	inet_pton(AF_INET, EV_HOST4, host);
	for (unsigned int i = 0; i < log->n; i++) {
		const struct isn_event *ev = &log->ev[i];

		test_case_begin("drop event %u", i);
		ASSERT_EQ(ev->type, ISN_EVENT_DROP, "type");
		ASSERT_EQ(ev->reason, STAT_SYN_BAD_CHECKSUM, "reason");
		ASSERT_EQ(ev->family, FLOW_FAMILY_IPV4, "family");
		ASSERT_EQ(ev->proto, IPPROTO_TCP, "proto");
		ASSERT_MEMEQ(ev->saddr, client, 4, "source address");
		ASSERT_MEMEQ(ev->daddr, host, 4, "destination address");
		ASSERT_EQ(ntohs(ev->sport), EV_CLIENT_PORT, "source port");
		ASSERT_EQ(ntohs(ev->dport), EV_PORT, "destination port");
		test_case_end();
	}
out:
	events_reader(false);
	free(budget);
	free(log);
}

/* The host's SYN to a client, as tc egress sees it: a new connection. */
static size_t ev_host_syn(uint8_t *frame, uint16_t sport)
{
	struct pkt_spec s;

	memset(&s, 0, sizeof(s));
	pkt_set_addrs(&s, EV_HOST4, EV_CLIENT4);
	s.sport = sport;
	s.dport = 443;
	s.seq = 0x11111111u;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, 1460);
	return pkt_build(&s, frame, PKT_MAX_LEN);
}

TEST(test_events_a_full_flow_table_reported_once_a_second_with_its_limit)
{
	enum { MAX_FLOWS = 5 };
	struct event_log *log = calloc(1, sizeof(*log));
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN];
	int64_t count = 0, full_count = MAX_FLOWS;
	uint32_t zero = 0, verdict;
	size_t in_len, out_len;
	uint64_t full;
	int fd = -1;

	if (!log || !ev_setup(SYNPROXY_OFF))
		goto out;
	/* As many connections as --max-flows says: the next is refused an entry. */
	fd = dp_map_fd(ISN_MAP_FLOW_COUNT);
	if (fd < 0 || !ASSERT_OK(bpf_map_lookup_elem(fd, &zero, &count), "read isn_flow_count") ||
	    !ASSERT_OK(bpf_map_update_elem(fd, &zero, &full_count, BPF_ANY), "fill isn_flow_count") ||
	    !dp_set_max_flows(MAX_FLOWS))
		goto restore;
	full = dp_stat(STAT_PASS_TABLE_FULL);
	for (uint16_t port = 43210; port < 43213; port++) {
		in_len = ev_host_syn(in, port);
		if (!dp_run(DP_TC_EGRESS, in, in_len, out, &out_len, &verdict))
			goto restore;
	}
	ASSERT_EQ(dp_stat(STAT_PASS_TABLE_FULL), full + 3, "syn_unprotected_table_full");
	if (!events_take(log))
		goto restore;
	ASSERT_EQ(log->n, 1, "events for 3 refusals within a second");
	if (log->n == 1) {
		ASSERT_EQ(log->ev[0].type, ISN_EVENT_TABLE_FULL, "type");
		ASSERT_EQ(log->ev[0].reason, ISN_TABLE_FLOWS, "table");
		ASSERT_EQ(log->ev[0].threshold, MAX_FLOWS, "limit (--max-flows)");
	}
restore:
	if (fd >= 0)
		bpf_map_update_elem(fd, &zero, &count, BPF_ANY);
	dp_restore_config();
out:
	events_reader(false);
	free(log);
}

static bool run_event_key(void)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	int fd = dp_prog_fd_by_name("isnguard_event_key");

	return fd >= 0 && ASSERT_OK(bpf_prog_test_run_opts(fd, &opts), "run isnguard_event_key") &&
	       ASSERT_EQ(opts.retval, 0, "isnguard_event_key's return");
}

TEST(test_events_key_rotation_reported_once_per_generation)
{
	struct event_log *log = calloc(1, sizeof(*log));

	if (!log || !ev_setup(SYNPROXY_ALWAYS) || !dp_set_key_gen(7, 1) || !run_event_key() ||
	    !events_take(log))
		goto out;
	ASSERT_EQ(log->n, 1, "events after generation 7 was written");
	if (log->n == 1) {
		ASSERT_EQ(log->ev[0].type, ISN_EVENT_KEY_ROTATED, "type");
		ASSERT_EQ(log->ev[0].key_gen, 7, "key generation");
		ASSERT_EQ(log->ev[0].ifindex, 0, "no interface's");
	}
	if (!run_event_key() || !events_take(log))
		goto out;
	ASSERT_EQ(log->n, 0, "events after a run with the same generation");
out:
	events_reader(false);
	dp_set_key_gen(0, 0);
	free(log);
}

TEST(test_events_a_full_ring_counts_events_lost)
{
	struct event_log *log = calloc(1, sizeof(*log));
	unsigned int fits = ISN_EVENTS_BYTES / (sizeof(struct isn_event) + 8), made = 0;
	uint64_t lost;

	if (!log || !ev_setup(SYNPROXY_AUTO))
		goto out;
	lost = dp_stat(STAT_EVENTS_LOST);
	/* Switches on and off, two events each, until more were made than the ring holds. */
	while (made < fits + 100) {
		struct syn_rate rate = { .window_start_ns = mono_coarse_ns() - 2000000000ULL,
					 .last_syn_ns = mono_coarse_ns(),
					 .syns = made / 2 % 2 ? 0 : 300, .active = made / 2 % 2 };

		if (!ev_syn_with_window(&rate))
			goto out;
		made += 2;
	}
	if (!events_take(log))
		goto out;
	ASSERT_TRUE(log->n > 0 && log->n <= fits, "the ring held what fits");
	ASSERT_EQ(dp_stat(STAT_EVENTS_LOST) - lost, made - log->n, "events_lost: made less read");
out:
	events_reader(false);
	free(log);
}
