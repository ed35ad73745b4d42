// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench, second part: the SYN proxy's per-packet costs beside baselines
 * from the same run (this machine is shared and noisy).
 *
 * Everything runs in a network namespace of the bench's own, whose lo holds
 * the SYNs' destinations; the SYN and cookie ACK cases run twice, with the
 * namespace's forwarding off and on (a gateway), interleaved.
 *
 * - SYN -> SYN-ACK: isnguard_xdp (and isnguard_tc_ingress with syn_at_tc)
 *   against bench_kernel_synack4/6, the same SYN-ACK built with the
 *   kernel's bpf_tcp_raw_gen_syncookie_ipv4/6 after the same listener
 *   lookup, and against bench_reflect, the floor of any XDP responder
 *   (swap MACs, addresses and ports, XDP_TX); each also as SYN-ACKs a
 *   second per core (1e9 / ns). Each run starts from the SYN again through
 *   a restoring harness that tail-calls the program under test; the
 *   harness's cost (measured with an empty XDP_TX behind it) is subtracted.
 * - Where isnguard's answer goes: programs that stop after each step
 *   (tests/bpf/bench_steps.bpf.c), through the same harness, and the
 *   listener and route lookups alone (bench_listener_lookup,
 *   bench_fib_lookup, over the empty XDP_TX program).
 * - An established segment (ACK with timestamps) of a real loopback
 *   connection, to a protected and to an unprotected port, through the tc
 *   filter beside XDP (isnguard_tc_cookie) and the tc ingress program,
 *   against an empty tc program.
 * - A cookie ACK (with timestamps) to the protected port's listener from a
 *   tuple with no socket, through isnguard_tc_cookie: one whose cookie the
 *   reference made in the current slot, one made in the previous slot, and
 *   one with a bad MAC. A valid one ends in bpf_sk_assign_tcp_reqsk, which
 *   refuses a test run's skb (tests/test_synproxy.c says why): the cost is
 *   the check's and the kfunc's refusal, not a connection's. Beside them
 *   bench_kernel_check4: the listener lookup and the kernel's
 *   bpf_tcp_raw_check_syncookie_ipv4 on the same ACK.
 *
 * ns per run = this thread's CPU time over one BPF_PROG_TEST_RUN of --repeat
 * runs / repeat (0.1 ns resolution): on a shared machine, time the thread
 * spent preempted is not counted, which wall time counted; with
 * --kernel-clock, the test run's own duration as the kernel measures it
 * (1 ns resolution). The median of --rounds interleaved rounds. The SYN
 * policy (bpf/syn_policy.h) is on with a rate no run reaches; beside it,
 * isnguard_xdp loaded with no SYN policy, and both with a new source each
 * SYN (bench_restore4_newsrc), which makes a bucket each time.
 *
 * With --other OBJ, another build's isnguard.bpf.o is loaded on the same
 * maps, and its isnguard_tc_cookie, isnguard_tc_ingress and isnguard_xdp run
 * the cookie ACK and established cases too, each beside this build's in
 * every round: the paired differences of two builds in one process, where
 * the machine's load falls on both alike (scripts/bench-ab.py pairs whole
 * runs).
 *
 * The namespace, sockets and frames are bench_synproxy_env.c's, the BPF
 * objects bench_synproxy_load.c's.
 *
 * Usage: bench_synproxy [--repeat N] [--rounds N] [--kernel-clock] [--other OBJ]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_steps.skel.h"
#include "bench_syn.skel.h"
#include "bench_synproxy.h"
#include "isnguard.skel.h"

static struct bcase cases[120];
static size_t ncases;
static bool kernel_clock;	/* --kernel-clock: BPF_PROG_TEST_RUN's own duration per run */

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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
	c->forwarding = -1;
	c->cookie_slots_back = -1;
	memcpy(c->frame, frame, len);
	c->len = len;
	return c;
}

static int run_case(struct bcase *c, int target_map, int target_map_tc, unsigned long repeat,
		    double *ns)
{
	uint8_t out[PKT_MAX_LEN];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = c->frame,
		    .data_size_in = (uint32_t)c->len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = (int)repeat);
	uint32_t zero = 0;
	double t0;

	if (set_forwarding(c->forwarding))
		return -errno;
	if (c->target_fd >= 0 && bpf_map_update_elem(c->tc ? target_map_tc : target_map, &zero,
						     &c->target_fd, BPF_ANY))
		return -errno;
	t0 = thread_cpu_ns();
	if (bpf_prog_test_run_opts(c->prog_fd, &opts))
		return -errno;
	*ns = kernel_clock ? (double)opts.duration : (thread_cpu_ns() - t0) / (double)repeat;
	return 0;
}

