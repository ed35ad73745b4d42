/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN half of the SYN-cookie front end (bpf/synproxy.h): a SYN to a
 * protected port is judged (synproxy_syn: auto mode, destination, source,
 * the socket its tuple has), its options planned (synproxy_plan), its
 * checksums checked (bpf/syn_csum.h), and it is answered in place with a
 * SYN-ACK whose ISN is the cookie: XDP_TX at XDP, a redirect out of the
 * device it came in on at tc ingress (syn_at_tc).
 */
#ifndef ISNGUARD_BPF_SYN_ANSWER_H
#define ISNGUARD_BPF_SYN_ANSWER_H

#include "synproxy.h"
#include "syn_csum.h"

/* What the SYN-ACK offers: the client's options the host's stack would also take. */
struct synack_plan {
	struct cookie_opts opts;
	__u32 mss_index;
	__u16 mss_advertised;	/* the host's own MSS, from the interface MTU */
	bool ts;
	bool zero_window;	/* the translate path: the client waits for the server (bpf/proxy.h) */
	__u32 client_isn;
	__u32 client_tsval;
	/*
	 * The SYN's one reading of the coarse clock (bpf_ktime_get_coarse_ns):
	 * auto mode's rate, the SYN-ACK limits and the cookie's slot all take
	 * it, where each reading costs a helper call.
	 */
	__u64 now_ns;
	union {
		/* the source prefix's bucket (syn_source_tag), until its token is taken */
		__u64 source_tag;
		/* At tc (syn_at_tc): the answer's, from synproxy_cookie_skb to synproxy_reply_skb. */
		struct {
			__u32 cookie;
			__u32 tsval;
		};
	};
};

/*
 * translate: the connection goes the translate path (bpf/proxy.h), to a
 * server whose own stack decides its options, not the host's.
 */
static __always_inline void synproxy_plan(const struct ctx *c, const struct pkt *pkt,
					  const struct synproxy_config *sp,
					  const struct syn_opts *so, bool translate,
					  struct synack_plan *plan)
{
	__u32 hdrs = pkt->family == FLOW_FAMILY_IPV4 ? IPV4_TCP_HDRS : IPV6_TCP_HDRS;
	__u32 limit = so->has_mss ? so->mss
				  : (pkt->family == FLOW_FAMILY_IPV4 ? SYNPROXY_DEFAULT_MSS4
								     : SYNPROXY_DEFAULT_MSS6);
	__u32 mtu = 0, own = 0;

	/* The receiving device's MTU bounds what either side can send on this path. */
	bpf_check_mtu(c->ctx, 0, &mtu, 0, 0);
	if (mtu > hdrs)
		own = mtu - hdrs;
	if (own > 0xffff)
		own = 0xffff;
	if (own && own < limit)
		limit = own;
	plan->ts = so->has_ts && (sp->flags & SYNPROXY_F_TIMESTAMPS);
	/*
	 * The translate path's SYN-ACK offers a zero window, as pf's and
	 * netfilter's SYN proxies do: the client sends nothing past its ACK
	 * until the server's side is open, when isnguard passes it the
	 * server's window (proxy_server_synack). Otherwise its request, sent
	 * right behind the ACK, reached the gateway before any server could
	 * answer the SYN, and was dropped for a 200 ms retransmission.
	 */
	plan->zero_window = translate;
	plan->client_tsval = so->tsval;
	plan->mss_advertised = own ? own : cookie_mss_value(pkt->family, 0);
	plan->opts.wscale_ok = so->has_wscale && (sp->flags & SYNPROXY_F_WSCALE);
	plan->opts.wscale = so->wscale > COOKIE_TCP_WSCALE_MAX ? COOKIE_TCP_WSCALE_MAX : so->wscale;
	plan->opts.sack_ok = so->sack_ok && (sp->flags & SYNPROXY_F_SACK);
	/*
	 * RFC 3168 6.1.1: an ECN-setup SYN has ECE and CWR set. Offered only
	 * where the host's stack takes the connection: a server behind the
	 * translate path may decline ECN in its SYN-ACK, which the client
	 * never sees, and would then never echo the client's CE marks (the
	 * SYN to it carries no ECE/CWR either: the cookie says ECN off).
	 */
	plan->opts.ecn_ok = (pkt->tcp_flags & (TCPF_ECE | TCPF_CWR)) == (TCPF_ECE | TCPF_CWR) &&
			    (sp->flags & SYNPROXY_F_ECN) && !translate;
	if (plan->ts) {
		plan->mss_index = cookie_mss_index(pkt->family, limit, true);
	} else {
		/*
		 * Without timestamps the cookie has room for one bit (include/
		 * isnguard.h): Windows' options (SACK, window scale 8) with a
		 * tunnel's MSS, or the minimum MSS alone; never ECN. The SYN-ACK
		 * offers only that, so both ends agree; SACK and scaling off are
		 * safe, only slower.
		 */
		plan->mss_index = cookie_mss_index(pkt->family, limit, false);
		if (!cookie_opt_bits(plan->mss_index, &plan->opts, false)) {
			plan->mss_index = 0;
			plan->opts.sack_ok = false;
			plan->opts.wscale_ok = false;
		}
		plan->opts.ecn_ok = false;
	}
	if (!plan->opts.wscale_ok)
		plan->opts.wscale = 0;
}

