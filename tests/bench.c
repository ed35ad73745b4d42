// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench: ns per call through BPF_PROG_TEST_RUN, always beside baselines
 * measured in the same run (empty XDP and tc programs, the kernel's
 * bpf_ktime_get_ns() helper), because this machine is shared and noisy.
 * Rounds are interleaved across all cases and the median kept.
 *
 * Two tables: the keyed ISN functions (tests/bpf/isn_test.bpf.c), and the
 * datapath itself (bpf/isnguard.bpf.c) per packet on crafted frames: the
 * established-flow paths of XDP and tc, and the SYN rewrite path.
 *
 * Usage: bench [--repeat N] [--rounds N] [--only NAME,...] [--kernel-clock] [--json]
 * --only measures just the named cases (see --json for names) beside the
 * baselines and the floor, e.g. to profile one path with perf.
 * --kernel-clock takes each run's time from BPF_PROG_TEST_RUN's own clock
 * (whole ns, stopped while the run yields the CPU to another task) instead
 * of the wall clock: steadier when other work shares the CPUs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_run.h"
#include "isnguard.h"
#include "isn_test.skel.h"
#include "isnguard.skel.h"
#include "json_writer.h"
#include "pkt.h"

#define MAX_ROUNDS 31
/* The SYN paths change what the next run of the same frame would do: timed one run at a time. */
#define SYN_RUNS_PER_ROUND 20000
/* Fresh-flow SYN runs per round: each opens a flow, all fit in isn_opening (no eviction). */
#define FRESH_RUNS 8192
#define FRESH_PORT_BASE 10000

enum bench_table { TABLE_ISN, TABLE_DATAPATH };

struct bench_case {
	const char *name;
	const char *what;
	enum bench_table table;
	struct bpf_program *prog;
	int family;			/* ISN cases: the flow key's family */
	uint8_t frame[PKT_MAX_LEN];	/* datapath cases: the input frame */
	size_t frame_len;
	bool single_runs;		/* timed one run at a time (SYN_RUNS_PER_ROUND of them) */
	bool new_flow_each_run;		/* SYN rewrite: delete the flow before every run */
	struct flow_key flow;		/* ... this one */
	/*
	 * Fresh-flow cases: prog is bench_syn_fresh_flow, which tail-calls
	 * this (FRESH_RUNS runs, each a connection never seen); measured
	 * over the harness row, which tail-calls the empty tc program.
	 */
	struct bpf_program *target;
	const char *harness;
	bool skipped;			/* left out by --only */
	double ns[MAX_ROUNDS];
	double median;
	double x_floor;			/* datapath rows: median of the per-round ratios, or 0 */
};

struct bench {
	struct isn_test *fn;
	struct isnguard *dp;
	struct bench_case cases[32];
	size_t ncases;
	unsigned long repeat, rounds;
	const char *only;		/* --only: comma-separated case names, or NULL */
	bool kernel_clock;		/* --kernel-clock: the test run's own duration */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(buf, len, "%s", colon + 2);
			buf[strcspn(buf, "\n")] = '\0';
			break;
		}
	}
	fclose(f);
}

static struct bench_case *add_case(struct bench *b, enum bench_table table, const char *name,
				   const char *what, struct bpf_program *prog)
{
	struct bench_case *c = &b->cases[b->ncases++];

	memset(c, 0, sizeof(*c));
	c->table = table;
	c->name = name;
	c->what = what;
	c->prog = prog;
	c->family = 4;
	return c;
}

/* --- the ISN functions -------------------------------------------------- */

static void set_isn_flow(struct isn_test *fn, int family)
{
	struct flow_key *fk = &fn->bss->in_flow;

	memset(fk, 0, sizeof(*fk));
	fk->family = (uint8_t)family;
	for (int i = 0; i < (family == 4 ? 4 : 16); i++) {
		fk->local_addr[i] = (uint8_t)(i + 1);
		fk->remote_addr[i] = (uint8_t)(0xf0 - i);
	}
	fk->local_port = htons(80);
	fk->remote_port = htons(40000);
}