/* The median over rounds of (a - a_base) / (b - b_base), each round's own. */
static double round_ratio(const struct bcase *a, const struct bcase *a_base,
			  const struct bcase *b, const struct bcase *b_base, unsigned long rounds)
{
	double r[MAX_ROUNDS];

	for (unsigned long i = 0; i < rounds; i++) {
		double den = b->round_ns[i] - (b_base ? b_base->round_ns[i] : 0);

		r[i] = (a->round_ns[i] - (a_base ? a_base->round_ns[i] : 0)) / (den > 0.1 ? den : 0.1);
	}
	qsort(r, rounds, sizeof(double), cmp_double);
	return r[rounds / 2];
}

static unsigned long nrounds;

/* A case of this build and the same of the other build (--other). */
struct ab_pair {
	struct bcase *mine, *other;
};

static struct ab_pair ab_pairs[16];
static size_t nab_pairs;

/* The case again with the other build's program, run beside it each round. */
static void add_other(struct bcase *mine, struct bpf_program *prog)
{
	static char names[16][112];
	struct bcase *c;

	if (!prog)
		return;
	snprintf(names[nab_pairs], sizeof(names[0]), "%s (--other)", mine->name);
	c = add(names[nab_pairs], prog, NULL, mine->frame, mine->len);
	c->forwarding = mine->forwarding;
	c->cookie_slots_back = mine->cookie_slots_back;
	c->cookie_bad_mac = mine->cookie_bad_mac;
	c->is_other = true;
	mine->other = c;
	ab_pairs[nab_pairs++] = (struct ab_pair){ .mine = mine, .other = c };
}

/* Each pair: the median and quartiles of the rounds' differences, this build's - the other's. */
static void print_ab(const char *other)
{
	if (!nab_pairs)
		return;
	printf("\nThis build - %s, ns, the median of the rounds' differences (quartiles):\n",
	       other);
	for (size_t i = 0; i < nab_pairs; i++) {
		double d[MAX_ROUNDS];

		for (unsigned long r = 0; r < nrounds; r++)
			d[r] = ab_pairs[i].mine->round_ns[r] - ab_pairs[i].other->round_ns[r];
		qsort(d, nrounds, sizeof(double), cmp_double);
		printf("  %-70s %+7.1f (%+.1f..%+.1f)\n", ab_pairs[i].mine->name, d[nrounds / 2],
		       d[nrounds / 4], d[(3 * nrounds) / 4]);
	}
}

/*
 * A case over its baseline: the median of the rounds' differences, each
 * taken within one round (the machine's load moves both sides alike).
 */
static double over(const struct bcase *c, const struct bcase *base)
{
	double d[MAX_ROUNDS];

	for (unsigned long i = 0; i < nrounds; i++)
		d[i] = c->round_ns[i] - (base ? base->round_ns[i] : 0);
	qsort(d, nrounds, sizeof(double), cmp_double);
	return d[nrounds / 2];
}

/* isnguard_tc_cookie's steps (tests/bpf/bench_steps.bpf.c), in order. */
#define ACK_STEPS 7

static struct bpf_program *ack_step_prog(struct bench_steps *steps, int step)
{
	struct bpf_program *progs[ACK_STEPS] = {
		steps->progs.bench_step_ack_parse, steps->progs.bench_step_ack_flow,
		steps->progs.bench_step_ack_socket, steps->progs.bench_step_ack_route,
		steps->progs.bench_step_ack_pre, steps->progs.bench_step_ack_hash,
		steps->progs.bench_step_ack_cookie,
	};

	return progs[step];
}

/* The SYN cases of one forwarding setting. */
struct syn_set {
	struct bcase *harness[2], *kernel[2], *isng[2], *reflect[2];	/* [0] IPv4, [1] IPv6 */
	struct bcase *harness_tc[2], *isng_tc[2];
	struct bcase *lookup[2], *fib[2], *mac[2];
	struct bcase *step_decide[2], *step_csum[2], *step_cookie[2], *step_answer[2];
	struct bcase *ack_valid, *ack_bad, *kernel_check;
	struct bcase *ack_step[ACK_STEPS], *ack_step_valid[ACK_STEPS];	/* bench_step_ack_* */
};

