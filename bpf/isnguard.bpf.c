// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard datapath. Egress (tc): the host's SYN/SYN-ACK gets the keyed
 * RFC 6528 ISN, later segments seq += delta. Ingress (XDP, or tc where XDP
 * is not wanted): ack, SACK edges and ICMP-quoted seq -= delta. The SYN
 * proxy (bpf/synproxy.h) answers SYNs to protected ports in XDP (or, with
 * `--syn-hook tc`, at tc ingress: no XDP program on the device, whose cost
 * on a veth every packet pays) and turns valid cookie ACKs into
 * connections at tc ingress: a request socket of
 * the host's listener, or (bpf/proxy.h) a connection isnguard opens to a
 * server itself and translates. Each program parses, looks up, decides,
 * rewrites, and ends in one counter.
 *
 * Verifier budget (make check-verifier, README "Verifier budget"): each
 * program loaded alone needs at most 300,000 instructions processed and
 * leaves 64 of its 512 stack bytes free, with clang 14 and clang 19, on
 * Debian 12's kernel 6.1 and on current ones. So the parse of a frame, with
 * its many paths, is followed by global functions (verified once each, not
 * once per path): the SYN proxy's decision and answer, the general ingress,
 * egress's SYN, the option walks (plain bounded loops: no callback frame on
 * top of theirs). Frames are kept small: new flow entries, and the tc
 * paths' hash inputs, are built in per-CPU maps. isnguard_xdp first tries
 * header prediction (bpf/fastpath.h), inlined; what it leaves goes to the
 * general path.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "compiler.h"
#include "cookie_ack.h"
#include "egress.h"
#include "events.h"
#include "fastpath.h"
#include "ingress.h"
#include "profile.h"
#include "sweeper.h"
#include "syn_answer.h"
#include "synproxy.h"

static __always_inline bool tcp_is_syn(const struct pkt *pkt)
{
	return pkt->proto == IPPROTO_TCP && (pkt->tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN;
}

/*
 * XDP, what header prediction left: SYNs to protected ports get a cookie;
 * with translate, the rest is translated. The frame is parsed here and each
 * kind of segment goes to global functions (synproxy_syn_answer,
 * datapath_ingress_xdp), each verified once: the parse's many paths (IPv4 or
 * IPv6, VLAN, options, extension headers) multiply only this dispatch.
 */
static __always_inline int xdp_ingress(struct xdp_md *xdp, bool translate)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt pkt = {};
	bool closed_check;
	int stat;

	stat = parse_packet(&c, &pkt, translate);
	if (stat != PARSE_OK)
		return stat;
	if (tcp_is_syn(&pkt)) {
		stat = synproxy_syn_answer(xdp, &pkt);
		if (stat != SYNPROXY_NOT_MINE)
			return stat;
		/*
		 * The peer's SYN has no ack or SACK in the host's space, so
		 * nothing to translate, and no flow lookup: two misses per
		 * connection in tables far larger than the cache (issue 18).
		 * A proxied tuple's too: its options go to the server as the
		 * client sent them, for the server to answer as it would.
		 */
		if (!(pkt.tcp_flags & (TCPF_RST | TCPF_FIN)))
			return STAT_PASS_PEER_SYN;
	}
	if (!translate)
		return pkt.proto == IPPROTO_TCP ? STAT_PASS_UNTRACKED : STAT_PASS_NOT_TCP;
	closed_check = synproxy_acks_wanted() && synproxy_ack_candidate(&c, &pkt);
	stat = datapath_ingress_xdp(xdp, &pkt, closed_check);
	if (stat != INGRESS_CLOSED_FLOW)
		return stat;
	/* A new cookie handshake on a closed connection's tuple: tc_cookie judges it. */
	if (synproxy_reopen_xdp(xdp, &pkt))
		return STAT_PASS_UNTRACKED;
	return datapath_ingress_xdp(xdp, &pkt, false);
}