/* The SYN-ACK's TCP header in words (checksum 0); returns the header length. */
static __always_inline __u32 synack_tcp_header(__u32 *w, const struct tcphdr *syn,
					       const struct synack_plan *plan,
					       const struct synproxy_config *sp, __u32 cookie,
					       __u32 tsval)
{
	struct synhdr h = {
		.source = syn->dest,
		.dest = syn->source,
		.seq = cookie,
		.ack = plan->client_isn + 1,
		.window = plan->zero_window ? 0 : (__u16)sp->window,
		.mss = plan->mss_advertised,
		.flags = TCPF_SYN | TCPF_ACK | (plan->opts.ecn_ok ? TCPF_ECE : 0),
		.sack_ok = plan->opts.sack_ok,
		.ts = plan->ts,
		.wscale_ok = plan->opts.wscale_ok,
		.wscale = (__u8)sp->rcv_wscale,
		.tsval = tsval,
		.tsecr = plan->client_tsval,
	};

	return synhdr_words(w, &h);
}

/*
 * Copies the header words into the frame, which ends right after them: one
 * bounds check for the whole header, of a constant length per header
 * length (as synproxy_csum_header sums the SYN's), where a check per word
 * reloaded the frame's bounds ten times.
 */
#define SYNACK_STORE_WORDS(n)						\
	case (n): {							\
		__u32 *dst = ctx_ptr(c, off, (n) * 4);			\
									\
		if (!dst)						\
			return -1;					\
		__builtin_memcpy(dst, words, (n) * 4);			\
		return 0;						\
	}
static __always_inline int synack_store_tcp(const struct ctx *c, __u32 off, const __u32 *words,
					    __u32 tcp_len)
{
	switch (tcp_len / 4) {
	SYNACK_STORE_WORDS(6) SYNACK_STORE_WORDS(7) SYNACK_STORE_WORDS(8) SYNACK_STORE_WORDS(9)
	SYNACK_STORE_WORDS(10)
	}
	return -1;
}

/*
 * Turns the SYN in the XDP frame into the SYN-ACK, in place: Ethernet
 * addresses swapped (a VLAN tag stays; an L3 device has none), the IP header
 * turned back to the client, the TCP header from synack_tcp_header, the
 * frame cut or grown to fit (not at all for Linux's SYN: its header is as
 * long as the answer's). Returns 0, SYNACK_UNTOUCHED when it failed before
 * changing a byte (the SYN can go to the host), or -1 after (it must be
 * dropped).
 */