static void add_isn_cases(struct bench *b)
{
	struct isn_test *fn = b->fn;

	for (int i = 0; i < ISN_KEY_LEN; i++)
		fn->bss->in_key.bytes[i] = (uint8_t)(0x3c ^ i * 7);
	add_case(b, TABLE_ISN, "empty", "empty XDP program (baseline)", fn->progs.bench_empty);
	add_case(b, TABLE_ISN, "ktime", "bpf_ktime_get_ns() -> M (kernel helper)",
		 fn->progs.bench_ktime);
	add_case(b, TABLE_ISN, "f_none", "F none", fn->progs.bench_f_none);
	add_case(b, TABLE_ISN, "f_siphash_ipv4", "F siphash, IPv4 (12-byte T)",
		 fn->progs.bench_f_siphash);
	add_case(b, TABLE_ISN, "f_siphash_ipv6", "F siphash, IPv6 (36-byte T)",
		 fn->progs.bench_f_siphash)->family = 6;
	add_case(b, TABLE_ISN, "f_md5_ipv4", "F md5, IPv4 (28-byte T||K)", fn->progs.bench_f_md5);
	add_case(b, TABLE_ISN, "f_md5_ipv6", "F md5, IPv6 (52-byte T||K)",
		 fn->progs.bench_f_md5)->family = 6;
	add_case(b, TABLE_ISN, "isn_siphash_ipv4", "ISN siphash, IPv4 (F + M)",
		 fn->progs.bench_isn_siphash);
}

/* --- the datapath --------------------------------------------------------- */

#define HOST "10.0.0.1"
#define PEER "10.0.0.2"
#define HOST_ISN 0x10000000u

static void host_spec(struct pkt_spec *s, uint16_t lport, uint8_t flags, uint32_t seq)
{
	pkt_tcp_segment(s, HOST, PEER, lport, 443, flags, seq, flags & TH_ACK ? 0x20000000 : 0);
	s->window = 501;
}

static void peer_spec(struct pkt_spec *s, uint16_t lport, uint8_t flags, uint32_t ack)
{
	pkt_tcp_segment(s, PEER, HOST, 443, lport, flags, 0x20000000, ack);
	s->window = 1000;
}

/* A full-sized data segment of the host, timestamps as Linux lays them out. */
static void host_data_spec(struct pkt_spec *s, uint16_t lport)
{
	static const uint8_t payload[1400];

	host_spec(s, lport, TH_ACK | TH_PSH, HOST_ISN + 1 + 100000);
	pkt_opt_linux_ack(s, 7, 8, NULL, 0);
	s->payload = payload;
	s->payload_len = sizeof(payload);
}

static void syn_options(struct pkt_spec *s)
{
	pkt_opt_mss(s, 1460);
	pkt_opt_sack_perm(s);
	pkt_opt_timestamp(s, 1, 0);
	pkt_opt_nop(s);
	pkt_opt_wscale(s, 7);
}

static void flow_of(const struct pkt_spec *host_seg, struct flow_key *fk)
{
	memset(fk, 0, sizeof(*fk));
	fk->family = FLOW_FAMILY_IPV4;
	memcpy(fk->local_addr, host_seg->src, 4);
	memcpy(fk->remote_addr, host_seg->dst, 4);
	fk->local_port = htons(host_seg->sport);
	fk->remote_port = htons(host_seg->dport);
}

static int set_dp_config(struct isnguard *dp, enum isn_hash hash)
{
	struct isn_config cfg = {
		.hash = hash,
		.timeout_opening = ISN_DEFAULT_TIMEOUT_OPENING,
		.timeout_established = ISN_DEFAULT_TIMEOUT_ESTABLISHED,
		.timeout_closing = ISN_DEFAULT_TIMEOUT_CLOSING,
		.timeout_closed = ISN_DEFAULT_TIMEOUT_CLOSED,
	};
	uint32_t zero = 0;

	return bpf_map_update_elem(bpf_map__fd(dp->maps.isn_config), &zero, &cfg, BPF_ANY);
}

/*
 * Opens a flow as a connection would: the host's SYN through egress, the
 * peer's SYN-ACK through ingress, which moves it to the flow table. Returns
 * the wire ISN it got.
 */
