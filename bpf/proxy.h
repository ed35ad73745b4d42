/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The translating SYN proxy, for servers isnguard cannot hand a request
 * socket to: behind a gateway, or on a kernel without bpf_sk_assign_tcp_reqsk
 * (as pf's `synproxy state` and netfilter's SYNPROXY with seqadj do it).
 *
 *   client          isnguard (XDP / tc)                      server
 *   SYN       ->    cookie SYN-ACK (bpf/synproxy.h), window 0, no state
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
 * cookie SYN-ACK at tc, bpf/synproxy.h). The
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

/* What a valid cookie ACK tells the proxy: the cookie's options, the ACK's timestamps. */
struct proxy_req {
	struct cookie_opts opts;
	__u32 tsval;
	__u32 tsecr;		/* the cookie SYN-ACK's TSval, echoed */
	bool has_ts;
	__u8 rcv_wscale;	/* the shift the cookie SYN-ACK announced */
	bool listener;		/* a local listener has the port */
	/*
	 * The client's cookie ACK again, for a proxied flow still opening
	 * (synproxy_opening): the host's own half-open socket of it is
	 * isnguard's doing, the SYN goes again.
	 */
	bool reopen;
	/*
	 * The ACK is the client's zero-window probe (its seq one before its
	 * next: the ISN itself), which holds the cookie as well as its lost
	 * ACK did (synproxy_ack_req).
	 */
	bool probe;
	bool probe_worth;	/* set by synproxy_ack_cookie: a pure ACK of the translate path */
	/*
	 * Set by synproxy_ack_cookie: the ACK failed the check on a tuple the
	 * host closed, and goes to its stack (synproxy_invalid_to_stack).
	 */
	bool to_stack;
};

/*
 * A valid cookie ACK (cookie_check passed with req's options) turned
 * into the SYN to the server, in place (tc). The first one makes the flow
 * entry; a client retransmission while the server has not answered sends
 * the SYN again, until SYNPROXY_CONNECT_TIMEOUT_NS, when the client gets a
 * RST instead (STAT_PROXY_TIMEOUT: the caller redirects). PROXY_ANSWERED
 * when the server's SYN-ACK came between the caller's look at the entry
 * and this one: the segment is left as it was, for the caller to translate.
 */
