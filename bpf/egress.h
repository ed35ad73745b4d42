/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Egress: the host's own segments. A SYN (active open) or SYN-ACK (passive
 * open) gets the keyed RFC 6528 ISN in place of the host's, and the flow
 * remembers delta = wire - host; every later segment of the flow gets
 * seq += delta (data, pure ACK, FIN, RST alike), as pf's `modulate state`.
 */
#ifndef ISNGUARD_BPF_EGRESS_H
#define ISNGUARD_BPF_EGRESS_H

#include "ctx.h"
#include "flow.h"
#include "isn.h"
#include "parse.h"
#include "proxy.h"
#include "proxy_open.h"
#include "synopt.h"
#include "tcp.h"
#include "tcpopt.h"

/* An entry's fields for a connection the host opens with host_isn, wire_isn on the wire. */
static __always_inline void egress_flow_fill(struct flow_state *e, __u32 host_isn, __u32 wire_isn,
					     __u32 flags, __u32 hash, __u32 host_ack,
					     __u32 snd_nxt, __u64 now)
{
	e->seq_delta = wire_isn - host_isn;
	e->host_isn = host_isn;
	e->wire_isn = wire_isn;
	e->flags = flags;
	e->hash = hash;
	e->host_ack = host_ack;
	e->host_snd_nxt = snd_nxt;
	e->created_ns = now;
	e->last_seen_ns = now;
}

/*
 * A new flow, or a new connection on a reused tuple: fresh keyed ISN.
 * host_ack is the SYN-ACK's ack (its flag in acked), snd_nxt the end of the
 * SYN's sequence space, both for RST checks.
 */
static __always_inline int egress_flow_start(const struct flow_key *fk, struct flow_state *st,
					     __u32 host_isn, __u32 open_flag, __u32 host_ack,
					     __u32 acked, __u32 snd_nxt, __u64 now, __u32 *wire)
{
	const struct isn_config *cfg = config_get();
	union isn_input *in = hash_input_get();
	const struct isn_key *key;
	struct flow_state *fresh;
	__u32 hash, wire_isn;

	if (!cfg || !in)
		return -1;
	key = key_get(cfg->key_gen);
	if (!key)
		return -1;
	hash = cfg->hash;
	wire_isn = isn_compute(key, hash, fk, now, in);

	if (st) {
		/* Same tuple, new host ISN: a new connection; the old one's delta is void. */
		egress_flow_fill(st, host_isn, wire_isn, open_flag | acked, hash, host_ack, snd_nxt,
				 now);
		stat_inc(STAT_FLOW_REUSED);
		*wire = wire_isn;
		return 0;
	}
	/*
	 * A new entry, written per CPU (isn_flow_new) and copied in. Apart
	 * from st: kernel 6.1 takes no map value from st, a global function's
	 * argument, and refused the one pointer for both.
	 */
	fresh = flow_new_get();
	if (!fresh)
		return -1;
	egress_flow_fill(fresh, host_isn, wire_isn, open_flag | acked, hash, host_ack, snd_nxt, now);
	/* Without a slot (queue full under a flood), the LRU still bounds it. */
	fresh->sweep_id = sweep_queue(SWEEP_OPENING, fk, now);
	if (!fresh->sweep_id)
		stat_inc(STAT_SWEEP_UNQUEUED);
	/* The wire ISN is known here: no lookup of the entry just made. */
	if (bpf_map_update_elem(&isn_opening, fk, fresh, BPF_NOEXIST))
		return -1;
	stat_inc(STAT_FLOW_CREATED);
	*wire = wire_isn;
	return 0;
}

