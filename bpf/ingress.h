/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Ingress: the peer's segments. Whatever acknowledges the host's data is in
 * wire sequence space and goes back by delta: the ack field (when ACK is
 * set, RST included), each SACK block edge (RFC 2018), and the seq quoted in
 * ICMP errors about the host's segments (bpf/icmp.h), so PMTU discovery and
 * error handling in the host's stack see numbers they recognise.
 */
#ifndef ISNGUARD_BPF_INGRESS_H
#define ISNGUARD_BPF_INGRESS_H

#include "ctx.h"
#include "flow.h"
#include "icmp.h"
#include "parse.h"
#include "proxy.h"
#include "tcp.h"
#include "tcpopt.h"

/* SACK block edges acknowledge host data: each goes back by delta. Returns blocks done or -1. */
static __always_inline int ingress_sack(const struct ctx *c, const struct pkt *pkt,
					__u32 delta)
{
	__u64 csum_off = pkt->l4_off + TCP_CSUM_OFF;
	struct tcp_opts opts;
	__u32 i, sum = 0;
	__be32 first;

	if (pkt->tcp_hlen <= TCP_HLEN_MIN)
		return 0;
	/*
	 * Most segments carry exactly NOP, NOP, timestamps (RFC 7323 appendix
	 * A's layout, what Linux sends): 12 bytes with no room for SACK, so
	 * the walk can be skipped.
	 */
	if (pkt->tcp_hlen == TCP_HLEN_MIN + TCPOLEN_TSTAMP_ALIGNED &&
	    !ctx_load_be32(c, pkt->l4_off + TCP_HLEN_MIN, &first) &&
	    first == bpf_htonl(TCPOPT_TSTAMP_HDR))
		return 0;
	if (!tcpopt_sack_fast(c, pkt, &opts))
		tcpopt_walk(c, pkt, &opts);
	/* Each edge written, the checksum fixed once for all of them. */
	for (i = 0; i < MAX_SACK_BLOCKS * 2; i++) {
		__u32 off = opts.sack_off + i * 4;
		__be32 old, new;

		if (i >= opts.sack_blocks * 2)
			break;
		if (ctx_load_be32(c, off, &old))
			return -1;
		new = bpf_htonl(bpf_ntohl(old) - delta);
		if (ctx_store_be32(c, off, new))
			return -1;
		sum = csum_add32(sum, csum_diff4(old, new, (off - csum_off) & 1));
	}
	if (opts.sack_blocks && ctx_csum_apply(c, csum_off, csum_fold32(sum)))
		return -1;
	return (int)opts.sack_blocks;
}

/*
 * Whether the host's stack would take this peer RST: exactly the seq it
 * last acknowledged (RFC 5961 section 3.2), or, in answer to the host's
 * SYN, an ack in (ISS, SND.NXT] (RFC 9293 section 3.10.7.3, SYN-SENT):
 * SND.NXT lies past ISS + 1 when the SYN carried Fast Open data.
 */
static __always_inline bool ingress_rst_acceptable(const struct ctx *c, const struct pkt *pkt,
						   const struct flow_state *st, __u32 host_ack)
{
	__be32 seq;

	if ((pkt->tcp_flags & TCPF_ACK) && (st->flags & FLOW_F_ACTIVE_OPEN) &&
	    !(st->flags & FLOW_F_ESTABLISHED) &&
	    host_ack - (st->host_isn + 1) <= st->host_snd_nxt - (st->host_isn + 1))
		return true;
	return (st->flags & FLOW_F_HOST_ACKED) &&
	       !ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq) &&
	       bpf_ntohl(seq) == st->host_ack;
}

/*
 * ingress_tcp's answer, not a counter: the segment is an ACK the SYN proxy
 * may own on a tuple whose connection is closed. Left as it is; the caller
 * asks the SYN proxy (synproxy_reopen) before it has it translated.
 */
#define INGRESS_CLOSED_FLOW (-7)

/*
 * closed_check: the segment is an ACK to a port the SYN proxy protects
 * (synproxy_ack_candidate, the proxy on). On such a port a client that
 * reuses the tuple of a closed connection (RST, or FINs both ways; the
 * host's TIME_WAIT socket gone or never there) gets a cookie SYN-ACK, and
 * its ACK must not be translated by the old connection's delta: the host's
 * stack would reset it, or the server behind the translate path would.
 */