static __always_inline int synproxy_reply(const struct ctx *c, const struct pkt *pkt,
					  const struct synack_plan *plan,
					  const struct synproxy_config *sp, __u32 cookie,
					  __u32 tsval)
{
	__u32 words[SYNHDR_MAX_WORDS] = {};
	__u32 tcp_len, frame_len, ip_len;
	struct tcphdr *th;
	int delta;

	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return SYNACK_UNTOUCHED;
	tcp_len = synack_tcp_header(words, th, plan, sp, cookie, tsval);
	if (tcp_len > SYNHDR_MAX_WORDS * 4 || tcp_len < TCP_HLEN_MIN + 4)
		return SYNACK_UNTOUCHED;
	ip_len = pkt->family == FLOW_FAMILY_IPV4 ? IPV4_HLEN_MIN : IPV6_HLEN;
	frame_len = pkt->l3_off + ip_len + tcp_len;
	delta = (int)frame_len - (int)((long)ctx_data_end(c) - (long)ctx_data(c));
	if (delta && bpf_xdp_adjust_tail(c->ctx, delta))
		return SYNACK_UNTOUCHED;	/* no tailroom to grow into */

	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);

		if (!ip)
			return -1;
		synhdr_ipv4_answer(ip, tcp_len);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, (const __u32 *)&ip->saddr, 2);
	} else {
		struct ipv6hdr *ip6 = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

		if (!ip6)
			return -1;
		synhdr_ipv6_answer(ip6, tcp_len);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, (const __u32 *)&ip6->saddr, 8);
	}
	if (!l3_device) {
		struct ethhdr *eth = ctx_ptr(c, 0, ETH_HLEN);
		__u8 mac[6];

		if (!eth)
			return -1;
		__builtin_memcpy(mac, eth->h_source, 6);
		__builtin_memcpy(eth->h_source, eth->h_dest, 6);
		__builtin_memcpy(eth->h_dest, mac, 6);
	}
	return synack_store_tcp(c, pkt->l4_off, words, tcp_len);
}

/*
 * A SYN (no ACK), in XDP or at tc (syn_at_tc). Returns the decision,
 * SYNPROXY_NOT_MINE when the SYN proxy does not guard its port, or
 * SYNPROXY_ANSWER with plan filled: the SYN gets a cookie SYN-ACK
 * (synproxy_answer, or synproxy_cookie_skb and synproxy_reply_skb).
 */
static __always_inline int synproxy_syn(const struct ctx *c, const struct pkt *pkt,
					struct synack_plan *plan)
{
	const struct synproxy_config *sp = synproxy_get();
	const struct syn_policy *pol;
	enum route_kind route;
	struct syn_opts so;
	struct tcphdr *th;
	bool translate;
	__u64 now = 0;
	__be16 dport;
	__u32 list;
	__be32 seq;
	int state;