static __always_inline int egress_syn(const struct ctx *c, const struct pkt *pkt,
				      const struct flow_key *fk, struct flow_state *st)
{
	bool synack = pkt->tcp_flags & TCPF_ACK;
	__u32 open_flag = synack ? FLOW_F_PASSIVE_OPEN : FLOW_F_ACTIVE_OPEN;
	__u32 acked = synack ? FLOW_F_HOST_ACKED : 0, host_ack = 0;
	struct tcp_opts opts;
	struct syn_opts so;
	__be32 seq, ack;
	__u32 host_isn, snd_nxt, wire_isn;
	__u64 now;
	int stat;

	/* Linux's SYN and SYN-ACK layout, read in place, holds no signature: no walk then. */
	if (synopt_linux_syn(c, pkt, &so))
		opts.is_signed = false;
	else
		tcpopt_walk(c, pkt, &opts);
	if (opts.is_signed) {
		/* Never rewritten; forget any earlier flow on this tuple so nothing is translated. */
		flow_forget(fk);
		return STAT_PASS_TCP_SIGNED;
	}
	if (ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq))
		return STAT_PASS_TRUNCATED;
	host_isn = bpf_ntohl(seq);
	snd_nxt = host_isn + tcp_seg_len(pkt);	/* past any Fast Open data */
	if (synack && !ctx_load_be32(c, pkt->l4_off + TCP_ACK_OFF, &ack))
		host_ack = bpf_ntohl(ack);
	now = bpf_ktime_get_ns();	/* the one precise clock read: M needs 4 us */

	if (st && st->host_isn == host_isn && !(st->flags & FLOW_F_HOST_DONE)) {
		/*
		 * The same host ISN on a connection the host has not ended: a
		 * retransmitted SYN or SYN-ACK (also after the peer's ACK, when
		 * the host dropped it: full accept queue, TCP_DEFER_ACCEPT), or
		 * the SYN-ACK of a simultaneous open. It keeps the wire ISN, or
		 * the peer's acks would no longer map back.
		 */
		stat = STAT_SYN_RETRANSMIT;
		if (synack)
			st->host_ack = host_ack;
		/* Retransmitted Fast Open SYNs go without their data; SND.NXT stays. */
		if (seq_after(snd_nxt, st->host_snd_nxt))
			st->host_snd_nxt = snd_nxt;
		flow_note(st, open_flag | acked, now);
		wire_isn = st->wire_isn;
	} else {
		/*
		 * No room for another connection: this one goes unprotected,
		 * with the host's ISN, rather than any live one losing its entry.
		 */
		if (!st && flow_table_full())
			return STAT_PASS_TABLE_FULL;
		if (egress_flow_start(fk, st, host_isn, open_flag, host_ack, acked, snd_nxt, now,
				      &wire_isn))
			return STAT_DROP_ERROR;	/* the stack retransmits; never leak the host ISN */
		stat = synack ? STAT_SYNACK_REWRITTEN : STAT_SYN_REWRITTEN;
	}
	if (ctx_replace_be32(c, pkt->l4_off + TCP_SEQ_OFF, pkt->l4_off + TCP_CSUM_OFF, seq,
			     bpf_htonl(wire_isn)))
		return STAT_DROP_ERROR;
	return stat;
}

/*
 * egress_syn as a global function, with its own stack: the ISN's hash and
 * the SYN proxy's SYN-ACK path (also a global function) would not fit in
 * one 512-byte stack together. st may be NULL (no flow yet).
 */
__noinline int egress_syn_skb(struct __sk_buff *skb, const struct pkt *pkt_arg,
			      const struct flow_key *fk, struct flow_state *st)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct flow_key key;
	struct pkt p;

	if (!pkt_arg || !fk)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	key = *fk;	/* kernel 6.1 takes a map key only from the stack, a packet or a map */
	return egress_syn(&c, &p, &key, st);
}

/*
 * Whether a host RST ends the connection. During the handshake Linux answers
 * an unacceptable ACK (SYN-SENT, SYN-RECV) with a bare RST at that ack's seq
 * and carries on (RFC 9293 sections 3.10.7.3 and 3.10.7.4): only a RST|ACK
 * or a RST at its SND.NXT is an abort then. Once established, Linux sends a
 * RST only when the connection is gone. Read before seq is shifted.
 */
static __always_inline bool egress_rst_is_abort(const struct ctx *c, const struct pkt *pkt,
						const struct flow_state *st)
{
	__be32 seq;

	if ((st->flags & FLOW_F_ESTABLISHED) || (pkt->tcp_flags & TCPF_ACK))
		return true;
	return ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq) ||
	       bpf_ntohl(seq) == st->host_snd_nxt;
}

