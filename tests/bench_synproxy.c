// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench, second part: the SYN proxy's per-packet costs beside baselines
 * from the same run (this machine is shared and noisy).
 *
 * - SYN -> SYN-ACK: isnguard_xdp against an empty XDP_TX program and against
 *   bench_kernel_synack4, the same SYN-ACK built with the kernel's
 *   bpf_tcp_raw_gen_syncookie_ipv4 (tests/bpf/bench_syn.bpf.c). Each run
 *   starts from the SYN again through a restoring harness that tail-calls
 *   the program under test; the harness's cost (measured with an empty
 *   XDP_TX behind it) is subtracted.
 * - An established segment (ACK with timestamps) of a real loopback
 *   connection, to a protected and to an unprotected port, through the tc
 *   filter beside XDP (isnguard_tc_cookie) and the tc ingress program,
 *   against an empty tc program.
 * - A cookie ACK (with timestamps) to the protected port's listener from a
 *   tuple with no socket, through isnguard_tc_cookie: one whose cookie the
 *   reference made in the current slot, one made in the previous slot, and
 *   one with a bad MAC. A valid one ends in bpf_sk_assign_tcp_reqsk, which
 *   refuses a test run's skb (tests/test_synproxy.c says why): the cost is
 *   the check's and the kfunc's refusal, not a connection's.
 *
 * ns per run = wall time of one BPF_PROG_TEST_RUN of --repeat runs / repeat
 * (0.1 ns resolution); the median of --rounds interleaved rounds.
 *
 * Usage: bench_synproxy [--repeat N] [--rounds N] [--kernel-clock]
 * (--kernel-clock: as bench's, the test run's own clock instead of the wall's)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_syn.skel.h"
#include "isnguard.h"
#include "isnguard.skel.h"
#include "map_share.h"
#include "pkt.h"
#include "ref/cookie_ref.h"

#define MAX_ROUNDS 31
#define BENCH_PORT 18600	/* protected */
#define BENCH_OPEN_PORT 18601	/* not protected */
#define BENCH_COOKIE_SPORT 18602	/* the cookie ACKs' client port: no socket has it */
#define BENCH_CLIENT_ISN 0x1234567u

struct bcase {
	const char *name;
	int prog_fd;
	int target_fd;		/* harness cases: what bench_target holds, else -1 */
	bool tc;		/* a tc harness: the target goes in bench_target_tc */
	uint8_t frame[PKT_MAX_LEN];
	size_t len;
	double ns[MAX_ROUNDS];
	double median;
};

static struct bcase cases[24];
static size_t ncases;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static struct bcase *add(const char *name, struct bpf_program *prog, struct bpf_program *target,
			 const uint8_t *frame, size_t len)
{
	struct bcase *c = &cases[ncases++];

	c->name = name;
	c->prog_fd = bpf_program__fd(prog);
	c->target_fd = target ? bpf_program__fd(target) : -1;
	memcpy(c->frame, frame, len);
	c->len = len;
	return c;
}

static int listen_tcp(int family, uint16_t port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == 6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, family == 4 ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		 family == 4 ? sizeof(a4) : sizeof(a6)) || listen(fd, 64)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A real established loopback connection to port; *sport gets the client's port. */
static int connect_loopback(uint16_t port, uint16_t *sport)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen))
		return -1;
	*sport = ntohs(a.sin_port);
	return fd;
}

static size_t linux_syn(int family, uint8_t *buf)
{
	struct pkt_spec s = { 0 };

	memcpy(s.eth_src, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s.eth_dst, "\x02\x00\x00\x00\x00\x01", 6);
	pkt_set_addrs(&s, family == 6 ? "2001:db8::2" : "10.0.0.2",
		      family == 6 ? "2001:db8::1" : "10.0.0.1");
	s.sport = 40000;
	s.dport = BENCH_PORT;
	s.seq = 12345678;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, family == 6 ? 1440 : 1460);
	pkt_opt_sack_perm(&s);
	pkt_opt_timestamp(&s, 0x11223344, 0);
	pkt_opt_nop(&s);
	pkt_opt_wscale(&s, 7);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