static void add_syn_set(struct syn_set *set, int forwarding, struct bench_syn *bs,
			struct isnguard *dp, struct isnguard *syn_tc, struct bench_steps *steps)
{
	static const char *const fam[2] = { "IPv4", "IPv6" };
	const char *fwd = forwarding ? "forwarding on" : "forwarding off";
	static const char *const ack_steps[ACK_STEPS] = {
		"parse", "+ flow lookup", "+ socket lookup", "+ route", "+ synproxy_ack_pre",
		"+ cookie_check", "+ synproxy_ack_cookie",
	};
	static char names[2][48][96];
	uint8_t frame[PKT_MAX_LEN];
	size_t len, first = ncases;
	int n = 0;

#define NAME(fmt, ...) (snprintf(names[forwarding][n], sizeof(names[0][0]), fmt, __VA_ARGS__), \
			names[forwarding][n++])
	for (int f = 0; f < 2; f++) {
		struct bpf_program *restore = f ? bs->progs.bench_restore6 : bs->progs.bench_restore4;
		struct bpf_program *restore_tc = f ? bs->progs.bench_restore6_tc
						   : bs->progs.bench_restore4_tc;
		struct bpf_program *kernel = f ? bs->progs.bench_kernel_synack6
					       : bs->progs.bench_kernel_synack4;

		len = linux_syn(f ? 6 : 4, frame);
		memcpy(f ? (void *)bs->bss->syn6 : (void *)bs->bss->syn4, frame, len);
		set->harness[f] = add(NAME("harness, %s SYN + empty XDP_TX, %s", fam[f], fwd),
				      restore, bs->progs.bench_empty_tx, frame, len);
		set->reflect[f] = add(NAME("reflector (swap MACs, addresses, ports), %s, %s",
					   fam[f], fwd), restore, bs->progs.bench_reflect, frame, len);
		set->kernel[f] = add(NAME("SYN-ACK, kernel helper + listener lookup, %s, %s",
					  fam[f], fwd), restore, kernel, frame, len);
		set->isng[f] = add(NAME("SYN-ACK, isnguard_xdp, %s, %s", fam[f], fwd), restore,
				   dp->progs.isnguard_xdp, frame, len);
		set->harness_tc[f] = add(NAME("harness, %s SYN + empty tc, %s", fam[f], fwd),
					 restore_tc, bs->progs.bench_empty_tc, frame, len);
		set->isng_tc[f] = add(NAME("SYN-ACK, isnguard_tc_ingress --syn-hook tc, %s, %s",
					   fam[f], fwd), restore_tc,
				      syn_tc->progs.isnguard_tc_ingress, frame, len);
		set->harness_tc[f]->tc = set->isng_tc[f]->tc = true;
		set->lookup[f] = add(NAME("listener lookup alone (bpf_skc_lookup_tcp), %s, %s",
					  fam[f], fwd), bs->progs.bench_listener_lookup, NULL, frame,
				     len);
		set->fib[f] = add(NAME("route lookup alone (bpf_fib_lookup), %s, %s", fam[f], fwd),
				  bs->progs.bench_fib_lookup, NULL, frame, len);
		set->mac[f] = add(NAME("parse + cookie MAC alone (SipHash-2-4), %s, %s", fam[f], fwd),
				  steps->progs.bench_step_mac_alone, NULL, frame, len);
		set->step_decide[f] = add(NAME("isnguard steps: the decision, %s, %s", fam[f], fwd),
					  restore, steps->progs.bench_step_decide, frame, len);
		set->step_csum[f] = add(NAME("isnguard steps: + checksum check, %s, %s", fam[f],
					     fwd), restore, steps->progs.bench_step_csum, frame, len);
		set->step_cookie[f] = add(NAME("isnguard steps: + cookie MAC, %s, %s", fam[f], fwd),
					  restore, steps->progs.bench_step_cookie, frame, len);
		set->step_answer[f] = add(NAME("isnguard steps: + the SYN-ACK written, %s, %s",
					       fam[f], fwd), restore, steps->progs.bench_step_answer,
					  frame, len);
	}
	len = cookie_ack(0, false, frame);
	set->ack_valid = add(NAME("cookie ACK, valid (this slot), isnguard_tc_cookie, %s", fwd),
			     dp->progs.isnguard_tc_cookie, NULL, frame, len);
	set->ack_valid->cookie_slots_back = 0;
	set->kernel_check = add(NAME("cookie ACK, kernel check helper + listener lookup, %s", fwd),
				bs->progs.bench_kernel_check4, NULL, frame, len);
	len = cookie_ack(0, true, frame);
	set->ack_bad = add(NAME("cookie ACK, bad MAC, isnguard_tc_cookie, %s", fwd),
			   dp->progs.isnguard_tc_cookie, NULL, frame, len);
	set->ack_bad->cookie_slots_back = 0;
	set->ack_bad->cookie_bad_mac = true;
	for (int i = 0; i < ACK_STEPS; i++) {
		set->ack_step[i] = add(NAME("cookie ACK steps, bad MAC: %s, %s", ack_steps[i], fwd),
				       ack_step_prog(steps, i), NULL, frame, len);
		set->ack_step[i]->cookie_slots_back = 0;
		set->ack_step[i]->cookie_bad_mac = true;
	}
	len = cookie_ack(0, false, frame);
	for (int i = ACK_STEPS - 2; i < ACK_STEPS; i++) {
		set->ack_step_valid[i] = add(NAME("cookie ACK steps, valid: %s, %s", ack_steps[i],
						  fwd), ack_step_prog(steps, i), NULL, frame, len);
		set->ack_step_valid[i]->cookie_slots_back = 0;
	}