static int open_bench_flow(struct isnguard *dp, uint16_t lport, uint32_t *wire_isn)
{
	struct flow_state st;
	struct flow_key fk;
	struct pkt_spec s;
	uint8_t frame[PKT_MAX_LEN];
	size_t len;
	int err;

	host_spec(&s, lport, TH_SYN, HOST_ISN);
	syn_options(&s);
	len = pkt_build(&s, frame, sizeof(frame));
	err = bpf_run(dp->progs.isnguard_tc_egress, frame, len, 1, NULL, NULL);
	if (err)
		return err;
	flow_of(&s, &fk);
	if (bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_opening), &fk, &st))
		return -errno;
	*wire_isn = st.wire_isn;
	peer_spec(&s, lport, TH_SYN | TH_ACK, st.wire_isn + 1);
	syn_options(&s);
	len = pkt_build(&s, frame, sizeof(frame));
	err = bpf_run(dp->progs.isnguard_xdp, frame, len, 1, NULL, NULL);
	if (err)
		return err;
	return bpf_map_lookup_elem(bpf_map__fd(dp->maps.isn_flows), &fk, &st) ? -errno : 0;
}

/*
 * A connection of the translating SYN proxy, as its handshake leaves it
 * (tests/test_synproxy.c walks that handshake): seq and timestamp deltas,
 * and a server whose window shift (2) differs from the one the client was
 * told (7), so every window it sends is rewritten.
 */
static int plant_proxied_flow(struct isnguard *dp, uint16_t lport)
{
	struct flow_state st = {
		.seq_delta = 0x12345678,
		.host_isn = HOST_ISN,
		.wire_isn = HOST_ISN + 0x12345678,
		.flags = FLOW_F_PROXIED | FLOW_F_PASSIVE_OPEN | FLOW_F_ESTABLISHED |
			 FLOW_F_HOST_ACKED | FLOW_F_PROXY_TS,
		.host_ack = 0x20000000,
		.ts_delta = 0x5000,
		.wscale_host = 2,
		.wscale_wire = 7,
		.peer_wscale_wire = 7,
		.peer_wscale_host = 7,
	};
	struct flow_key fk;
	struct pkt_spec s;

	host_spec(&s, lport, TH_ACK, HOST_ISN);
	flow_of(&s, &fk);
	return bpf_map_update_elem(bpf_map__fd(dp->maps.isn_flows), &fk, &st, BPF_ANY) ? -errno : 0;
}

/* The bench flow in the floor program's table, with the datapath's delta. */
static int set_floor_flow(struct bench *b, uint16_t lport, uint32_t delta)
{
	struct flow_key fk;
	struct pkt_spec s;

	host_spec(&s, lport, TH_ACK, HOST_ISN);
	flow_of(&s, &fk);
	return bpf_map_update_elem(bpf_map__fd(b->fn->maps.floor_flows), &fk, &delta, BPF_ANY)
		       ? -errno : 0;
}

static double wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void frame_case(struct bench *b, const char *name, const char *what,
		       struct bpf_program *prog, const struct pkt_spec *s)
{
	struct bench_case *c = add_case(b, TABLE_DATAPATH, name, what, prog);

	c->frame_len = pkt_build(s, c->frame, sizeof(c->frame));
}

