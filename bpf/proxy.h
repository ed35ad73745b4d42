/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The translating SYN proxy, for servers isnguard cannot hand a request
 * socket to: behind a gateway, or on a kernel without bpf_sk_assign_tcp_reqsk
 * (as pf's `synproxy state` and netfilter's SYNPROXY with seqadj do it).
 *
 *   client          isnguard (XDP / tc)                      server
 *   SYN       ->    cookie SYN-ACK (bpf/syn_answer.h), window 0, no state
 *   ACK       ->    valid cookie: the ACK becomes, in place,   -> SYN (client ISN,
 *                   the SYN; flow entry PROXY_OPEN                 cookie's options)
 *                   tc egress: the SYN-ACK never reaches the  <- SYN-ACK
 *                   client; seq_delta = cookie - server ISN, ts_delta =
 *                   cookie TSval - server TSval; a clone, as the server's
 *   ACK       <-    pure ACK, takes the client the server's window
 *                   (bpf_clone_redirect, translated at tc egress); the
 *                   SYN-ACK becomes the ACK, sent back in         -> ACK
 *                   (bpf_redirect to ingress)
 *   data     <->    seq/ack, SACK, ICMP (as a rewritten flow), TSval/TSecr,
 *                   windows where the two handshakes' scales differ
 *
 * The zero window holds the client's request until the server can take it
 * (pf and netfilter do the same). Nothing is held here: the client's data
 * on the third ACK, or sent while the server's side opens anyway, is
 * dropped, and the client retransmits it (each such segment with the
 * cookie ACK's seq and ack re-sends the SYN, so a lost SYN or SYN-ACK
 * heals too).
 * A segment found opening whose server answers before the SYN proxy is done
 * with it is translated instead (proxy_client_ack).
 * A server RST to the SYN reaches the client as a RST it accepts; a server
 * silent for SYNPROXY_CONNECT_TIMEOUT_NS gets the client's next segment
 * answered with a RST. Either way the entry goes. Only valid cookie ACKs
 * create entries, in the never-evicting flow table: a SYN flood makes none.
 * One whose connection then carries nothing either way is held only for
 * the opening timeout (FLOW_F_PROXY_SILENT), so completed handshakes that
 * go silent do not fill it for the established one.
 *
 * This header translates a proxied flow's segments once it is open, and
 * holds the entry's helpers; bpf/proxy_open.h opens it (the SYN made of
 * the cookie ACK, the server's SYN-ACK, refusal and challenge ACK).
 */
#ifndef ISNGUARD_BPF_PROXY_H
#define ISNGUARD_BPF_PROXY_H

#include "config.h"
#include "cookie.h"
#include "ctx.h"
#include "flow.h"
#include "parse.h"
#include "resend.h"
#include "stats.h"
#include "synhdr.h"
#include "synopt.h"
#include "tcp.h"

/*
 * proxy_open: the flow the caller saw opening is open now (the server's
 * SYN-ACK was processed in between, on another CPU): the segment is an
 * established proxied flow's, for the caller to translate as one
 * (proxy_client_ack). Beside bpf/synproxy.h's SYNPROXY_* values (-1 to -5).
 */
#define PROXY_ANSWERED (-6)

#define PROXY_WSCALE_MAX 14
#define TCP_WORD3_OFF 12	/* data offset, flags, window */

/*
 * Writes a header isnguard built over the skb's TCP header, the skb cut or
 * grown to end right after it; turn sends it back where it came from
 * (addresses, ports were swapped by the caller's words, MACs here), and
 * fresh gives it a fresh packet's IP header too (synhdr_ipv4_answer: the
 * cookie SYN-ACK at tc, bpf/syn_answer.h). The
 * TCP checksum goes through bpf_l4_csum_replace, so it comes out right
 * whatever the skb's checksum state: the field starts as ones'-complement
 * zero, the header's sum is added as a plain change (left out of
 * CHECKSUM_PARTIAL skbs, whose field holds the pseudo header alone), the
 * pseudo header's sum as a pseudo-header change; a CHECKSUM_COMPLETE skb's
 * csum then learns the field's change (bpf_csum_update, a no-op otherwise).
 */
static __always_inline int proxy_store(const struct ctx *c, const struct pkt *pkt, __u32 *words,
				       __u32 tcp_len, bool turn, bool fresh)
{
	struct __sk_buff *skb = c->ctx;
	__u32 addrs[8] = {}, addr_words, hsum, psum;

	if (tcp_len > SYNHDR_MAX_WORDS * 4 || !parse_plain_ip(c, pkt) ||
	    bpf_skb_change_tail(skb, pkt->l4_off + tcp_len, 0))
		return -1;
	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, pkt->l3_off, &ip, sizeof(ip)))
			return -1;
		if (fresh)
			synhdr_ipv4_answer(&ip, tcp_len);
		else
			synhdr_ipv4(&ip, tcp_len, turn);
		if (bpf_skb_store_bytes(skb, pkt->l3_off, &ip, sizeof(ip), BPF_F_RECOMPUTE_CSUM))
			return -1;
		addrs[0] = ip.saddr;
		addrs[1] = ip.daddr;
		addr_words = 2;
	} else {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, pkt->l3_off, &ip6, sizeof(ip6)))
			return -1;
		if (fresh)
			synhdr_ipv6_answer(&ip6, tcp_len);
		else
			synhdr_ipv6(&ip6, tcp_len, turn);
		if (bpf_skb_store_bytes(skb, pkt->l3_off, &ip6, sizeof(ip6), BPF_F_RECOMPUTE_CSUM))
			return -1;
		__builtin_memcpy(addrs, &ip6.saddr, 32);
		addr_words = 8;
	}
	if (turn && !l3_device) {
		__u8 macs[12], swapped[12];

		if (bpf_skb_load_bytes(skb, 0, macs, sizeof(macs)))
			return -1;
		__builtin_memcpy(swapped, macs + 6, 6);
		__builtin_memcpy(swapped + 6, macs, 6);
		if (bpf_skb_store_bytes(skb, 0, swapped, sizeof(swapped), BPF_F_RECOMPUTE_CSUM))
			return -1;
	}
	((__u16 *)words)[8] = 0;
	hsum = csum_fold64(csum_words_add(words, tcp_len / 4, 0));
	psum = csum_fold64(synhdr_pseudo_sum(addrs, addr_words, tcp_len));
	((__u16 *)words)[8] = 0xffff;
	if (bpf_skb_store_bytes(skb, pkt->l4_off, words, tcp_len & 0x3c, BPF_F_RECOMPUTE_CSUM) ||
	    bpf_l4_csum_replace(skb, pkt->l4_off + TCP_CSUM_OFF, 0, hsum, 0) ||
	    bpf_l4_csum_replace(skb, pkt->l4_off + TCP_CSUM_OFF, 0, psum, BPF_F_PSEUDO_HDR))
		return -1;
	bpf_csum_update(skb, ~hsum);
	return 0;
}