static __always_inline int ingress_tcp(const struct ctx *c, const struct pkt *pkt,
				       bool closed_check)
{
	struct flow_state *st;
	struct flow_key fk;
	__u32 seen = 0, host_ack = 0;
	bool opening;
	__be32 ack;
	int blocks, stat = STAT_PASS_NOTHING_TO_DO;

	if (tcp_flow_key(c, pkt, false, &fk))
		return STAT_PASS_TRUNCATED;
	st = flow_lookup(&fk, &opening);
	if (!st || !flow_owns_segments(st))
		return STAT_PASS_UNTRACKED;
	/* Judged by tc ingress's caller; beside XDP, by isnguard_tc_cookie. */
	if (c->kind == CTX_SKB && closed_check && flow_before_socket(st)) {
		stat_inc(STAT_COOKIE_ACK_BEFORE_SOCKET);
		return STAT_PASS_UNTRACKED;
	}
	if (closed_check && flow_phase_of(st->flags) == FLOW_PHASE_CLOSED)
		return INGRESS_CLOSED_FLOW;
	/*
	 * A peer's SYN (tc ingress; XDP passes it without a lookup) on the
	 * tuple of a proxied connection that is over: a new connection's,
	 * holding nothing of the old one's spaces, on its way to the server
	 * untouched (its window is never scaled, its TSecr 0). The server's
	 * answer retires the entry (datapath_egress).
	 */
	if ((st->flags & FLOW_F_PROXIED) && (pkt->tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN &&
	    flow_phase_of(st->flags) == FLOW_PHASE_CLOSED)
		return STAT_PASS_NOTHING_TO_DO;
	if (st->flags & FLOW_F_PROXIED) {
		int proxy = proxy_ingress_check(c, pkt, st);

		if (proxy)
			return proxy;
	}
	if (pkt->tcp_flags & TCPF_FIN)
		seen |= FLOW_F_FIN_REMOTE;

	if (pkt->tcp_flags & TCPF_ACK) {
		if (ctx_load_be32(c, pkt->l4_off + TCP_ACK_OFF, &ack))
			return STAT_PASS_TRUNCATED;
		host_ack = bpf_ntohl(ack) - st->seq_delta;
		if (ctx_replace_be32(c, pkt->l4_off + TCP_ACK_OFF, pkt->l4_off + TCP_CSUM_OFF, ack,
				     bpf_htonl(host_ack)))
			return STAT_DROP_ERROR;
		blocks = ingress_sack(c, pkt, st->seq_delta);
		if (blocks < 0)
			return STAT_DROP_ERROR;
		if (blocks)
			stat_add(STAT_SACK_BLOCKS, blocks);
		stat = STAT_ACK_TRANSLATED;
		/*
		 * The handshake is done when the peer acknowledges the host's
		 * SYN and at most a window of data: a blind flood's random acks
		 * must not move entries into the flow table. A RST never does.
		 */
		if (!(pkt->tcp_flags & TCPF_RST) &&
		    host_ack - (st->host_isn + 1) <= ISN_HANDSHAKE_ACK_WINDOW)
			seen |= FLOW_F_ESTABLISHED;
	}
	if ((st->flags & FLOW_F_PROXIED) && proxy_translate(c, pkt, st, false))
		return STAT_DROP_ERROR;
	if (pkt->tcp_flags & TCPF_RST) {
		seen |= FLOW_F_RST_REMOTE;
		if (ingress_rst_acceptable(c, pkt, st, host_ack))
			seen |= FLOW_F_RST_REMOTE_OK;
	}

	/*
	 * The peer's segments do not refresh last_seen: every live connection
	 * has the host send too (its ACKs), and egress stamps those. That
	 * saves the per-packet clock read here (about 8 ns, make bench).
	 */
	if (opening && (seen & FLOW_F_ESTABLISHED))
		flow_promote(&fk, st, seen, bpf_ktime_get_coarse_ns());
	else
		flow_note_flags(st, seen);
	return stat;
}

/* A segment parse_packet(c, pkt, true) accepted: TCP, or ICMP for the error path. */
static __always_inline int datapath_ingress(const struct ctx *c, const struct pkt *pkt,
					    bool closed_check)
{
	if (pkt->proto == IPPROTO_TCP)
		return ingress_tcp(c, pkt, closed_check);
	return ingress_icmp(c, pkt);
}

/*
 * datapath_ingress for XDP's general path, as a global function: verified
 * once, not again for every path the parse of the frame left.
 */
__noinline int datapath_ingress_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg,
				    bool closed_check)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	return datapath_ingress(&c, &p, closed_check);
}

/*
 * datapath_ingress for tc, as a global function with a stack of its own:
 * tc ingress also calls the SYN proxy's global functions, and the stacks
 * of a program and the functions it calls must fit in 512 bytes together.
 */
__noinline int datapath_ingress_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
				    bool closed_check)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	return datapath_ingress(&c, &p, closed_check);
}

#endif /* ISNGUARD_BPF_INGRESS_H */