static int add_datapath_cases(struct bench *b)
{
	const uint32_t sack[3][2] = { { 1000, 2448 }, { 5000, 6448 }, { 9000, 10448 } };
	struct isnguard *dp = b->dp;
	struct isn_key key;
	struct pkt_spec s;
	struct bench_case *c;
	uint32_t zero = 0, wire = 0;
	int err;

	for (int i = 0; i < ISN_KEY_LEN; i++)
		key.bytes[i] = (uint8_t)(0xa5 ^ i);
	if (bpf_map_update_elem(bpf_map__fd(dp->maps.isn_key), &zero, &key, BPF_ANY) ||
	    set_dp_config(dp, ISN_HASH_SIPHASH))
		return -errno;
	err = open_bench_flow(dp, 50000, &wire);
	if (err)
		return err;

	add_case(b, TABLE_DATAPATH, "empty_xdp", "empty XDP program (baseline)",
		 b->fn->progs.bench_empty);
	add_case(b, TABLE_DATAPATH, "empty_tc", "empty tc program (baseline)",
		 b->fn->progs.bench_empty_tc);
	err = set_floor_flow(b, 50000, wire - HOST_ISN);
	if (err)
		return err;
	c = add_case(b, TABLE_DATAPATH, "empty_tc_single", "empty tc program, single runs (baseline)",
		     b->fn->progs.bench_empty_tc);
	c->single_runs = true;
	c->frame_len = pkt_build(&(struct pkt_spec){ .family = 4 }, c->frame, sizeof(c->frame));

	peer_spec(&s, 50000, TH_ACK, wire + 1 + 100000);
	pkt_opt_linux_ack(&s, 5, 6, NULL, 0);
	frame_case(b, "floor", "floor: parse, LRU lookup, ack -= delta (XDP)",
		   b->fn->progs.bench_floor, &s);
	frame_case(b, "xdp_ack", "XDP ingress: established ACK (ack -= delta)",
		   dp->progs.isnguard_xdp, &s);
	frame_case(b, "tc_ingress_ack", "tc ingress: established ACK (ack -= delta)",
		   dp->progs.isnguard_tc_ingress, &s);
	frame_case(b, "tc_cookie_ack_proxy_never_on",
		   "tc ingress beside XDP: any packet, SYN proxy never on",
		   dp->progs.isnguard_tc_cookie, &s);

	peer_spec(&s, 50000, TH_ACK, wire + 1 + 100000);
	pkt_opt_linux_ack(&s, 5, 6, sack, 3);
	frame_case(b, "xdp_ack_sack3", "XDP ingress: ACK with 3 SACK blocks",
		   dp->progs.isnguard_xdp, &s);

	err = plant_proxied_flow(dp, 50010);
	if (err)
		return err;
	peer_spec(&s, 50010, TH_ACK, HOST_ISN + 0x12345678 + 1 + 100000);
	pkt_opt_linux_ack(&s, 5, 6, NULL, 0);
	frame_case(b, "xdp_ack_proxied",
		   "XDP ingress: proxied flow ACK (+ TSecr)",
		   dp->progs.isnguard_xdp, &s);

	peer_spec(&s, 50001, TH_ACK, 12345);
	frame_case(b, "xdp_untracked", "XDP ingress: TCP of no flow (lookup miss)",
		   dp->progs.isnguard_xdp, &s);

	peer_spec(&s, 50003, TH_SYN, 0);
	syn_options(&s);
	frame_case(b, "xdp_peer_syn", "XDP ingress: the peer's SYN (no lookup)",
		   dp->progs.isnguard_xdp, &s);

	host_data_spec(&s, 50000);
	frame_case(b, "tc_egress_data", "tc egress: established data (seq += delta)",
		   dp->progs.isnguard_tc_egress, &s);

	host_data_spec(&s, 50010);
	frame_case(b, "tc_egress_data_proxied",
		   "tc egress: proxied flow data (+ TSval, window)",
		   dp->progs.isnguard_tc_egress, &s);

	/*
	 * Single runs, each on the SYN as the host sent it: repeated, the
	 * second run would see the wire ISN the first wrote, a new host ISN,
	 * and start a new connection on the tuple (ending the established one
	 * the other cases use).
	 */
	host_spec(&s, 50000, TH_SYN, HOST_ISN);
	syn_options(&s);
	frame_case(b, "tc_egress_syn_retransmit", "tc egress: SYN retransmission (flow established)",
		   dp->progs.isnguard_tc_egress, &s);
	b->cases[b->ncases - 1].single_runs = true;

	host_spec(&s, 50002, TH_SYN, HOST_ISN);
	syn_options(&s);
	frame_case(b, "tc_egress_syn_new_flow", "tc egress: SYN rewrite, new flow (siphash)",
		   dp->progs.isnguard_tc_egress, &s);
	c = &b->cases[b->ncases - 1];
	c->single_runs = c->new_flow_each_run = true;
	flow_of(&s, &c->flow);

	/* The same SYN, repeated in one test run, a new source port each time. */
	b->fn->bss->bench_syn_isn = htonl(HOST_ISN);
	frame_case(b, "harness_syn", "harness: fresh port + tail call to empty tc",
		   b->fn->progs.bench_syn_fresh_flow, &s);
	b->cases[b->ncases - 1].target = b->fn->progs.bench_empty_tc;
	frame_case(b, "tc_egress_syn_new_flow_repeated",
		   "tc egress: SYN rewrite, new flow, repeated (siphash)",
		   b->fn->progs.bench_syn_fresh_flow, &s);
	c = &b->cases[b->ncases - 1];
	c->target = dp->progs.isnguard_tc_egress;
	c->harness = "harness_syn";
	flow_of(&s, &c->flow);
	return 0;
}