/* A window of shift from as one of shift to: rounded up (as Linux aligns its own), at most 65535. */
static __always_inline __u32 proxy_rescale(__u32 window, __u8 from, __u8 to)
{
	__u32 bytes = window << (from & 0xf);

	to &= 0xf;
	window = (bytes + (1U << to) - 1) >> to;
	return window > 0xffff ? 0xffff : window;
}

/* The segment's window, told with shift from, rewritten for a reader using shift to. */
static __always_inline int proxy_window(const struct ctx *c, const struct pkt *pkt, __u8 from,
					__u8 to)
{
	__be32 old, new;
	__u32 v;

	if (from == to)
		return 0;
	if (ctx_load_be32(c, pkt->l4_off + TCP_WORD3_OFF, &old))
		return -1;
	v = bpf_ntohl(old);
	new = bpf_htonl((v & 0xffff0000) | proxy_rescale(v & 0xffff, from, to));
	if (new == old)
		return 0;
	stat_inc(STAT_PROXY_WINDOW);
	return ctx_replace_be32(c, pkt->l4_off + TCP_WORD3_OFF, pkt->l4_off + TCP_CSUM_OFF, old,
				new);
}

/* Offset of the segment's TSval, 0 when it has none: the aligned layout read directly. */
static __always_inline __u32 proxy_ts_off(const struct ctx *c, const struct pkt *pkt)
{
	struct syn_opts so;
	__be32 first;

	if (pkt->tcp_hlen < TCP_HLEN_MIN + 12)
		return 0;
	if (!ctx_load_be32(c, pkt->l4_off + TCP_HLEN_MIN, &first) &&
	    first == bpf_htonl(SYNOPT_TS_ALIGNED))
		return pkt->l4_off + TCP_HLEN_MIN + 4;
	synopt_walk(c, pkt, &so);
	return so.has_ts ? so.ts_off : 0;
}

/*
 * The server's segment on its way to the client (seq is done by the
 * caller): TSval into the cookie's timestamp space, the window into the
 * scale the client was told.
 */
static __always_inline int proxy_egress(const struct ctx *c, const struct pkt *pkt,
					const struct flow_state *st)
{
	__u32 off;

	if (st->flags & FLOW_F_PROXY_TS) {
		off = proxy_ts_off(c, pkt);
		if (off && tcp_shift_field(c, pkt, off, st->ts_delta))
			return -1;
	}
	return proxy_window(c, pkt, st->wscale_host, st->wscale_wire);
}

/* The client's segment on its way to the server (ack and SACK done by the caller). */
static __always_inline int proxy_ingress(const struct ctx *c, const struct pkt *pkt,
					 const struct flow_state *st)
{
	__u32 off;

	if (st->flags & FLOW_F_PROXY_TS) {
		off = proxy_ts_off(c, pkt);
		if (off && tcp_shift_field(c, pkt, off + 4, -st->ts_delta))
			return -1;
	}
	return proxy_window(c, pkt, st->peer_wscale_wire, st->peer_wscale_host);
}