#undef NAME
	for (size_t i = first; i < ncases; i++)
		cases[i].forwarding = forwarding;
}

static void print_syn_set(const struct syn_set *set, int forwarding, const struct bcase *empty_tx,
			  const struct bcase *tc_empty, unsigned long rounds)
{
	static const char *const fam[2] = { "IPv4", "IPv6" };

	printf("\nSYN -> SYN-ACK, forwarding %s, harness subtracted (ratios: median of the "
	       "rounds' own):\n", forwarding ? "on (a gateway)" : "off");
	for (int f = 0; f < 2; f++) {
		double reflect = over(set->reflect[f], set->harness[f]);
		double kernel = over(set->kernel[f], set->harness[f]);
		double isng = over(set->isng[f], set->harness[f]);
		double tc = over(set->isng_tc[f], set->harness_tc[f]);

		printf("  %s reflector (swap MACs, addresses, ports) %7.1f ns  %6.2f M/s per core\n",
		       fam[f], reflect, 1e3 / reflect);
		printf("  %s kernel helper SYN-ACK + lookup          %7.1f ns  %6.2f M/s per core\n",
		       fam[f], kernel, 1e3 / kernel);
		printf("  %s isnguard SYN-ACK (XDP)                  %7.1f ns  %6.2f M/s per core  "
		       "%.2fx the kernel helper's, %.1fx the reflector's\n", fam[f], isng, 1e3 / isng,
		       round_ratio(set->isng[f], set->harness[f], set->kernel[f], set->harness[f],
				   rounds),
		       round_ratio(set->isng[f], set->harness[f], set->reflect[f], set->harness[f],
				   rounds));
		printf("  %s isnguard SYN-ACK at tc (--syn-hook tc)  %7.1f ns  %6.2f M/s per core  "
		       "%.2fx the XDP answer\n", fam[f], tc, 1e3 / tc,
		       round_ratio(set->isng_tc[f], set->harness_tc[f], set->isng[f],
				   set->harness[f], rounds));
		printf("  %s isnguard's steps: decision %.1f ns (in it: listener lookup %.1f, route "
		       "lookup %.1f, parse + cookie MAC %.1f, measured alone), checksum check %.1f, "
		       "cookie MAC %.1f, the SYN-ACK written %.1f\n", fam[f],
		       over(set->step_decide[f], set->harness[f]), over(set->lookup[f], empty_tx),
		       over(set->fib[f], empty_tx), over(set->mac[f], empty_tx),
		       over(set->step_csum[f], set->step_decide[f]),
		       over(set->step_cookie[f], set->step_csum[f]),
		       over(set->isng[f], set->step_cookie[f]));
	}
	printf("Cookie ACK (IPv4, timestamps) to the listener, forwarding %s, over an empty tc "
	       "program:\n", forwarding ? "on" : "off");
	printf("  kernel check helper + lookup      %7.1f ns\n", over(set->kernel_check, tc_empty));
	printf("  isnguard, valid                   %7.1f ns  %.2fx the kernel's\n",
	       over(set->ack_valid, tc_empty),
	       round_ratio(set->ack_valid, tc_empty, set->kernel_check, tc_empty, rounds));
	printf("  isnguard, bad MAC                 %7.1f ns  %.2fx the kernel's\n",
	       over(set->ack_bad, tc_empty),
	       round_ratio(set->ack_bad, tc_empty, set->kernel_check, tc_empty, rounds));
	printf("  isnguard's steps, bad MAC: parse %.1f ns, flow lookup %.1f, socket lookup %.1f, "
	       "route %.1f, synproxy_ack_pre (over the parse and flow) %.1f, cookie_check %.1f, "
	       "the rest of synproxy_ack_cookie %.1f, the verdict %.1f\n",
	       over(set->ack_step[0], tc_empty), over(set->ack_step[1], set->ack_step[0]),
	       over(set->ack_step[2], set->ack_step[1]), over(set->ack_step[3], set->ack_step[2]),
	       over(set->ack_step[4], set->ack_step[1]), over(set->ack_step[5], set->ack_step[4]),
	       over(set->ack_step[6], set->ack_step[5]), over(set->ack_bad, set->ack_step[6]));
	printf("  isnguard's steps, valid: cookie_check %.1f ns, the rest of synproxy_ack_cookie "
	       "%.1f, synproxy_assign and the verdict %.1f\n",
	       over(set->ack_step_valid[5], set->ack_step[4]),
	       over(set->ack_step_valid[6], set->ack_step_valid[5]),
	       over(set->ack_valid, set->ack_step_valid[6]));
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "repeat", required_argument, NULL, 'r' }, { "rounds", required_argument, NULL, 'n' },
		{ "kernel-clock", no_argument, NULL, 'k' }, { "other", required_argument, NULL, 'o' },
		{ 0 },
	};
	unsigned long repeat = 1000000, rounds = 9;
	struct bcase *kernel4_nolookup, *harness4, *empty_tx, *reflect_alone;
	struct bcase *tc_empty, *tc_cookie_prot, *tc_cookie_open, *tc_ing_prot, *xdp_prot;
	struct bcase *ack_valid_prev;
	struct bcase *isng4_nopol, *harness4_new, *isng4_new, *isng4_new_nopol;
	struct syn_set sets[2];
	int listeners[3], conn_prot, conn_open, c;
	uint16_t sport_prot, sport_open;
	uint8_t frame[PKT_MAX_LEN];
	struct bench_steps *steps;
	struct bench_syn *bs;
	struct isnguard *dp, *syn_tc, *no_policy;
	struct bpf_object *other = NULL;
	const char *other_path = NULL;
	size_t len;

	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == 'r')
			repeat = strtoul(optarg, NULL, 10);
		else if (c == 'n')
			rounds = strtoul(optarg, NULL, 10);
		else if (c == 'k')
			kernel_clock = true;
		else if (c == 'o')
			other_path = optarg;
		else
			return 2;
	}
	if (!repeat || !rounds || rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench_synproxy: --repeat > 0, --rounds 1-%d\n", MAX_ROUNDS);
		return 2;
	}
	if (bench_netns()) {
		fprintf(stderr, "bench_synproxy: a network namespace with lo's addresses: %s\n",
			strerror(errno));
		return 1;
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
	if (!bs || setup_datapath(&dp) || setup_syn_tc(dp, &syn_tc) || setup_steps(dp, &steps) ||
	    setup_no_policy(dp, &no_policy) ||
	    (other_path && setup_other(dp, other_path, &other))) {
		fprintf(stderr, "bench_synproxy: load the BPF objects: %s\n", strerror(errno));
		return 1;
	}
	add_syn_set(&sets[0], 0, bs, dp, syn_tc, steps);
	add_syn_set(&sets[1], 1, bs, dp, syn_tc, steps);
	harness4 = sets[0].harness[0];
	len = linux_syn(4, frame);
	kernel4_nolookup = add("SYN-ACK, kernel bpf_tcp_raw_gen_syncookie_ipv4, no lookup",
			       bs->progs.bench_restore4, bs->progs.bench_kernel_synack4_nolookup,
			       frame, len);
	/* The SYN policy's share (forwarding off): without it, and with a new source each SYN. */
	isng4_nopol = add("SYN-ACK, isnguard_xdp IPv4, no SYN policy", bs->progs.bench_restore4,
			  no_policy->progs.isnguard_xdp, frame, len);
	harness4_new = add("harness, IPv4 SYN from a new source + tail call to empty XDP_TX",
			   bs->progs.bench_restore4_newsrc, bs->progs.bench_empty_tx, frame, len);
	isng4_new = add("SYN-ACK, isnguard_xdp IPv4, a new source each SYN",
			bs->progs.bench_restore4_newsrc, dp->progs.isnguard_xdp, frame, len);
	isng4_new_nopol = add("SYN-ACK, isnguard_xdp IPv4, a new source each SYN, no SYN policy",
			      bs->progs.bench_restore4_newsrc, no_policy->progs.isnguard_xdp,
			      frame, len);
	isng4_nopol->forwarding = harness4_new->forwarding = 0;
	isng4_new->forwarding = isng4_new_nopol->forwarding = 0;
	empty_tx = add("empty XDP_TX, alone", bs->progs.bench_empty_tx, NULL, frame, len);
	reflect_alone = add("reflector alone, IPv4 (no harness: its output is a frame for it)",
			    bs->progs.bench_reflect, NULL, frame, len);

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
	len = cookie_ack(1, false, frame);
	ack_valid_prev = add("cookie ACK, valid (previous slot), isnguard_tc_cookie",
			     dp->progs.isnguard_tc_cookie, NULL, frame, len);
	ack_valid_prev->forwarding = 0;
	ack_valid_prev->cookie_slots_back = 1;
	if (other) {
		struct bpf_program *tc_cookie = bpf_object__find_program_by_name(other,
										  "isnguard_tc_cookie");

		for (int s = 0; s < 2; s++) {
			add_other(sets[s].ack_valid, tc_cookie);
			add_other(sets[s].ack_bad, tc_cookie);
		}
		add_other(ack_valid_prev, tc_cookie);
		add_other(tc_cookie_prot, tc_cookie);
		add_other(tc_cookie_open, tc_cookie);
		add_other(tc_ing_prot, bpf_object__find_program_by_name(other, "isnguard_tc_ingress"));
		add_other(xdp_prot, bpf_object__find_program_by_name(other, "isnguard_xdp"));
	}
	if (!sets[0].ack_valid->len || !ack_valid_prev->len || !sets[0].ack_bad->len) {
		fprintf(stderr, "bench_synproxy: the reference cookie: no SipHash in libcrypto\n");
		return 1;
	}

	for (unsigned long r = 0; r < rounds; r++) {
		/* Made again each round: a run of the bench outlasts a cookie slot. */
		for (size_t i = 0; i < ncases; i++)
			if (cases[i].cookie_slots_back >= 0)
				cases[i].len = cookie_ack((uint32_t)cases[i].cookie_slots_back,
							  cases[i].cookie_bad_mac, cases[i].frame);
		for (size_t i = 0; i < ncases; i++) {
			/* A case and its other build's run back to back, first one then the other. */
			struct bcase *pair[2] = { &cases[i], cases[i].other };

			if (cases[i].is_other)
				continue;
			if (pair[1] && r % 2) {
				pair[0] = pair[1];
				pair[1] = &cases[i];
			}
			for (int k = 0; k < 2 && pair[k]; k++) {
				int err = run_case(pair[k], bpf_map__fd(bs->maps.bench_target),
						   bpf_map__fd(bs->maps.bench_target_tc), repeat,
						   &pair[k]->ns[r]);

				if (err) {
					fprintf(stderr, "bench_synproxy: %s: %s\n", pair[k]->name,
						strerror(-err));
					return 1;
				}
				pair[k]->round_ns[r] = pair[k]->ns[r];
			}
		}
	}
	set_forwarding(0);
	nrounds = rounds;
	for (size_t i = 0; i < ncases; i++) {
		qsort(cases[i].ns, rounds, sizeof(double), cmp_double);
		cases[i].median = cases[i].ns[rounds / 2];
	}

	for (int s = 0; s < 2; s++)
		for (int f = 0; f < 2; f++)
			if (sets[s].kernel[f]->median <= sets[s].harness[f]->median + 1 ||
			    sets[s].isng[f]->median <= sets[s].harness[f]->median + 1 ||
			    sets[s].isng_tc[f]->median <= sets[s].harness_tc[f]->median + 1)
				fprintf(stderr, "bench_synproxy: warning: a SYN-ACK case costs no "
					"more than the harness: was the SYN answered?\n");
	/*
	 * Every SYN case answered: XDP's and tc's, IPv4 and IPv6, forwarding off
	 * and on, and the SYN policy's three (the maps are shared).
	 */
	if (stat_sum(dp, STAT_COOKIE_SENT) != 11 * rounds * repeat)
		fprintf(stderr, "bench_synproxy: warning: %llu cookie SYN-ACKs sent of %lu: was every "
			"SYN answered?\n", (unsigned long long)stat_sum(dp, STAT_COOKIE_SENT),
			11 * rounds * repeat);
	/* The valid cases count (the previous slot's too, unless a slot ended), the bad ones too. */
	/* With --other, its runs count on the same maps: twice as many bad ones. */
	if (stat_sum(dp, STAT_COOKIE_ACK_VALID) < 2 * rounds * repeat ||
	    stat_sum(dp, STAT_COOKIE_BAD_MAC) != (other ? 4 : 2) * rounds * repeat)
		fprintf(stderr, "bench_synproxy: warning: cookie ACKs valid %llu, bad MAC %llu of %lu "
			"each: were they checked?\n",
			(unsigned long long)stat_sum(dp, STAT_COOKIE_ACK_VALID),
			(unsigned long long)stat_sum(dp, STAT_COOKIE_BAD_MAC), 2 * rounds * repeat);
	printf("\nSYN proxy, ns per packet (median of %lu rounds of %lu runs)\n", rounds, repeat);
	printf("%-76s %9s\n", "case", "ns");
	for (size_t i = 0; i < ncases; i++)
		printf("%-76s %9.1f\n", cases[i].name, cases[i].median);
	printf("\nempty XDP_TX %.1f ns; reflector alone %.1f ns (IPv4, %.2f M/s per core); kernel "
	       "helper SYN-ACK without the listener lookup %.1f ns over the harness\n",
	       empty_tx->median, reflect_alone->median, 1e3 / reflect_alone->median,
	       over(kernel4_nolookup, harness4));
	for (int s = 0; s < 2; s++)
		print_syn_set(&sets[s], s, empty_tx, tc_empty, rounds);
	printf("SYN policy (IPv4, forwarding off; each the median of the rounds' differences):\n");
	printf("  the source's bucket checked       %+7.1f ns  (SYN-ACK without the policy %.1f ns)\n",
	       over(sets[0].isng[0], isng4_nopol), over(isng4_nopol, harness4));
	printf("  a new source each SYN, its bucket made %+7.1f ns  (SYN-ACK without the policy "
	       "%.1f ns)\n", over(isng4_new, isng4_new_nopol), over(isng4_new_nopol, harness4_new));
	printf("  isnguard, valid, made the slot before (forwarding off) %7.1f ns\n",
	       over(ack_valid_prev, tc_empty));
	printf("Established segment, over an empty tc program (%.1f ns):\n", tc_empty->median);
	printf("  protected port, tc beside XDP     %7.1f ns\n", over(tc_cookie_prot, tc_empty));
	printf("  unprotected port, tc beside XDP   %7.1f ns\n", over(tc_cookie_open, tc_empty));
	printf("  protected port, --ingress tc      %7.1f ns\n", over(tc_ing_prot, tc_empty));
	printf("  protected port, XDP (no flow)     %7.1f ns (absolute)\n", xdp_prot->median);
	print_ab(other_path);
	close(conn_prot);
	close(conn_open);
	for (int i = 0; i < 3; i++)
		close(listeners[i]);
	bpf_object__close(other);
	bench_steps__destroy(steps);
	isnguard__destroy(no_policy);
	isnguard__destroy(syn_tc);
	isnguard__destroy(dp);
	bench_syn__destroy(bs);
	return 0;
}
