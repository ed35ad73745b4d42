/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The translate path's opening (bpf/proxy.h has the whole exchange): a
 * valid cookie ACK becomes, in place, the SYN to the server (proxy_open);
 * the server's SYN-ACK is turned into the client's ACK and the flow's
 * deltas (proxy_server_synack); a client segment that finds the flow open
 * meanwhile is translated (proxy_client_ack); a server's RST or challenge
 * ACK to the SYN is answered as the client's stack would
 * (proxy_server_refused, proxy_server_challenged).
 */
#ifndef ISNGUARD_BPF_PROXY_OPEN_H
#define ISNGUARD_BPF_PROXY_OPEN_H

#include "proxy.h"

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

#endif /* ISNGUARD_BPF_PROXY_OPEN_H */