/*
 * The translation of a proxied flow's segment, either way (after seq, ack
 * and SACK). XDP ingress and tc egress call it as global functions:
 * verified once on their own, not at every path of the functions they are
 * called from. tc ingress runs inside one already (datapath_ingress_skb),
 * where another frame would not fit the stack budget: it inlines it. A NULL
 * argument cannot come from the callers.
 */
__noinline int proxy_ingress_xdp(struct xdp_md *xdp, const struct pkt *pkt, struct flow_state *st)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt || !st)
		return -1;
	p = *pkt;	/* on this stack, the verifier ties its loads together */
	return proxy_ingress(&c, &p, st);
}

__noinline int proxy_egress_skb(struct __sk_buff *skb, const struct pkt *pkt, struct flow_state *st)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt || !st)
		return -1;
	p = *pkt;
	return proxy_egress(&c, &p, st);
}

/*
 * A segment with data or a FIN, either way, ends the flow's silence
 * (FLOW_F_PROXY_SILENT): it keeps the established timeout. Cleared once,
 * by the first such segment; the others only read the flag.
 */
static __always_inline void proxy_note_data(struct flow_state *st, bool data)
{
	if (data && (st->flags & FLOW_F_PROXY_SILENT))
		__sync_fetch_and_and(&st->flags, ~FLOW_F_PROXY_SILENT);
}

static __always_inline bool proxy_carries_data(const struct pkt *pkt)
{
	return (pkt->tcp_flags & TCPF_FIN) || pkt->l4_end > pkt->l4_off + pkt->tcp_hlen;
}

/*
 * The callee gets a copy: the verifier forgets what it knew of any stack
 * memory a global function was handed, and the caller reads *pkt again.
 * Egress is always tc. XDP's header prediction translates the client's
 * ACKs itself (bpf/fastpath.h), and notes their data there.
 */
static __always_inline int proxy_translate(const struct ctx *c, const struct pkt *pkt,
					   struct flow_state *st, bool egress)
{
	struct pkt copy = *pkt;
	int err;

	if (egress)
		err = proxy_egress_skb(c->ctx, &copy, st);
	else if (c->kind == CTX_XDP)
		err = proxy_ingress_xdp(c->ctx, &copy, st);
	else
		err = proxy_ingress(c, pkt, st);
	if (!err)
		proxy_note_data(st, proxy_carries_data(pkt));
	return err;
}

/*
 * Before translating a client segment of a proxied flow: 0 to translate,
 * else the decision. While the server has not answered, the segment is
 * the SYN proxy's (tc: STAT_PROXY_OPENING). isnguard's own ACK to the
 * server's SYN-ACK comes in through the ingress hooks already in the
 * server's space: it passes untouched, once.
 */
static __always_inline int proxy_ingress_check(const struct ctx *c, const struct pkt *pkt,
					       struct flow_state *st)
{
	__be32 seq, ack;

	if (st->flags & FLOW_F_PROXY_OPEN)
		return STAT_PROXY_OPENING;
	if (!(st->flags & FLOW_F_PROXY_ACK) ||
	    (pkt->tcp_flags & (TCPF_SYN | TCPF_RST | TCPF_FIN | TCPF_ACK)) != TCPF_ACK ||
	    ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq) ||
	    ctx_load_be32(c, pkt->l4_off + TCP_ACK_OFF, &ack) ||
	    bpf_ntohl(seq) != st->host_ack || bpf_ntohl(ack) != st->host_isn + 1)
		return 0;
	__sync_fetch_and_and(&st->flags, ~FLOW_F_PROXY_ACK);
	return STAT_PROXY_INJECTED;
}

/*
 * XDP, a SYN to a server behind this host: whether a connection lives on
 * its tuple (the server answers it, as the stack would a local socket's).
 * An entry of a closed connection goes, so the SYN opens a new one.
 */
__noinline bool proxy_tuple_busy_key(const struct flow_key *fk_arg)
{
	struct flow_key key, *fk = &key;
	struct flow_state *st;
	bool opening;

	if (!fk_arg)
		return false;
	key = *fk_arg;	/* kernel 6.1 takes a map key only from the stack, a packet or a map */
	st = flow_lookup(fk, &opening);
	if (!st)
		return false;
	if (flow_phase_of(st->flags) != FLOW_PHASE_CLOSED)
		return true;
	if (!bpf_map_delete_elem(FLOW_MAP(opening), fk)) {
		if (!opening)
			flow_count_add(-1);
		stat_inc(STAT_FLOW_REMOVED);
	}
	return false;
}

static __always_inline bool proxy_tuple_busy(const struct ctx *c, const struct pkt *pkt)
{
	struct flow_key fk;

	return !tcp_flow_key(c, pkt, false, &fk) && proxy_tuple_busy_key(&fk);
}

/* Removes a proxied flow's entry (the connection failed to open), and its resends. */
static __always_inline void proxy_flow_remove(const struct flow_key *fk)
{
	bpf_map_delete_elem(&isn_syn_resend, fk);
	if (!bpf_map_delete_elem(&isn_flows, fk)) {
		flow_count_add(-1);
		stat_inc(STAT_FLOW_REMOVED);
	}
}

#endif /* ISNGUARD_BPF_PROXY_H */