/*
 * FRESH_RUNS runs through c->target, each the SYN of a new connection
 * (checked: every one of them made a flow), which go after.
 */
static int measure_fresh(struct bench *b, struct bench_case *c, double *ns)
{
	int flows_fd = bpf_map__fd(b->dp->maps.isn_opening);
	int target_fd = bpf_program__fd(c->target), err;
	int stats_fd = bpf_map__fd(b->dp->maps.isn_stats);
	uint64_t created = percpu_u64_sum(stats_fd, STAT_FLOW_CREATED, sizeof(uint64_t), 0);
	uint32_t zero = 0, duration = 0;

	if (bpf_map_update_elem(bpf_map__fd(b->fn->maps.bench_syn_target), &zero, &target_fd,
				BPF_ANY))
		return -errno;
	b->fn->bss->bench_syn_port = FRESH_PORT_BASE;
	err = bpf_run(c->prog, c->frame, c->frame_len, FRESH_RUNS, NULL, &duration);
	*ns = duration;
	if (!err && c->harness &&
	    percpu_u64_sum(stats_fd, STAT_FLOW_CREATED, sizeof(uint64_t), 0) - created != FRESH_RUNS) {
		fprintf(stderr, "bench: %s: %d runs did not make %d new flows\n", c->name,
			FRESH_RUNS, FRESH_RUNS);
		err = -EPROTO;
	}
	for (uint32_t i = 0; c->harness && i < FRESH_RUNS; i++) {
		struct flow_key fk = c->flow;

		fk.local_port = htons((uint16_t)(FRESH_PORT_BASE + i));
		bpf_map_delete_elem(flows_fd, &fk);
	}
	return err;
}

/* Whether --only leaves c to be measured: baselines, harnesses and the floor always are. */
static bool wanted(const struct bench *b, const struct bench_case *c)
{
	size_t len = strlen(c->name);

	if (!b->only || !strncmp(c->name, "empty", 5) || !strncmp(c->name, "harness", 7) ||
	    !strcmp(c->name, "floor"))
		return true;
	for (const char *p = b->only; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strcspn(p, ",") == len && !strncmp(p, c->name, len))
			return true;
	}
	return false;
}

/* Mean ns of one run; the SYN cases time single runs (the new-flow one on a fresh flow each). */
static int measure(struct bench *b, struct bench_case *c, double *ns)
{
	uint32_t duration = 0;
	int err;

	if (c->table == TABLE_ISN)
		set_isn_flow(b->fn, c->family);
	if (c->target)
		return measure_fresh(b, c, ns);
	if (!c->single_runs) {
		/*
		 * From the wall time of all runs, for 0.1 ns (the kernel reports
		 * whole ns); with --kernel-clock the kernel's, which stops while
		 * the run yields the CPU: steadier on a loaded machine.
		 */
		double t0 = wall_ns();

		err = bpf_run(c->prog, c->frame_len ? c->frame : NULL, c->frame_len,
			      (uint32_t)b->repeat, NULL, &duration);
		*ns = b->kernel_clock ? (double)duration : (wall_ns() - t0) / (double)b->repeat;
		return err;
	}
	double total = 0;
	int flows_fd = bpf_map__fd(b->dp->maps.isn_opening);

	for (int i = 0; i < SYN_RUNS_PER_ROUND; i++) {
		if (c->new_flow_each_run)
			bpf_map_delete_elem(flows_fd, &c->flow);
		err = bpf_run(c->prog, c->frame, c->frame_len, 1, NULL, &duration);
		if (err)
			return err;
		total += duration;
	}
	*ns = total / SYN_RUNS_PER_ROUND;
	return 0;
}

