// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard datapath. Egress (tc): the host's SYN/SYN-ACK gets the keyed
 * RFC 6528 ISN, later segments seq += delta. Ingress (XDP, or tc where XDP
 * is not wanted): ack, SACK edges and ICMP-quoted seq -= delta. The SYN
 * proxy (bpf/synproxy.h) answers SYNs to protected ports in XDP and turns
 * valid cookie ACKs into connections at tc ingress: a request socket of
 * the host's listener, or (bpf/proxy.h) a connection isnguard opens to a
 * server itself and translates. Each program parses, looks up, decides,
 * rewrites, and ends in one counter.
 *
 * Size after verification (`bpftool prog loadall build/isnguard.bpf.o DIR`,
 * then `bpftool prog show pinned`, xlated / 8, global functions included):
 * isnguard_xdp 7481, isnguard_xdp_cookie 4216, isnguard_tc_ingress 8032,
 * isnguard_tc_cookie 5915, isnguard_tc_egress 6057 instructions; the
 * option walks are bpf_loop callbacks, verified once, and the SYN proxy's
 * and translator's larger steps global functions, verified once each.
 * isnguard_xdp first tries header prediction (bpf/fastpath.h), inlined;
 * what it leaves goes to the general path, a global function.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "compiler.h"
#include "egress.h"
#include "fastpath.h"
#include "ingress.h"
#include "synproxy.h"

static __always_inline bool tcp_is_syn(const struct pkt *pkt)
{
	return pkt->proto == IPPROTO_TCP && (pkt->tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN;
}

/* XDP: SYNs to protected ports get a cookie; with translate, the rest is translated. */
static __always_inline int xdp_ingress(const struct ctx *c, bool translate)
{
	struct pkt pkt = {};
	int stat;

	stat = parse_packet(c, &pkt, translate);
	if (stat != PARSE_OK)
		return stat;
	if (tcp_is_syn(&pkt)) {
		stat = synproxy_syn(c, &pkt);
		if (stat != SYNPROXY_NOT_MINE)
			return stat;
	}
	if (!translate)
		return pkt.proto == IPPROTO_TCP ? STAT_PASS_UNTRACKED : STAT_PASS_NOT_TCP;
	return datapath_ingress(c, &pkt);
}

/*
 * xdp_ingress(translate) for what header prediction (bpf/fastpath.h) left,
 * as a global function: verified once, not again for each way the
 * prediction can miss.
 */
__noinline int xdp_ingress_general(struct xdp_md *xdp)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };

	return xdp_ingress(&c, true);
}

static __always_inline int xdp_verdict(int stat)
{
	if (stat == STAT_COOKIE_SENT)
		return XDP_TX;
	return stat == STAT_DROP_ERROR ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int isnguard_xdp(struct xdp_md *xdp)
{
	int stat = fastpath_ack(xdp);

	/*
	 * The common case returns at once. Without this, clang kept more
	 * across the call below and this frame grew by 32 bytes, past the
	 * 512 the general path's call chain leaves (528): the XDP stack has
	 * 16 bytes to spare, see bpf/fastpath.h on the scratch map.
	 */
	if (stat == STAT_ACK_TRANSLATED) {
		stat_inc(STAT_ACK_TRANSLATED);
		return XDP_PASS;
	}
	if (stat == FASTPATH_MISS)
		stat = xdp_ingress_general(xdp);
	stat_inc(stat);
	return xdp_verdict(stat);
}

/* The SYN-proxy half alone, beside `--ingress tc`, where tc translates. */
SEC("xdp")
int isnguard_xdp_cookie(struct xdp_md *xdp)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	int stat = xdp_ingress(&c, false);

	/*
	 * Everything but SYNs is tc's to count: only the SYN proxy's own
	 * verdicts (syn_seen .. synproxy_auto_off in the counter list) and
	 * errors count here, not a pass reason tc counts again.
	 */
	if ((stat >= STAT_SYN_SEEN && stat <= STAT_AUTO_OFF) || stat == STAT_DROP_ERROR)
		stat_inc(stat);
	return xdp_verdict(stat);
}