__noinline int proxy_open(struct __sk_buff *skb, const struct pkt *pkt_arg,
			  const struct proxy_req *req)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	__u32 words[SYNHDR_MAX_WORDS] = {}, seq, ack, len, window;
	const struct cookie_opts *opts;
	struct pkt p, *pkt = &p;
	struct flow_state *st;
	struct synhdr h = {};
	struct flow_key key, *fk = &key;
	struct tcphdr *th;
	__u8 peer_shift;
	__u64 now;

	if (!pkt_arg || !req)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	opts = &req->opts;
	peer_shift = opts->wscale_ok ? opts->wscale : 0;
	if (tcp_flow_key(c, pkt, false, fk))
		return STAT_PASS_TRUNCATED;
	st = bpf_map_lookup_elem(&isn_flows, fk);
	now = bpf_ktime_get_coarse_ns();
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	if (!parse_plain_ip(c, pkt))
		return STAT_DROP_ERROR;	/* before any entry is made */
	seq = bpf_ntohl(th->seq) + (req->probe ? 1 : 0);	/* the client's next */
	ack = bpf_ntohl(th->ack_seq);
	window = bpf_ntohs(th->window);
	if (peer_shift > PROXY_WSCALE_MAX)
		peer_shift = PROXY_WSCALE_MAX;

	if (st && !(st->flags & FLOW_F_PROXY_OPEN)) {
		/*
		 * The caller saw it opening; the server has answered since.
		 * The request that came with the server's SYN-ACK goes on to
		 * it, translated, not dropped for a 200 ms retransmission.
		 */
		if ((st->flags & (FLOW_F_PROXIED | FLOW_F_ESTABLISHED)) ==
		    (FLOW_F_PROXIED | FLOW_F_ESTABLISHED))
			return PROXY_ANSWERED;
		return STAT_DROP_ERROR;	/* not a proxied flow's: nothing to open or translate */
	}
	if (st && (__s64)(now - st->created_ns) > (__s64)SYNPROXY_CONNECT_TIMEOUT_NS) {
		/* The server never answered: the client gets a RST at the seq it expects. */
		h.source = th->dest;
		h.dest = th->source;
		h.seq = ack;
		h.flags = TCPF_RST;
		len = synhdr_words(words, &h);
		proxy_flow_remove(fk);
		if (proxy_store(c, pkt, words, len, true, false))
			return STAT_DROP_ERROR;
		bpf_redirect(ctx_ifindex(c), 0);
		return STAT_PROXY_TIMEOUT;
	}
	if (!st) {
		struct flow_state *fresh;

		if (flow_table_full())
			return STAT_PROXY_TABLE_FULL;
		fresh = flow_new_get();
		if (!fresh)
			return STAT_DROP_ERROR;
		fresh->wire_isn = ack - 1;
		/* What the server will ack; the seq of the ACK isnguard sends it. */
		fresh->host_ack = seq;
		fresh->flags = FLOW_F_PROXIED | FLOW_F_PROXY_OPEN | FLOW_F_PASSIVE_OPEN |
			       FLOW_F_HOST_ACKED | FLOW_F_PROXY_SILENT |
			       (req->has_ts ? FLOW_F_PROXY_TS : 0) |
			       (opts->wscale_ok ? FLOW_F_PROXY_WSCALE : 0);
		fresh->hash = ISN_HASH_SIPHASH;
		/* The cookie's TSval until the server's SYN-ACK gives the delta. */
		fresh->ts_delta = req->tsecr;
		fresh->peer_tsval = req->tsval;
		fresh->peer_window = (__u16)window;
		fresh->wscale_wire = opts->wscale_ok ? req->rcv_wscale : 0;
		fresh->peer_wscale_wire = peer_shift;
		fresh->created_ns = now;
		fresh->last_seen_ns = now;
		/* No slot, no entry: nothing would expire it (sweep_queue_full). */
		fresh->sweep_id = sweep_queue(SWEEP_FLOWS, fk, now);
		if (!fresh->sweep_id)
			return STAT_PROXY_TABLE_FULL;
		if (bpf_map_update_elem(&isn_flows, fk, fresh, BPF_NOEXIST))
			return STAT_DROP_ERROR;
		flow_count_add(1);
		stat_inc(STAT_FLOW_CREATED);
	} else {
		st->peer_tsval = req->tsval;
		st->peer_window = (__u16)window;
		st->last_seen_ns = now;
	}

	h.source = th->source;
	h.dest = th->dest;
	h.seq = seq - 1;
	/* A SYN's window is never scaled (RFC 7323 2.2). */
	h.window = (__u16)proxy_rescale(window, peer_shift, 0);
	h.mss = opts->mss;
	h.flags = TCPF_SYN | (opts->ecn_ok ? TCPF_ECE | TCPF_CWR : 0);
	h.sack_ok = opts->sack_ok;
	h.ts = req->has_ts;
	h.tsval = req->tsval;
	h.wscale_ok = opts->wscale_ok;
	h.wscale = peer_shift;
	len = synhdr_words(words, &h);
	if (proxy_store(c, pkt, words, len, false, false))
		return STAT_DROP_ERROR;
	return STAT_PROXY_SYN;
}

/*
 * tc: the client segment proxy_open left to its caller (PROXY_ANSWERED),
 * the cookie ACK's seq and ack on a flow whose server has answered since
 * the caller looked: translated as ingress_tcp translates a proxied flow's
 * segment (ack back by seq_delta, TSecr, window), and passed on to the
 * server. It carries no SACK block to shift: its ack is the cookie's + 1,
 * the client has received nothing but the SYN-ACK, so it has nothing to
 * SACK. Its data or FIN ends the flow's silence (FLOW_F_PROXY_SILENT), or
 * a connection whose only data so far came this way would keep the
 * opening timeout. A global function of its own, run after proxy_open (their
 * frames do not add up) and verified once: ingress_tcp whole would cost
 * isnguard_tc_cookie tens of thousands more instructions.
 */