static size_t loopback_ack(uint16_t sport, uint16_t dport, uint8_t *buf)
{
	struct pkt_spec s = { 0 };

	pkt_set_addrs(&s, "127.0.0.1", "127.0.0.1");
	s.sport = sport;
	s.dport = dport;
	s.seq = 1000;
	s.ack = 2000;
	s.flags = TH_ACK;
	s.window = 512;
	pkt_opt_nop(&s);
	pkt_opt_nop(&s);
	pkt_opt_timestamp(&s, 5, 6);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

/* The datapath's key (generation 0), which the reference makes the cookie ACKs' cookies with. */
static const struct isn_key bench_key = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };

/*
 * A cookie ACK from 127.0.0.1:BENCH_COOKIE_SPORT to the protected port, its
 * cookie made by the reference slots_back slots before now (Linux's options,
 * timestamps on), or, with bad_mac, one bit of it flipped.
 */
static size_t cookie_ack(uint32_t slots_back, bool bad_mac, uint8_t *buf)
{
	struct ref_cookie_opts o = { .wscale = 7, .wscale_ok = true, .sack_ok = true };
	struct timespec now;
	struct pkt_spec s = { 0 };
	struct flow_key fk = { .family = FLOW_FAMILY_IPV4 };
	uint32_t slot, cookie, tsval;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	slot = (uint32_t)((((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec) >>
			   COOKIE_SLOT_SHIFT) - slots_back);
	pkt_set_addrs(&s, "127.0.0.1", "127.0.0.1");
	memcpy(fk.local_addr, "\x7f\x00\x00\x01", 4);
	memcpy(fk.remote_addr, "\x7f\x00\x00\x01", 4);
	fk.local_port = htons(BENCH_PORT);
	fk.remote_port = htons(BENCH_COOKIE_SPORT);
	if (ref_cookie_make(&bench_key, &fk, BENCH_CLIENT_ISN, slot,
			    ref_cookie_opt_bits(ref_cookie_mss_index(4, 65483, true), &o, true), true,
			    &cookie, &tsval))
		return 0;
	s.sport = BENCH_COOKIE_SPORT;
	s.dport = BENCH_PORT;
	s.seq = BENCH_CLIENT_ISN + 1;
	s.ack = (cookie ^ (bad_mac ? 1u << 20 : 0)) + 1;
	s.flags = TH_ACK;
	s.window = 512;
	pkt_opt_nop(&s);
	pkt_opt_nop(&s);
	pkt_opt_timestamp(&s, 7, tsval);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

static int setup_datapath(struct isnguard **dp)
{
	struct synproxy_config sp = {
		.mode = SYNPROXY_ALWAYS,
		.flags = SYNPROXY_F_SACK | SYNPROXY_F_TIMESTAMPS | SYNPROXY_F_WSCALE |
			 SYNPROXY_F_ECN,
		.syn_threshold = 1000, .rcv_wscale = 7, .window = 65535,
	};
	struct isn_config cfg = { .hash = ISN_HASH_SIPHASH };
	uint32_t zero = 0, word = BENCH_PORT >> 6;
	uint64_t bits = 1ULL << (BENCH_PORT & 63);

	*dp = isnguard__open();
	if (!*dp || bpf_map__set_max_entries((*dp)->maps.isn_flows, 4096) ||
	    bpf_map__set_max_entries((*dp)->maps.isn_opening, 1024) || isnguard__load(*dp))
		return -1;
	if (bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_key), &zero, &bench_key, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_config), &zero, &cfg, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_synproxy_ports), &word, &bits,
				BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_synproxy), &zero, &sp, BPF_ANY))
		return -1;
	/* As attach does: flows enter isn_flows only with a slot of the sweeper's queue. */
	{
		unsigned char frame[64] = { 0 };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
			    .data_size_in = sizeof(frame), .repeat = 1);

		if (bpf_prog_test_run_opts(bpf_program__fd((*dp)->progs.isnguard_sweeper), &opts) ||
		    opts.retval)
			return -1;
	}
	return 0;
}

/*
 * isnguard_tc_ingress answering SYNs (`attach --syn-hook tc`): the object
 * loaded again with syn_at_tc set, on the first load's maps.
 */