static const struct bench_case *find_case(const struct bench *b, const char *name)
{
	for (size_t i = 0; i < b->ncases; i++)
		if (!strcmp(b->cases[i].name, name))
			return &b->cases[i];
	return NULL;
}

/* The row c is measured over: its harness, or the empty program run the same way. */
static const struct bench_case *baseline_case(const struct bench *b, const struct bench_case *c)
{
	const char *base = c->harness ? c->harness : c->table == TABLE_ISN ? "empty" :
			   bpf_program__type(c->prog) == BPF_PROG_TYPE_XDP ? "empty_xdp" :
			   c->single_runs ? "empty_tc_single" : "empty_tc";

	return find_case(b, base);
}

static double baseline_of(const struct bench *b, const struct bench_case *c)
{
	const struct bench_case *base = baseline_case(b, c);

	return base ? base->median : 0;
}

/*
 * Each datapath row over its baseline as a multiple of the floor over its
 * own, round by round (the cases of a round run back to back), and the
 * median of those: a slow phase of this shared machine then moves both
 * sides of a ratio. Before the rounds are sorted.
 */
static void floor_ratios(struct bench *b)
{
	const struct bench_case *floor = find_case(b, "floor");
	const struct bench_case *floor_base = floor ? baseline_case(b, floor) : NULL;

	for (size_t i = 0; floor_base && i < b->ncases; i++) {
		struct bench_case *c = &b->cases[i];
		const struct bench_case *base = baseline_case(b, c);
		double ratio[MAX_ROUNDS];
		unsigned long n = 0;

		if (c->table != TABLE_DATAPATH || c->skipped || !base || !strncmp(c->name, "empty", 5) ||
		    !strncmp(c->name, "harness", 7))
			continue;
		for (unsigned long r = 0; r < b->rounds; r++) {
			double floor_over = floor->ns[r] - floor_base->ns[r];

			if (floor_over > 0)
				ratio[n++] = (c->ns[r] - base->ns[r]) / floor_over;
		}
		if (!n)
			continue;
		qsort(ratio, n, sizeof(double), cmp_double);
		c->x_floor = ratio[n / 2];
	}
}

static void print_json(const struct bench *b, const char *kernel, const char *cpu)
{
	static const char *const tables[] = { "isn_functions", "datapath" };
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "method", "BPF_PROG_TEST_RUN, median of interleaved rounds");
	jw_uint_field(&jw, "repeat", b->repeat);
	jw_uint_field(&jw, "rounds", b->rounds);
	jw_string_field(&jw, "kernel", kernel);
	jw_string_field(&jw, "cpu", cpu);
	for (int t = TABLE_ISN; t <= TABLE_DATAPATH; t++) {
		jw_name(&jw, tables[t]);
		jw_start_array(&jw);
		for (size_t i = 0; i < b->ncases; i++) {
			const struct bench_case *c = &b->cases[i];

			if (c->table != (enum bench_table)t || c->skipped)
				continue;
			jw_start_object(&jw);
			jw_string_field(&jw, "name", c->name);
			jw_string_field(&jw, "what", c->what);
			jw_double_field(&jw, "ns_per_run", c->median, 1);
			jw_double_field(&jw, "ns_over_baseline", c->median - baseline_of(b, c), 1);
			if (c->x_floor > 0)
				jw_double_field(&jw, "x_floor", c->x_floor, 2);
			jw_double_field(&jw, "min_ns", c->ns[0], 1);
			jw_double_field(&jw, "max_ns", c->ns[b->rounds - 1], 1);
			jw_end_object(&jw);
		}
		jw_end_array(&jw);
	}
	jw_end_object(&jw);
	jw_finish(&jw);
}

/*
 * Datapath rows also as a multiple of the floor (bench_floor): what each
 * path costs over its baseline against what the least translator costs
 * (floor_ratios).
 */