__noinline int proxy_client_ack(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	struct pkt p, *pkt = &p;
	struct flow_state *st;
	struct flow_key key;
	__be32 ack;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	if (tcp_flow_key(c, pkt, false, &key))
		return STAT_PASS_TRUNCATED;
	st = bpf_map_lookup_elem(&isn_flows, &key);
	if (!st || (st->flags & (FLOW_F_PROXIED | FLOW_F_ESTABLISHED | FLOW_F_PROXY_OPEN)) !=
			   (FLOW_F_PROXIED | FLOW_F_ESTABLISHED))
		return STAT_DROP_ERROR;
	if (ctx_load_be32(c, pkt->l4_off + TCP_ACK_OFF, &ack))
		return STAT_PASS_TRUNCATED;
	if (ctx_replace_be32(c, pkt->l4_off + TCP_ACK_OFF, pkt->l4_off + TCP_CSUM_OFF, ack,
			     bpf_htonl(bpf_ntohl(ack) - st->seq_delta)) ||
	    proxy_ingress(c, pkt, st))
		return STAT_DROP_ERROR;
	/* Its data ends the silence as on every other path (proxy_translate). */
	proxy_note_data(st, proxy_carries_data(pkt));
	if (pkt->tcp_flags & TCPF_FIN)
		flow_note_flags(st, FLOW_F_FIN_REMOTE);
	return STAT_ACK_TRANSLATED;
}

/*
 * tc egress: the server's SYN-ACK to isnguard's SYN. It fixes the flow's
 * deltas and window shifts (the first one), sends the client the server's
 * window (the first one: a clone), and becomes the ACK that completes the
 * server's handshake, redirected to the ingress: the client never sees it.
 * A retransmitted SYN-ACK (that ACK was lost) is answered the same way,
 * without a second window.
 */
__noinline int proxy_server_synack(struct __sk_buff *skb, const struct pkt *pkt_arg,
				   struct flow_state *st)
{
	struct pkt p, *pkt = &p;
	__u32 words[SYNHDR_MAX_WORDS] = {}, isn, len, peer_window;
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	struct synhdr h = {};
	__be16 sport, dport;
	struct syn_opts so;
	struct tcphdr *th;
	bool opened = false;
	__u16 window;

	if (!pkt_arg || !st)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	if ((pkt->tcp_flags & (TCPF_SYN | TCPF_ACK | TCPF_RST | TCPF_FIN)) != (TCPF_SYN | TCPF_ACK) ||
	    bpf_ntohl(th->ack_seq) != st->host_ack)
		return STAT_DROP_ERROR;	/* not an answer to isnguard's SYN: never the client's */
	isn = bpf_ntohl(th->seq);
	sport = th->source;
	dport = th->dest;
	window = bpf_ntohs(th->window);
	synopt_parse(c, pkt, &so);
	if (st->flags & FLOW_F_PROXY_OPEN) {
		bool scaled = st->flags & FLOW_F_PROXY_WSCALE;

		st->host_isn = isn;
		st->seq_delta = st->wire_isn - isn;
		if ((st->flags & FLOW_F_PROXY_TS) && so.has_ts)
			st->ts_delta -= so.tsval;
		else
			__sync_fetch_and_and(&st->flags, ~FLOW_F_PROXY_TS);
		/* The server scales only when both SYNs carried the option. */
		if (scaled && so.has_wscale) {
			st->wscale_host = so.wscale > PROXY_WSCALE_MAX ? PROXY_WSCALE_MAX : so.wscale;
			st->peer_wscale_host = st->peer_wscale_wire;
		}
		__sync_fetch_and_or(&st->flags, FLOW_F_ESTABLISHED | FLOW_F_PROXY_ACK);
		__sync_fetch_and_and(&st->flags, ~FLOW_F_PROXY_OPEN);
		opened = true;
	} else if (isn != st->host_isn) {
		return STAT_DROP_ERROR;
	} else {
		/*
		 * The server resent its SYN-ACK (our ACK was lost): the ACK again,
		 * which must pass the ingress hook untouched once more. With XDP
		 * ingress nothing translates it (tc beside XDP leaves proxied
		 * flows alone); with tc ingress it would be taken for the
		 * client's and translated a second time.
		 */
		__sync_fetch_and_or(&st->flags, FLOW_F_PROXY_ACK);
	}
	if (opened) {
		/*
		 * The client, held by the cookie SYN-ACK's zero window, gets the
		 * server's: a pure ACK as the server would send it (its seq,
		 * its TSval, its window in its own scale; a SYN-ACK's is never
		 * scaled), cloned out of this interface, where this program
		 * translates it as any segment of the server's. Lost, the
		 * client's window probe brings the server's own answer.
		 */
		struct synhdr u = {
			.source = sport,
			.dest = dport,
			.seq = isn + 1,
			.ack = st->host_ack,
			.window = (__u16)proxy_rescale(window, 0, st->wscale_host),
			.flags = TCPF_ACK,
			.ts = (st->flags & FLOW_F_PROXY_TS) && so.has_ts,
			.tsval = so.tsval,
			.tsecr = st->peer_tsval,
		};

		len = synhdr_words(words, &u);
		if (!proxy_store(c, pkt, words, len, false, false) &&
		    !bpf_clone_redirect(skb, ctx_ifindex(c), 0))
			stat_inc(STAT_PROXY_WINDOW_OPENED);
	}
	/* The client's window as of its cookie ACK, in the server's scale. */
	peer_window = proxy_rescale(st->peer_window, st->peer_wscale_wire, st->peer_wscale_host);
	h.source = dport;
	h.dest = sport;
	h.seq = st->host_ack;
	h.ack = isn + 1;
	h.window = (__u16)peer_window;
	h.flags = TCPF_ACK;
	h.ts = (st->flags & FLOW_F_PROXY_TS) && so.has_ts;
	h.tsval = st->peer_tsval;
	h.tsecr = so.tsval;
	len = synhdr_words(words, &h);
	if (proxy_store(c, pkt, words, len, true, false))
		return STAT_DROP_ERROR;
	bpf_redirect(ctx_ifindex(c), BPF_F_INGRESS);
	return STAT_PROXY_SYNACK;
}