static __always_inline int xdp_verdict(int stat)
{
	if (stat == STAT_COOKIE_SENT)
		return XDP_TX;
	return stat == STAT_DROP_ERROR || stat == STAT_SYN_BAD_CHECKSUM || stat == STAT_SYN_MARTIAN ||
	       stat == STAT_SYN_PREFIX_DENIED || stat == STAT_SYN_SOURCE_LIMITED ||
	       stat == STAT_SYN_TOTAL_LIMITED ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int isnguard_xdp(struct xdp_md *xdp)
{
	__u64 t0 = prof_start();
	int stat = fastpath_ack(xdp), verdict;

	/*
	 * The common case returns at once: clang then keeps less across the
	 * general path below, whose frame and calls make this program's
	 * deepest stack chain (make check-verifier).
	 */
	if (stat == STAT_ACK_TRANSLATED) {
		stat_inc(STAT_ACK_TRANSLATED);
		prof_end(ISN_PROF_XDP_FAST, stat, t0);
		return XDP_PASS;
	}
	if (stat == FASTPATH_MISS)
		stat = xdp_ingress(xdp, true);
	stat_inc(stat);
	verdict = xdp_verdict(stat);
	if (event_wanted(stat, verdict == XDP_DROP))
		event_packet_xdp(xdp, stat);
	prof_end(ISN_PROF_XDP, stat, t0);
	return verdict;
}

/* The SYN-proxy half alone, beside `--ingress tc`, where tc translates. */
SEC("xdp")
int isnguard_xdp_cookie(struct xdp_md *xdp)
{
	__u64 t0 = prof_start();
	int stat = xdp_ingress(xdp, false), verdict;

	/*
	 * Everything but SYNs is tc's to count: only the SYN proxy's own
	 * verdicts (syn_seen .. synproxy_auto_off in the counter list,
	 * syn_not_unicast, syn_not_local, syn_bad_checksum, syn_to_other_host,
	 * syn_martian, the SYN policy's syn_prefix_denied .. syn_monitor_would_drop)
	 * and errors count here, not a pass reason tc counts again.
	 */
	if ((stat >= STAT_SYN_SEEN && stat <= STAT_AUTO_OFF) || stat == STAT_SYN_NOT_UNICAST ||
	    stat == STAT_SYN_NOT_LOCAL || stat == STAT_SYN_BAD_CHECKSUM ||
	    stat == STAT_SYN_OTHER_HOST || stat == STAT_SYN_MARTIAN || stat == STAT_DROP_ERROR ||
	    (stat >= STAT_SYN_PREFIX_DENIED && stat <= STAT_SYN_MONITOR_DROP))
		stat_inc(stat);
	verdict = xdp_verdict(stat);
	if (event_wanted(stat, verdict == XDP_DROP))
		event_packet_xdp(xdp, stat);
	prof_end(ISN_PROF_XDP_COOKIE, stat, t0);
	return verdict;
}

static __always_inline int tc_verdict(int stat)
{
	switch (stat) {
	case STAT_COOKIE_HANDSHAKE:
		return TC_ACT_OK;	/* the skb carries its request socket to the stack */
	case STAT_PROXY_SYNACK:
	case STAT_PROXY_CHALLENGE_RST:
	case STAT_PROXY_TIMEOUT:
	case STAT_COOKIE_SENT:
		return TC_ACT_REDIRECT;	/* bpf_redirect() was called: back in, or back out */
	case STAT_PROXY_HELD:
	case STAT_SYN_BAD_CHECKSUM:
	case STAT_SYN_MARTIAN:
	case STAT_SYN_PREFIX_DENIED:
	case STAT_SYN_SOURCE_LIMITED:
	case STAT_SYN_TOTAL_LIMITED:
	case STAT_PROXY_TABLE_FULL:
	case STAT_DROP_ERROR:
	case STAT_COOKIE_BAD_MAC:
	case STAT_COOKIE_QUEUE_FULL:
	case STAT_COOKIE_ASSIGN_ERROR:
		return TC_ACT_SHOT;
	}
	return TC_ACT_UNSPEC;
}

/*
 * tc ingress instead of XDP (`--ingress tc`): translation, then cookie
 * ACKs; with `--syn-hook tc` (syn_at_tc) SYNs first, as xdp_ingress does.
 */
SEC("tc")
int isnguard_tc_ingress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	__u64 t0 = prof_start();
	struct pkt pkt = {};
	bool to_stack = false;
	int stat, cookie, verdict;

	if (synproxy_own_rst(skb)) {
		prof_end(ISN_PROF_TC_INGRESS, STAT_PROXY_INJECTED, t0);
		return TC_ACT_UNSPEC;
	}
	stat = parse_packet(&c, &pkt, true);
	if (stat == PARSE_OK && syn_at_tc && tcp_is_syn(&pkt)) {
		stat = synproxy_syn_tc(skb, &pkt);
		if (stat == SYNPROXY_NOT_MINE) {
			stat = pkt.tcp_flags & (TCPF_RST | TCPF_FIN) ? PARSE_OK : STAT_PASS_PEER_SYN;
		} else if (stat == STAT_SYN_PASSED_SOCKET) {
			/*
			 * A socket's or a proxied connection's tuple: the SYN goes
			 * on as at tc without the hook, where isnguard's own SYN,
			 * resent by the tick, passes (proxy_own_ack_passed) and a
			 * client's SYN while the server is silent is held
			 * (synproxy_opening). Its decision is counted too, as
			 * isnguard_xdp_cookie counts it beside tc.
			 */
			stat_inc(STAT_SYN_PASSED_SOCKET);
			stat = PARSE_OK;
		}
	}
	if (stat == PARSE_OK) {
		struct pkt copy = pkt;	/* see proxy_translate */
		bool closed_check = synproxy_acks_wanted() && synproxy_ack_candidate(&c, &pkt);

		stat = datapath_ingress_skb(skb, &copy, closed_check);
		if (stat == INGRESS_CLOSED_FLOW) {
			/* A new cookie handshake on a closed connection's tuple: judged below. */
			copy = pkt;
			if (synproxy_reopen_skb(skb, &copy)) {
				stat = STAT_PASS_UNTRACKED;
			} else {
				copy = pkt;
				stat = datapath_ingress_skb(skb, &copy, false);
			}
		}
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
		/* datapath_ingress_skb's lookup is not kept: synproxy_invalid_to_stack looks again. */
		synproxy_ack_flow_seen(skb, true);
		cookie = synproxy_ack(&c, &pkt, &to_stack);
		if (cookie != SYNPROXY_NOT_MINE)
			stat = cookie;
	}
	stat_inc(stat);
	verdict = to_stack ? TC_ACT_UNSPEC : tc_verdict(stat);
	if (event_wanted(stat, verdict == TC_ACT_SHOT))
		event_packet_skb(skb, stat);
	prof_end(ISN_PROF_TC_INGRESS, stat, t0);
	return verdict;
}