static __always_inline int tc_verdict(int stat)
{
	switch (stat) {
	case STAT_COOKIE_HANDSHAKE:
		return TC_ACT_OK;	/* the skb carries its request socket to the stack */
	case STAT_PROXY_SYNACK:
	case STAT_PROXY_TIMEOUT:
		return TC_ACT_REDIRECT;	/* bpf_redirect() was called: back in, or back out */
	case STAT_PROXY_HELD:
	case STAT_PROXY_TABLE_FULL:
	case STAT_DROP_ERROR:
	case STAT_COOKIE_BAD_MAC:
	case STAT_COOKIE_EXPIRED:
	case STAT_COOKIE_UNKNOWN_KEY:
	case STAT_COOKIE_QUEUE_FULL:
	case STAT_COOKIE_ASSIGN_ERROR:
		return TC_ACT_SHOT;
	}
	return TC_ACT_UNSPEC;
}

/* tc ingress instead of XDP (`--ingress tc`): translation, then cookie ACKs. */
SEC("tc")
int isnguard_tc_ingress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt pkt = {};
	int stat, cookie;

	stat = parse_packet(&c, &pkt, true);
	if (stat == PARSE_OK) {
		struct pkt copy = pkt;	/* see proxy_translate */

		stat = datapath_ingress_skb(skb, &copy);
	}
	if (stat == STAT_PROXY_OPENING) {
		struct flow_key fk;
		struct flow_state *st;
		bool opening;

		if (tcp_flow_key(&c, &pkt, false, &fk) || !(st = flow_lookup(&fk, &opening)))
			stat = STAT_PASS_TRUNCATED;
		else
			stat = synproxy_opening(&c, &pkt, st);
	} else if (stat == STAT_PASS_UNTRACKED && synproxy_ack_candidate(&c, &pkt)) {
		cookie = synproxy_ack(&c, &pkt);
		if (cookie != SYNPROXY_NOT_MINE)
			stat = cookie;
	}
	stat_inc(stat);
	return tc_verdict(stat);
}

/*
 * Beside XDP ingress: only ACKs to protected ports that no rewritten flow
 * owns. XDP has counted every packet already; this counts only its own
 * decisions on cookie ACKs.
 */
SEC("tc")
int isnguard_tc_cookie(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct flow_state *st;
	struct pkt pkt = {};
	struct flow_key fk;
	bool opening;
	int stat;

	if (parse_packet(&c, &pkt, false) != PARSE_OK || !synproxy_ack_candidate(&c, &pkt))
		return TC_ACT_UNSPEC;
	if (tcp_flow_key(&c, &pkt, false, &fk))
		return TC_ACT_UNSPEC;
	st = flow_lookup(&fk, &opening);
	if (st) {
		/*
		 * XDP translated the flow's segments already; a proxied one
		 * still opening is the SYN proxy's, and isnguard's own ACK to
		 * the server passes (its mark cleared).
		 */
		if (!(st->flags & FLOW_F_PROXIED))
			return TC_ACT_UNSPEC;
		stat = proxy_ingress_check(&c, &pkt, st);
		if (stat == STAT_PROXY_INJECTED)
			stat_inc(stat);	/* XDP never sees it: it came in by redirect */
		if (stat != STAT_PROXY_OPENING)
			return TC_ACT_UNSPEC;
		stat = synproxy_opening(&c, &pkt, st);
	} else {
		stat = synproxy_ack(&c, &pkt);
	}
	if (stat == SYNPROXY_NOT_MINE)
		return TC_ACT_UNSPEC;
	stat_inc(stat);
	return tc_verdict(stat);
}

SEC("tc")
int isnguard_tc_egress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	int stat = datapath_egress(&c);

	stat_inc(stat);
	return tc_verdict(stat);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