static int setup_syn_tc(struct isnguard *dp, struct isnguard **syn_tc)
{
	struct bpf_program *p;

	*syn_tc = isnguard__open();
	if (!*syn_tc)
		return -1;
	(*syn_tc)->rodata->syn_at_tc = true;
	bpf_object__for_each_program(p, (*syn_tc)->obj)
		bpf_program__set_autoload(p, p == (*syn_tc)->progs.isnguard_tc_ingress);
	if (map_share((*syn_tc)->obj, dp->obj, NULL))
		return -1;
	return isnguard__load(*syn_tc);
}

/* A counter of the datapath, summed over CPUs (0 when it cannot be read). */
static uint64_t stat_sum(struct isnguard *dp, uint32_t stat)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t values[512], sum = 0;

	if (ncpus <= 0 || ncpus > 512 ||
	    bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_stats), &stat, values))
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += values[i];
	return sum;
}

/* --kernel-clock: BPF_PROG_TEST_RUN's own duration (whole ns, stopped while the run yields). */
static bool kernel_clock;

static int run_case(struct bcase *c, int target_map, int target_map_tc, unsigned long repeat,
		    double *ns)
{
	uint8_t out[PKT_MAX_LEN];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = c->frame,
		    .data_size_in = (uint32_t)c->len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = (int)repeat);
	uint32_t zero = 0;
	double t0;

	if (c->target_fd >= 0 && bpf_map_update_elem(c->tc ? target_map_tc : target_map, &zero,
						     &c->target_fd, BPF_ANY))
		return -errno;
	t0 = now_ns();
	if (bpf_prog_test_run_opts(c->prog_fd, &opts))
		return -errno;
	*ns = kernel_clock ? (double)opts.duration : (now_ns() - t0) / (double)repeat;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "repeat", required_argument, NULL, 'r' }, { "rounds", required_argument, NULL, 'n' },
		{ "kernel-clock", no_argument, NULL, 'k' }, { 0 },
	};
	unsigned long repeat = 1000000, rounds = 9;
	struct bcase *harness4, *harness6, *kernel4, *kernel4_nolookup, *isng4, *isng6, *empty_tx;
	struct bcase *harness4_tc, *harness6_tc, *isng4_tc, *isng6_tc;
	struct bcase *tc_empty, *tc_cookie_prot, *tc_cookie_open, *tc_ing_prot, *xdp_prot;
	struct bcase *ack_valid, *ack_valid_prev, *ack_bad;
	int listeners[3], conn_prot, conn_open, c;
	uint16_t sport_prot, sport_open;
	uint8_t frame[PKT_MAX_LEN];
	struct bench_syn *bs;
	struct isnguard *dp, *syn_tc;
	size_t len;

	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == 'r')
			repeat = strtoul(optarg, NULL, 10);
		else if (c == 'n')
			rounds = strtoul(optarg, NULL, 10);
		else if (c == 'k')
			kernel_clock = true;
		else
			return 2;
	}
	if (!repeat || !rounds || rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench_synproxy: --repeat > 0, --rounds 1-%d\n", MAX_ROUNDS);
		return 2;
	}
	listeners[0] = listen_tcp(4, BENCH_PORT);
	listeners[1] = listen_tcp(6, BENCH_PORT);
	listeners[2] = listen_tcp(4, BENCH_OPEN_PORT);
	conn_prot = connect_loopback(BENCH_PORT, &sport_prot);
	conn_open = connect_loopback(BENCH_OPEN_PORT, &sport_open);
	if (listeners[0] < 0 || listeners[1] < 0 || listeners[2] < 0 || conn_prot < 0 ||
	    conn_open < 0) {
		fprintf(stderr, "bench_synproxy: listen/connect on ports %u, %u: %s\n", BENCH_PORT,
			BENCH_OPEN_PORT, strerror(errno));
		return 1;
	}
	bs = bench_syn__open_and_load();
	if (!bs || setup_datapath(&dp) || setup_syn_tc(dp, &syn_tc)) {
		fprintf(stderr, "bench_synproxy: load the BPF objects: %s\n", strerror(errno));
		return 1;
	}
	len = linux_syn(4, frame);
	memcpy(bs->bss->syn4, frame, len);
	harness4 = add("harness, IPv4 SYN restored + tail call to empty XDP_TX",
		       bs->progs.bench_restore4, bs->progs.bench_empty_tx, frame, len);
	kernel4 = add("SYN-ACK, kernel bpf_tcp_raw_gen_syncookie_ipv4 (+ listener lookup)",
		      bs->progs.bench_restore4, bs->progs.bench_kernel_synack4, frame, len);
	kernel4_nolookup = add("SYN-ACK, kernel bpf_tcp_raw_gen_syncookie_ipv4, no lookup",
			       bs->progs.bench_restore4, bs->progs.bench_kernel_synack4_nolookup,
			       frame, len);
	isng4 = add("SYN-ACK, isnguard_xdp IPv4", bs->progs.bench_restore4, dp->progs.isnguard_xdp,
		    frame, len);
	empty_tx = add("empty XDP_TX, alone", bs->progs.bench_empty_tx, NULL, frame, len);
	harness4_tc = add("harness, IPv4 SYN restored + tail call to empty tc",
			  bs->progs.bench_restore4_tc, bs->progs.bench_empty_tc, frame, len);
	isng4_tc = add("SYN-ACK, isnguard_tc_ingress --syn-hook tc IPv4",
		       bs->progs.bench_restore4_tc, syn_tc->progs.isnguard_tc_ingress, frame, len);
	len = linux_syn(6, frame);
	memcpy(bs->bss->syn6, frame, len);
	harness6 = add("harness, IPv6 SYN restored + tail call to empty XDP_TX",
		       bs->progs.bench_restore6, bs->progs.bench_empty_tx, frame, len);
	isng6 = add("SYN-ACK, isnguard_xdp IPv6", bs->progs.bench_restore6, dp->progs.isnguard_xdp,
		    frame, len);
	harness6_tc = add("harness, IPv6 SYN restored + tail call to empty tc",
			  bs->progs.bench_restore6_tc, bs->progs.bench_empty_tc, frame, len);
	isng6_tc = add("SYN-ACK, isnguard_tc_ingress --syn-hook tc IPv6",
		       bs->progs.bench_restore6_tc, syn_tc->progs.isnguard_tc_ingress, frame, len);
	harness4_tc->tc = isng4_tc->tc = harness6_tc->tc = isng6_tc->tc = true;

	len = loopback_ack(sport_prot, BENCH_PORT, frame);
	tc_empty = add("empty tc", bs->progs.bench_empty_tc, NULL, frame, len);
	tc_cookie_prot = add("established ACK, protected port, isnguard_tc_cookie",
			     dp->progs.isnguard_tc_cookie, NULL, frame, len);
	tc_ing_prot = add("established ACK, protected port, isnguard_tc_ingress",
			  dp->progs.isnguard_tc_ingress, NULL, frame, len);
	xdp_prot = add("established ACK, protected port, isnguard_xdp (untracked)",
		       dp->progs.isnguard_xdp, NULL, frame, len);
	len = loopback_ack(sport_open, BENCH_OPEN_PORT, frame);
	tc_cookie_open = add("established ACK, unprotected port, isnguard_tc_cookie",
			     dp->progs.isnguard_tc_cookie, NULL, frame, len);
	len = cookie_ack(0, false, frame);
	ack_valid = add("cookie ACK, valid (this slot), isnguard_tc_cookie",
			dp->progs.isnguard_tc_cookie, NULL, frame, len);
	len = cookie_ack(1, false, frame);
	ack_valid_prev = add("cookie ACK, valid (previous slot), isnguard_tc_cookie",
			     dp->progs.isnguard_tc_cookie, NULL, frame, len);
	len = cookie_ack(0, true, frame);
	ack_bad = add("cookie ACK, bad MAC, isnguard_tc_cookie", dp->progs.isnguard_tc_cookie, NULL,
		      frame, len);
	if (!ack_valid->len || !ack_valid_prev->len || !ack_bad->len) {
		fprintf(stderr, "bench_synproxy: the reference cookie: no SipHash in libcrypto\n");
		return 1;
	}

	for (unsigned long r = 0; r < rounds; r++) {
		for (size_t i = 0; i < ncases; i++) {
			int err = run_case(&cases[i], bpf_map__fd(bs->maps.bench_target),
					   bpf_map__fd(bs->maps.bench_target_tc), repeat,
					   &cases[i].ns[r]);

			if (err) {
				fprintf(stderr, "bench_synproxy: %s: %s\n", cases[i].name,
					strerror(-err));
				return 1;
			}
		}
	}
	for (size_t i = 0; i < ncases; i++) {
		qsort(cases[i].ns, rounds, sizeof(double), cmp_double);
		cases[i].median = cases[i].ns[rounds / 2];
	}

	if (kernel4->median <= harness4->median + 1 || isng4->median <= harness4->median + 1 ||
	    isng4_tc->median <= harness4_tc->median + 1)
		fprintf(stderr, "bench_synproxy: warning: a SYN-ACK case costs no more than the "
			"harness: was the SYN answered?\n");
	/* Every SYN case answered: XDP's and tc's, IPv4 and IPv6 (the maps are shared). */
	if (stat_sum(dp, STAT_COOKIE_SENT) != 4 * rounds * repeat)
		fprintf(stderr, "bench_synproxy: warning: %llu cookie SYN-ACKs sent of %lu: was every "
			"SYN answered?\n", (unsigned long long)stat_sum(dp, STAT_COOKIE_SENT),
			4 * rounds * repeat);
	/* Both valid cases count (the previous slot's too, unless a slot ended), the bad one too. */
	if (stat_sum(dp, STAT_COOKIE_ACK_VALID) < rounds * repeat ||
	    stat_sum(dp, STAT_COOKIE_BAD_MAC) != rounds * repeat)
		fprintf(stderr, "bench_synproxy: warning: cookie ACKs valid %llu, bad MAC %llu of %lu "
			"each: were they checked?\n",
			(unsigned long long)stat_sum(dp, STAT_COOKIE_ACK_VALID),
			(unsigned long long)stat_sum(dp, STAT_COOKIE_BAD_MAC), rounds * repeat);
	printf("\nSYN proxy, ns per packet (median of %lu rounds of %lu runs)\n", rounds, repeat);
	printf("%-70s %9s\n", "case", "ns");
	for (size_t i = 0; i < ncases; i++)
		printf("%-70s %9.1f\n", cases[i].name, cases[i].median);
	printf("\nSYN -> SYN-ACK, harness subtracted:\n");
	printf("  empty XDP_TX                      %7.1f ns\n", empty_tx->median);
	printf("  kernel helper SYN-ACK (IPv4)      %7.1f ns  (%.1f without the listener lookup)\n",
	       kernel4->median - harness4->median, kernel4_nolookup->median - harness4->median);
	printf("  isnguard SYN-ACK (IPv4)           %7.1f ns  (%.2fx the kernel helper's)\n",
	       isng4->median - harness4->median,
	       (isng4->median - harness4->median) / (kernel4->median - harness4->median));
	printf("  isnguard SYN-ACK (IPv6)           %7.1f ns\n", isng6->median - harness6->median);
	printf("  isnguard SYN-ACK at tc (IPv4)     %7.1f ns  (--syn-hook tc; over a tc harness of %.1f)\n",
	       isng4_tc->median - harness4_tc->median, harness4_tc->median);
	printf("  isnguard SYN-ACK at tc (IPv6)     %7.1f ns\n", isng6_tc->median - harness6_tc->median);
	printf("Established segment, over an empty tc program (%.1f ns):\n", tc_empty->median);
	printf("  protected port, tc beside XDP     %7.1f ns\n",
	       tc_cookie_prot->median - tc_empty->median);
	printf("  unprotected port, tc beside XDP   %7.1f ns\n",
	       tc_cookie_open->median - tc_empty->median);
	printf("  protected port, --ingress tc      %7.1f ns\n",
	       tc_ing_prot->median - tc_empty->median);
	printf("  protected port, XDP (no flow)     %7.1f ns (absolute)\n", xdp_prot->median);
	printf("Cookie ACK to the listener, over an empty tc program:\n");
	printf("  valid, made this slot             %7.1f ns\n", ack_valid->median - tc_empty->median);
	printf("  valid, made the slot before       %7.1f ns\n",
	       ack_valid_prev->median - tc_empty->median);
	printf("  bad MAC                           %7.1f ns\n", ack_bad->median - tc_empty->median);
	close(conn_prot);
	close(conn_open);
	for (int i = 0; i < 3; i++)
		close(listeners[i]);
	isnguard__destroy(syn_tc);
	isnguard__destroy(dp);
	bench_syn__destroy(bs);
	return 0;
}