	pol = syn_policy_get();
	if (!sp || !pol)
		return SYNPROXY_NOT_MINE;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th || !synproxy_port_protected(th->dest))
		return SYNPROXY_NOT_MINE;
	stat_inc(STAT_SYN_SEEN);
	/*
	 * Before any other work: the lists are the operator's word on the
	 * source. Whether the port is only watched is asked where it decides,
	 * not kept: a flag live through the rest would double the states the
	 * verifier walks.
	 */
	dport = th->dest;
	list = syn_source_list(c, pkt, pol);
	if (list == SYN_LIST_ALLOW)
		return STAT_SYN_PREFIX_ALLOWED;
	if (list == SYN_LIST_DENY)
		return syn_port_monitored(pol, dport) ? STAT_SYN_MONITOR_DROP : STAT_SYN_PREFIX_DENIED;
	state = synproxy_dst_check(c, pkt);
	if (state)
		return state;	/* nor counted toward auto mode's rate */
	if (synproxy_martian(c, pkt))	/* dropped, not counted toward the rate either */
		return syn_port_monitored(pol, dport) ? STAT_SYN_MONITOR_DROP : STAT_SYN_MARTIAN;
	if (sp->mode == SYNPROXY_AUTO) {
		now = bpf_ktime_get_coarse_ns();
		if (!synproxy_auto_active(sp, th->dest, now))
			return STAT_SYN_PASSED_AUTO;
	}
	/*
	 * Answered only in the plain form: no IP options, no FIN or RST beside
	 * SYN, and in XDP one buffer (a SYN spread over fragments carries more
	 * data than a SYN-ACK can be cut down from in place; an skb's tail is
	 * cut whatever its pages).
	 */
	if (pkt->tcp_flags & (TCPF_FIN | TCPF_RST) || !parse_plain_ip(c, pkt) ||
	    (c->kind == CTX_XDP &&
	     bpf_xdp_get_buff_len(c->ctx) != (__u64)(ctx_data_end(c) - ctx_data(c))))
		return STAT_SYN_UNANSWERABLE;
	synopt_parse(c, pkt, &so);
	if (so.is_signed)
		return STAT_SYN_UNANSWERABLE;	/* TCP-MD5/AO: only the host can sign */

	state = synproxy_socket_state(c, pkt);
	if (state >= 0 && state != BPF_TCP_LISTEN)
		return STAT_SYN_PASSED_SOCKET;	/* TIME_WAIT reuse, challenge ACK: the stack's call */
	/*
	 * Where the SYN goes (bpf/route.h, bpf/local_addr.h), whatever listener the lookup found:
	 * a wildcard one matches any destination. The cookie ACK takes the same
	 * decision (synproxy_ack_pre).
	 */
	route = route_of_dst(c, pkt);
	if (route == ROUTE_NONE || (route == ROUTE_FORWARDED && sp->path == SYNPROXY_PATH_LOCAL))
		return STAT_SYN_NOT_LOCAL;	/* not this host's, nor one it proxies for */
	if (route == ROUTE_LOCAL && state < 0)
		return STAT_SYN_NO_LISTENER;	/* the stack's RST */
	/* As synproxy_ack_cookie decides; the loader's flag stands for the kfunc there. */
	translate = route == ROUTE_FORWARDED || sp->path == SYNPROXY_PATH_TRANSLATE ||
		    (sp->path == SYNPROXY_PATH_AUTO && !(sp->flags & SYNPROXY_F_LOCAL_PATH));
	/*
	 * The translate path's connections have no socket to tell: their
	 * entries do. A live one's SYN is the server's call, as for a local
	 * socket.
	 */
	if (translate && proxy_tuple_busy(c, pkt))
		return STAT_SYN_PASSED_SOCKET;
	/*
	 * The source's bucket is named here, where the frame is parsed; its
	 * token is taken once the checksums hold (synproxy_syn_limit): only a
	 * SYN about to be answered spends one.
	 */
	if (pol->source_rate && syn_source_tag(c, pkt, pol, &plan->source_tag))
		return STAT_PASS_TRUNCATED;
	if (ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq))
		return STAT_DROP_ERROR;
	plan->client_isn = bpf_ntohl(seq);
	plan->now_ns = now ? now : bpf_ktime_get_coarse_ns();
	synproxy_plan(c, pkt, sp, &so, translate, plan);
	return syn_port_monitored(pol, dport) ? SYNPROXY_MONITOR : SYNPROXY_ANSWER;
}

/*
 * The SYN-ACK limits, for a SYN synproxy_syn planned an answer to whose
 * checksums hold: 0 when its SYN-ACK may go, else the decision
 * (STAT_SYN_SOURCE_LIMITED, STAT_SYN_TOTAL_LIMITED).
 */
static __always_inline int synproxy_syn_limit(const struct synack_plan *plan)
{
	const struct syn_policy *pol = syn_policy_get();

	return pol ? syn_limit(pol, plan->source_tag, plan->now_ns) : 0;
}

/*
 * What a SYN planned an answer to met at the checksums and the limits
 * (state, the decision; 0: it would be answered), in monitor mode: passed.
 */