static __always_inline int datapath_egress(const struct ctx *c)
{
	struct flow_state *st;
	struct flow_key fk;
	struct pkt pkt = {};
	bool opening;
	__u32 seen = 0;
	__be32 ack;
	int err;

	err = parse_packet(c, &pkt, false);
	if (err != PARSE_OK)
		return err;
	if (tcp_flow_key(c, &pkt, true, &fk))
		return STAT_PASS_TRUNCATED;
	st = flow_lookup(&fk, &opening);
	if (st && (st->flags & FLOW_F_PROXIED) && (pkt.tcp_flags & TCPF_SYN) &&
	    flow_phase_of(st->flags) == FLOW_PHASE_CLOSED) {
		/*
		 * The server's SYN or SYN-ACK on the tuple of a proxied
		 * connection that is over: a new connection's, whose SYN
		 * reached the server directly (the proxy off for the port,
		 * auto mode below its threshold, a signed SYN or one with IP
		 * options: SYNs XDP passes without a lookup). The old entry
		 * is retired and the SYN taken as a new flow's, as netfilter
		 * kills a closed conntrack entry that a SYN reuses and pf
		 * drops a closed state for a new one: isnguard's first look
		 * at the tuple is this answer. Taken for an answer to the
		 * proxy's SYN, it would be dropped until the entry expired. Only
		 * the host's side retires it: a spoofed SYN from the peer's
		 * side cannot take a closed connection's late segments'
		 * translation away.
		 */
		flow_forget(&fk);
		st = NULL;
	}
	if (st && (st->flags & FLOW_F_PROXIED)) {
		/* The server's answer to the translating SYN proxy's SYN (bpf/proxy.h). */
		if (pkt.tcp_flags & TCPF_SYN)
			return proxy_server_synack(c->ctx, &pkt, st);
		if (st->flags & FLOW_F_PROXY_OPEN)
			return proxy_server_refused(c, &pkt, &fk, st);
	}
	if (pkt.tcp_flags & TCPF_SYN) {
		struct pkt copy = pkt;	/* see proxy_translate */

		return egress_syn_skb(c->ctx, &copy, &fk, st);
	}
	if (!st)
		return STAT_PASS_UNTRACKED;
	seen = FLOW_F_HOST_SOCKET;	/* the host sends on the connection (flow_before_socket) */
	if ((pkt.tcp_flags & TCPF_RST) && egress_rst_is_abort(c, &pkt, st))
		seen |= FLOW_F_RST_LOCAL;
	/*
	 * Delta 0 (a local-path cookie connection: the host's ISN is the
	 * keyed one) leaves seq as it is, and no write: the stack's segments
	 * are clones of what it keeps for retransmission, and a write makes
	 * the kernel copy the head first.
	 */
	if (st->seq_delta && tcp_shift_field(c, &pkt, pkt.l4_off + TCP_SEQ_OFF, st->seq_delta))
		return STAT_DROP_ERROR;
	if (pkt.tcp_flags & TCPF_FIN)
		seen |= FLOW_F_FIN_LOCAL;
	if ((pkt.tcp_flags & TCPF_ACK) && !ctx_load_be32(c, pkt.l4_off + TCP_ACK_OFF, &ack)) {
		/* What a peer RST must carry as seq for the host to take it (RFC 5961 3.2). */
		if (st->host_ack != bpf_ntohl(ack))
			st->host_ack = bpf_ntohl(ack);
		seen |= FLOW_F_HOST_ACKED;
		/* The host only acknowledges, outside a SYN or RST, once it has the connection. */
		if (!(pkt.tcp_flags & TCPF_RST))
			seen |= FLOW_F_ESTABLISHED;
	}
	if ((st->flags & FLOW_F_PROXIED) && proxy_translate(c, &pkt, st, true))
		return STAT_DROP_ERROR;
	if (opening && (seen & FLOW_F_ESTABLISHED))
		flow_promote(&fk, st, seen, bpf_ktime_get_coarse_ns());
	else
		flow_note(st, seen, bpf_ktime_get_coarse_ns());
	return STAT_SEQ_TRANSLATED;
}

#endif /* ISNGUARD_BPF_EGRESS_H */
