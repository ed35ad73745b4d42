// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where isnguard_xdp's SYN answer spends its time (tests/bench_synproxy.c):
 * the datapath itself, and programs that stop after each step of
 * synproxy_syn_answer, loaded on the datapath's maps. Each leaves the SYN
 * as it came (XDP_TX when the step said "answer", else XDP_ABORTED), and
 * runs behind the same harness as the whole answer; the differences between
 * them are the steps' costs:
 * - decide: the parse, then synproxy_syn (the port, the destination and
 *   martian checks, the option parse, the listener lookup, the route);
 * - + checksum: synproxy_syn_check (the checksums, then the SYN policy's
 *   token);
 * - + cookie: the SipHash cookie and its TSval (synproxy_cookie);
 * the whole answer (the SYN-ACK written) is isnguard_xdp's, with a harness;
 * and the parse and the MAC alone (bench_step_mac_alone).
 */
#include "isnguard.bpf.c"

enum bench_step { STEP_DECIDE, STEP_CSUM, STEP_COOKIE, STEP_ANSWER };

/* Where the cookie step leaves its cookie, so that clang cannot drop the hash. */
__u32 bench_cookie_sink;

__noinline int bench_step_cookie_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg,
				     const struct synack_plan *plan)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	__u32 cookie = 0, tsval = 0;
	struct pkt p;
	int err;

	if (!pkt_arg || !plan)
		return -1;
	p = *pkt_arg;
	err = synproxy_cookie(&c, &p, plan, &cookie, &tsval);
	*(volatile __u32 *)&bench_cookie_sink = cookie ^ tsval;
	return err;
}

static __always_inline int bench_step(struct xdp_md *xdp, enum bench_step last)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct synack_plan plan = {};
	struct pkt pkt = {};

	if (fastpath_ack(xdp) != FASTPATH_MISS || parse_packet(&c, &pkt, true) != PARSE_OK ||
	    !tcp_is_syn(&pkt) || synproxy_syn_xdp(xdp, &pkt, &plan) != SYNPROXY_ANSWER)
		return XDP_ABORTED;
	if (last >= STEP_CSUM && synproxy_syn_check(xdp, &pkt, &plan))
		return XDP_ABORTED;
	if (last == STEP_COOKIE && bench_step_cookie_xdp(xdp, &pkt, &plan))
		return XDP_ABORTED;
	if (last == STEP_ANSWER)
		return synproxy_answer_xdp(xdp, &pkt, &plan) == STAT_COOKIE_SENT ? XDP_TX
									     : XDP_ABORTED;
	return XDP_TX;
}

/*
 * The parse and the cookie's MAC alone, on the SYN as it comes (left as it
 * is, measured over the empty program): cookie_make as the answer calls it,
 * SipHash-2-4 over the tuple, the client ISN, the slot and the options with
 * the slot's key. Beside the listener lookup alone, the least a keyed-cookie
 * answer that looks its listener up pays before it writes anything.
 */
SEC("xdp")
int bench_step_mac_alone(struct xdp_md *xdp)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	const struct isn_config *cfg = config_get();
	__u32 cookie = 0, tsval = 0;
	struct pkt pkt = {};
	union isn_input in;
	struct flow_key fk;

	if (!cfg || parse_packet(&c, &pkt, true) != PARSE_OK || tcp_flow_key(&c, &pkt, false, &fk) ||
	    cookie_make(cfg, &fk, 0x12345678, bpf_ktime_get_coarse_ns(), COOKIE_SACK, true, &cookie,
			&tsval, &in))
		return XDP_ABORTED;
	*(volatile __u32 *)&bench_cookie_sink = cookie ^ tsval;
	return XDP_TX;
}

SEC("xdp")
int bench_step_decide(struct xdp_md *xdp)
{
	return bench_step(xdp, STEP_DECIDE);
}

SEC("xdp")
int bench_step_csum(struct xdp_md *xdp)
{
	return bench_step(xdp, STEP_CSUM);
}

SEC("xdp")
int bench_step_cookie(struct xdp_md *xdp)
{
	return bench_step(xdp, STEP_COOKIE);
}

SEC("xdp")
int bench_step_answer(struct xdp_md *xdp)
{
	return bench_step(xdp, STEP_ANSWER);
}