static __always_inline int synproxy_monitor_verdict(int state)
{
	if (!state)
		return STAT_SYN_MONITOR_ANSWER;
	if (state == STAT_SYN_SOURCE_LIMITED || state == STAT_SYN_TOTAL_LIMITED)
		return STAT_SYN_MONITOR_LIMIT;
	return state == STAT_SYN_BAD_CHECKSUM ? STAT_SYN_MONITOR_DROP : state;
}

/* The cookie, and the timestamp it rides in, for the SYN synproxy_syn planned an answer to. */
static __always_inline int synproxy_cookie(const struct ctx *c, const struct pkt *pkt,
					   const struct synack_plan *plan, __u32 *cookie,
					   __u32 *tsval)
{
	const struct isn_config *cfg = config_get();
	union isn_input in;
	struct flow_key fk;

	if (!cfg || tcp_flow_key(c, pkt, false, &fk))
		return -1;
	return cookie_make(cfg, &fk, plan->client_isn, plan->now_ns,
			   cookie_opt_bits(plan->mss_index, &plan->opts, plan->ts), plan->ts,
			   cookie, tsval, &in) ? -1 : 0;
}

/* XDP: the SYN that synproxy_syn planned an answer to becomes the cookie SYN-ACK (XDP_TX). */
static __always_inline int synproxy_answer(const struct ctx *c, const struct pkt *pkt,
					   const struct synack_plan *plan)
{
	const struct synproxy_config *sp = synproxy_get();
	__u32 cookie, tsval = 0;
	int ret;

	if (!sp || synproxy_cookie(c, pkt, plan, &cookie, &tsval))
		return STAT_DROP_ERROR;
	ret = synproxy_reply(c, pkt, plan, sp, cookie, tsval);
	if (ret == SYNACK_UNTOUCHED)
		return STAT_SYN_UNANSWERABLE;
	return ret ? STAT_DROP_ERROR : STAT_COOKIE_SENT;
}

/*
 * synproxy_syn and synproxy_answer as global functions, each verified once
 * (inlined, the cookie's SipHash was verified again on every path the parse
 * of the frame left, most of the XDP programs' instructions), called one
 * after the other so their stacks do not add up. The plan lives in the
 * caller's frame.
 */
__noinline int synproxy_syn_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg,
				struct synack_plan *plan)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt_arg || !plan)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	return synproxy_syn(&c, &p, plan);
}

__noinline int synproxy_answer_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg,
				   const struct synack_plan *plan)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt_arg || !plan)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* the plan holds values only, read where it is */
	return synproxy_answer(&c, &p, plan);
}

/* The same at tc ingress (syn_at_tc). */
__noinline int synproxy_syn_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
				struct synack_plan *plan)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt_arg || !plan)
		return STAT_DROP_ERROR;
	p = *pkt_arg;
	return synproxy_syn(&c, &p, plan);
}

/*
 * At tc the answer is two global functions, called one after the other so
 * that the cookie's hash state and the SYN-ACK's header words are never on
 * the stack together: the cookie into the plan, then the reply.
 */
__noinline int synproxy_cookie_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
				   struct synack_plan *plan)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	__u32 cookie, tsval = 0;
	struct pkt p;

	if (!pkt_arg || !plan)
		return STAT_DROP_ERROR;
	p = *pkt_arg;
	if (synproxy_cookie(&c, &p, plan, &cookie, &tsval))
		return STAT_DROP_ERROR;
	plan->cookie = cookie;
	plan->tsval = tsval;
	return 0;
}

/*
 * The SYN's skb becomes the cookie SYN-ACK through proxy_store (checksums
 * right whatever the skb's state, a CHECKSUM_PARTIAL one's left for the
 * device to complete), marked for the device's tc egress
 * (synproxy_own_synack) and redirected out of it: STAT_COOKIE_SENT.
 */