/*
 * tc egress: the server's segment proxy_server_refused found no answer to
 * the proxy's SYN, an ACK acknowledging something else, gets the RST the
 * client's stack would send in SYN-SENT (RFC 9293 3.10.7.3: <SEQ=SEG.ACK>
 * <CTL=RST>), turned around in place and redirected into this device's
 * ingress as the client's, marked (ISN_MARK_PROXY_RST) so that the tc
 * ingress programs pass it untouched. Such an ACK is a server socket's on
 * the tuple left from an earlier connection (the client rebooted, a NAT
 * lost its state, isnguard's entry expired), answering the SYN with a
 * challenge ACK (RFC 5961 4): its ack is that socket's RCV.NXT, so the RST
 * is in its window exactly and clears it, and the proxy's next SYN (the
 * tick's resend, or the client's retransmitted ACK) opens the connection.
 * Dropped, the stale socket would hold the tuple until it died. A global
 * function: the header's words beside tc egress's frame.
 */
__noinline int proxy_server_challenged(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	__u32 words[SYNHDR_MAX_WORDS] = {}, len;
	struct pkt p, *pkt = &p;
	struct synhdr h = {};
	struct tcphdr *th;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	h.source = th->dest;
	h.dest = th->source;
	h.seq = bpf_ntohl(th->ack_seq);
	h.flags = TCPF_RST;
	len = synhdr_words(words, &h);
	if (proxy_store(c, pkt, words, len, true, false))
		return STAT_DROP_ERROR;
	skb->mark = ISN_MARK_PROXY_RST;
	bpf_redirect(ctx_ifindex(c), BPF_F_INGRESS);
	return STAT_PROXY_CHALLENGE_RST;
}

/*
 * tc egress, a proxied flow whose server has not answered: its RST (the
 * port is closed) goes to the client at the seq the client expects, and
 * the entry goes. An ACK that does not acknowledge the proxy's SYN (its
 * ISN + 1, host_ack) is answered with a RST (proxy_server_challenged);
 * anything else is not for the client.
 */
static __always_inline int proxy_server_refused(const struct ctx *c, const struct pkt *pkt,
						const struct flow_key *fk, struct flow_state *st)
{
	__be32 seq, ack;

	if (!(pkt->tcp_flags & TCPF_RST)) {
		if ((pkt->tcp_flags & (TCPF_SYN | TCPF_ACK)) != TCPF_ACK ||
		    ctx_load_be32(c, pkt->l4_off + TCP_ACK_OFF, &ack) ||
		    bpf_ntohl(ack) == st->host_ack)
			return STAT_DROP_ERROR;
		return proxy_server_challenged(c->ctx, pkt);
	}
	if (ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq) ||
	    ctx_replace_be32(c, pkt->l4_off + TCP_SEQ_OFF, pkt->l4_off + TCP_CSUM_OFF, seq,
			     bpf_htonl(st->wire_isn + 1)))
		return STAT_DROP_ERROR;
	proxy_flow_remove(fk);
	return STAT_PROXY_REFUSED;
}

#endif /* ISNGUARD_BPF_PROXY_H */