/*
 * Beside XDP ingress: only ACKs to protected ports that no rewritten flow
 * owns. XDP has counted every packet already; this counts only its own
 * decisions on cookie ACKs.
 */
static __always_inline int tc_cookie(struct __sk_buff *skb, int *stat_out)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct flow_state *st;
	struct pkt pkt = {};
	bool to_stack = false;
	struct flow_key fk;
	bool opening;
	int stat;

	*stat_out = ISN_PROF_NO_STAT;
	if (synproxy_own_rst(skb)) {
		*stat_out = STAT_PROXY_INJECTED;
		return TC_ACT_UNSPEC;
	}
	if (!synproxy_acks_wanted() || parse_packet(&c, &pkt, false) != PARSE_OK ||
	    !synproxy_ack_candidate(&c, &pkt))
		return TC_ACT_UNSPEC;
	if (tcp_flow_key(&c, &pkt, false, &fk))
		return TC_ACT_UNSPEC;
	st = flow_lookup(&fk, &opening);
	synproxy_ack_flow_seen(skb, st != NULL);
	if (st && flow_before_socket(st)) {
		stat_inc(STAT_COOKIE_ACK_BEFORE_SOCKET);
		st = NULL;	/* judged below, as if it had no entry */
	}
	if (st && flow_owns_segments(st)) {
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
		stat = synproxy_ack(&c, &pkt, &to_stack);
	}
	if (stat == SYNPROXY_NOT_MINE)
		return TC_ACT_UNSPEC;
	stat_inc(stat);
	*stat_out = stat;
	return to_stack ? TC_ACT_UNSPEC : tc_verdict(stat);
}

SEC("tc")
int isnguard_tc_cookie(struct __sk_buff *skb)
{
	__u64 t0 = prof_start();
	int stat, verdict = tc_cookie(skb, &stat);

	if (event_wanted(stat, verdict == TC_ACT_SHOT))
		event_packet_skb(skb, stat);
	prof_end(ISN_PROF_TC_COOKIE, stat, t0);
	return verdict;
}

SEC("tc")
int isnguard_tc_egress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	__u64 t0 = prof_start();
	int stat, verdict;

	/* Counted where it was answered (cookie_sent), at tc ingress. */
	if (synproxy_own_synack(skb)) {
		prof_end(ISN_PROF_TC_EGRESS, ISN_PROF_NO_STAT, t0);
		return TC_ACT_UNSPEC;
	}
	stat = datapath_egress(&c);
	stat_inc(stat);
	verdict = tc_verdict(stat);
	if (event_wanted(stat, verdict == TC_ACT_SHOT))
		event_packet_skb(skb, stat);
	prof_end(ISN_PROF_TC_EGRESS, stat, t0);
	return verdict;
}

/*
 * The tick device's ingress (bpf/resend.h): its IGMP query, once a second,
 * carries the translating proxy's due SYN resends and give-up RSTs.
 */
SEC("tc")
int isnguard_tc_tick(struct __sk_buff *skb)
{
	return resend_tick(skb);
}

/*
 * Starts the flow sweeper (bpf/sweeper.h). Attached nowhere: the loader
 * runs it once per attach (BPF_PROG_TEST_RUN), the timer then keeps it.
 * Returns 0, or 1 when the timer could not be set up.
 */
SEC("tc")
int isnguard_sweeper(struct __sk_buff *skb __maybe_unused)
{
	return (int)flow_sweeper_start();
}


/*
 * Reports a key written (bpf/events.h): attached nowhere, pinned beside
 * the state; `isnguard key` runs it (BPF_PROG_TEST_RUN) after each write.
 */
SEC("tc")
int isnguard_event_key(struct __sk_buff *skb __maybe_unused)
{
	return event_key_rotated();
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
