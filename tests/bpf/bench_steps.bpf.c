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
 *
 * The same for isnguard_tc_cookie's check of a cookie ACK (bench_ack_step_*,
 * tc programs run on the ACK itself, which none of them changes):
 * - parse: tc_cookie's own checks, the parse, synproxy_ack_candidate;
 * - + flow: the flow key, flow_lookup (both tables, missed) and the monitor check;
 * - + socket: the socket lookup (synproxy_socket_state);
 * - + route: route_of_dst_skb;
 * - + pre: synproxy_ack_pre as it is (the lookup, the route, the options);
 * - + hash: cookie_check alone;
 * - + cookie: synproxy_ack_cookie as it is (a failed check's kernel-cookie
 *   check and flow lookup too);
 * the whole check is isnguard_tc_cookie's.
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

enum bench_ack_step {
	ACK_STEP_PARSE, ACK_STEP_FLOW, ACK_STEP_SOCKET, ACK_STEP_ROUTE, ACK_STEP_PRE,
	ACK_STEP_HASH, ACK_STEP_COOKIE,
};

__noinline int bench_ack_socket(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt_arg)
		return -1;
	p = *pkt_arg;
	return synproxy_socket_state(&c, &p);
}

/* cookie_check alone, on what synproxy_ack_pre left in req. */
__noinline int bench_ack_hash(struct __sk_buff *skb, const struct pkt *pkt_arg,
			      struct proxy_req *req)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	const struct isn_config *cfg = config_get();
	union isn_input *in = hash_input_get();
	struct flow_key fk;
	struct tcphdr *th;
	struct pkt p;

	if (!pkt_arg || !req || !cfg || !in)
		return -1;
	p = *pkt_arg;
	th = ctx_ptr(&c, p.l4_off, TCP_HLEN_MIN);
	if (!th || tcp_flow_key(&c, &p, false, &fk))
		return -1;
	return cookie_check(cfg, &fk, bpf_ntohl(th->seq) - 1, bpf_ntohl(th->ack_seq) - 1,
			    bpf_ktime_get_coarse_ns(), req->has_ts, req->tsecr, &req->opts, in);
}

static __always_inline int bench_ack_step(struct __sk_buff *skb, enum bench_ack_step last)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct proxy_req req = {};
	struct pkt pkt = {}, copy;
	struct flow_key fk;
	bool opening;

	if (synproxy_own_rst(skb) || !synproxy_acks_wanted() ||
	    parse_packet(&c, &pkt, false) != PARSE_OK || !synproxy_ack_candidate(&c, &pkt))
		return TC_ACT_SHOT;
	if (last == ACK_STEP_PARSE)
		return TC_ACT_UNSPEC;
	if (tcp_flow_key(&c, &pkt, false, &fk) || flow_lookup(&fk, &opening) ||
	    syn_ack_monitored(&c, &pkt))
		return TC_ACT_SHOT;
	if (last == ACK_STEP_FLOW)
		return TC_ACT_UNSPEC;
	copy = pkt;
	if (last <= ACK_STEP_ROUTE) {
		if (bench_ack_socket(skb, &copy) != BPF_TCP_LISTEN)
			return TC_ACT_SHOT;
		copy = pkt;
		if (last == ACK_STEP_ROUTE && route_of_dst_skb(skb, &copy) != ROUTE_LOCAL)
			return TC_ACT_SHOT;
		return TC_ACT_UNSPEC;
	}
	if (synproxy_ack_pre(skb, &copy, &req) != SYNPROXY_CONTINUE)
		return TC_ACT_SHOT;
	if (last == ACK_STEP_PRE)
		return TC_ACT_UNSPEC;
	copy = pkt;
	if (last == ACK_STEP_HASH)
		return bench_ack_hash(skb, &copy, &req) < 0 ? TC_ACT_SHOT : TC_ACT_UNSPEC;
	synproxy_ack_flow_seen(skb, false);
	return synproxy_ack_cookie(skb, &copy, &req) == SYNPROXY_NOT_MINE ? TC_ACT_SHOT
									: TC_ACT_UNSPEC;
}

SEC("tc")
int bench_step_ack_parse(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_PARSE);
}

SEC("tc")
int bench_step_ack_flow(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_FLOW);
}

SEC("tc")
int bench_step_ack_socket(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_SOCKET);
}

SEC("tc")
int bench_step_ack_route(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_ROUTE);
}

SEC("tc")
int bench_step_ack_pre(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_PRE);
}

SEC("tc")
int bench_step_ack_hash(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_HASH);
}

SEC("tc")
int bench_step_ack_cookie(struct __sk_buff *skb)
{
	return bench_ack_step(skb, ACK_STEP_COOKIE);
}