static void print_table(const struct bench *b, enum bench_table t, const char *title)
{
	printf("\n%s\n%-50s %8s %14s %9s %16s\n", title, "program", "ns/run", "over baseline",
	       "x floor", "min..max");
	for (size_t i = 0; i < b->ncases; i++) {
		const struct bench_case *c = &b->cases[i];
		double over = c->median - baseline_of(b, c);
		char range[32], ratio[16] = "";

		if (c->table != t || c->skipped)
			continue;
		snprintf(range, sizeof(range), "%.1f..%.1f", c->ns[0], c->ns[b->rounds - 1]);
		if (c->x_floor > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", c->x_floor);
		printf("%-50s %8.1f %14.1f %9s %16s\n", c->what, c->median, over, ratio, range);
	}
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int load_datapath(struct bench *b)
{
	uint32_t retval = 0;
	int err;

	b->dp = isnguard__open();
	if (!b->dp)
		return -errno;
	bpf_map__set_max_entries(b->dp->maps.isn_flows, 65536);
	bpf_map__set_max_entries(b->dp->maps.isn_opening, isn_opening_size(65536));
	if (isnguard__load(b->dp))
		return -errno;
	/* As attach does: flows enter isn_flows only with a slot of the sweeper's queue. */
	err = bpf_run(b->dp->progs.isnguard_sweeper, NULL, 0, 1, &retval, NULL);
	return err ? err : retval ? -EIO : 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "repeat", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "only", required_argument, NULL, 'o' },
		{ "kernel-clock", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static struct bench b = { .repeat = 5000000, .rounds = 7 };
	bool json = false;
	struct utsname uts;
	char cpu[128];
	int opt, err;

	while ((opt = getopt_long(argc, argv, "n:r:o:jkh", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			b.repeat = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			b.rounds = strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = true;
			break;
		case 'o':
			b.only = optarg;
			break;
		case 'k':
			b.kernel_clock = true;
			break;
		case 'h':
			printf("Usage: %s [--repeat N] [--rounds N] [--only NAME,...] [--kernel-clock] "
			       "[--json]\n", argv[0]);
			return 0;
		default:
			return 2;
		}
	}
	if (b.repeat < 1 || b.repeat > 100000000 || b.rounds < 1 || b.rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench: --repeat must be 1..100000000 and --rounds 1..%d\n", MAX_ROUNDS);
		return 2;
	}

	libbpf_set_print(silent);
	b.fn = isn_test_skel();
	err = b.fn ? load_datapath(&b) : -ENOENT;
	if (err) {
		fprintf(stderr, "bench: load BPF objects: %s\n", strerror(-err));
		return 1;
	}
	add_isn_cases(&b);
	err = add_datapath_cases(&b);
	if (err) {
		fprintf(stderr, "bench: set up the datapath cases: %s\n", strerror(-err));
		return 1;
	}

	for (size_t i = 0; i < b.ncases; i++)
		b.cases[i].skipped = !wanted(&b, &b.cases[i]);
	for (unsigned long r = 0; r < b.rounds; r++) {
		for (size_t i = 0; i < b.ncases; i++) {
			if (b.cases[i].skipped)
				continue;
			err = measure(&b, &b.cases[i], &b.cases[i].ns[r]);
			if (err) {
				fprintf(stderr, "bench: test run of %s failed: %s\n", b.cases[i].name,
					strerror(-err));
				return 1;
			}
		}
	}
	floor_ratios(&b);
	for (size_t i = 0; i < b.ncases; i++) {
		qsort(b.cases[i].ns, b.rounds, sizeof(double), cmp_double);
		b.cases[i].median = b.cases[i].ns[b.rounds / 2];
	}

	uname(&uts);
	cpu_model(cpu, sizeof(cpu));
	if (json) {
		print_json(&b, uts.release, cpu);
		return 0;
	}
	printf("BPF_PROG_TEST_RUN, %lu runs per round (SYN rows: %d single runs), median of "
	       "%lu interleaved rounds\nkernel %s, %s\n", b.repeat, SYN_RUNS_PER_ROUND, b.rounds,
	       uts.release, cpu);
	print_table(&b, TABLE_ISN, "Keyed ISN functions (one call per run)");
	print_table(&b, TABLE_DATAPATH, "Datapath, per packet");
	return 0;
}