__noinline int synproxy_reply_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
				  const struct synack_plan *plan)
{
	const struct synproxy_config *sp = synproxy_get();
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	__u32 words[SYNHDR_MAX_WORDS] = {};
	struct tcphdr *th;
	__u32 tcp_len;
	struct pkt p;

	if (!pkt_arg || !plan || !sp)
		return STAT_DROP_ERROR;
	p = *pkt_arg;
	th = ctx_ptr(&c, p.l4_off, TCP_HLEN_MIN);
	if (!th)
		return STAT_SYN_UNANSWERABLE;
	tcp_len = synack_tcp_header(words, th, plan, sp, plan->cookie, plan->tsval);
	if (tcp_len > SYNHDR_MAX_WORDS * 4 || tcp_len < TCP_HLEN_MIN + 4)
		return STAT_SYN_UNANSWERABLE;
	if (proxy_store(&c, &p, words, tcp_len, true, true))
		return STAT_DROP_ERROR;
	skb->mark = ISN_MARK_SYNACK;
	bpf_redirect(ctx_ifindex(&c), 0);
	return STAT_COOKIE_SENT;
}

/*
 * A SYN planned an answer to, checked in one global function: its
 * checksums, then the SYN-ACK limits (synproxy_syn_limit), so only a SYN
 * about to be answered spends a token. 0, or the decision.
 */
__noinline int synproxy_syn_check(struct xdp_md *xdp, const struct pkt *pkt_arg,
				  const struct synack_plan *plan)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	int state = synproxy_syn_csum_ctx(&c, pkt_arg);

	if (state || !plan)
		return state;
	return synproxy_syn_limit(plan);
}

/* The same at tc ingress (syn_at_tc). */
__noinline int synproxy_syn_check_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
				      const struct synack_plan *plan)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	int state = synproxy_syn_csum_ctx(&c, pkt_arg);

	if (state || !plan)
		return state;
	return synproxy_syn_limit(plan);
}

/*
 * XDP: a SYN (no ACK) to answer or not. The decision, STAT_COOKIE_SENT
 * meaning XDP_TX, or SYNPROXY_NOT_MINE (pkt still as parsed). Only a SYN
 * about to be answered has its checksums checked: every other goes to the
 * host's stack, which checks them itself.
 */
static __always_inline int synproxy_syn_answer(struct xdp_md *xdp, const struct pkt *pkt)
{
	struct synack_plan plan = {};
	struct pkt copy = *pkt;	/* see proxy_translate */
	int stat, state;

	stat = synproxy_syn_xdp(xdp, &copy, &plan);
	if (stat != SYNPROXY_ANSWER && stat != SYNPROXY_MONITOR)
		return stat;
	state = synproxy_syn_check(xdp, &copy, &plan);
	if (stat == SYNPROXY_MONITOR)
		return synproxy_monitor_verdict(state);
	if (state)
		return state;
	return synproxy_answer_xdp(xdp, &copy, &plan);	/* the callees only read the copy */
}

/*
 * synproxy_syn_answer at tc ingress (syn_at_tc): STAT_COOKIE_SENT means the
 * skb is the SYN-ACK, redirected (synproxy_reply_skb).
 */
static __always_inline int synproxy_syn_tc(struct __sk_buff *skb, const struct pkt *pkt)
{
	struct synack_plan plan = {};
	struct pkt copy = *pkt;	/* see proxy_translate */
	int stat, state;

	stat = synproxy_syn_skb(skb, &copy, &plan);
	if (stat != SYNPROXY_ANSWER && stat != SYNPROXY_MONITOR)
		return stat;
	state = synproxy_syn_check_skb(skb, &copy, &plan);
	if (stat == SYNPROXY_MONITOR)
		return synproxy_monitor_verdict(state);
	stat = state ? state : synproxy_cookie_skb(skb, &copy, &plan);
	return stat ? stat : synproxy_reply_skb(skb, &copy, &plan);
}

#endif /* ISNGUARD_BPF_SYN_ANSWER_H */
