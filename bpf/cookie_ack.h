/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ACK half of the SYN-cookie front end (bpf/synproxy.h): at tc ingress,
 * an ACK to a protected port that no socket owns is checked as a cookie
 * (synproxy_ack); a valid one becomes a request socket of the listener
 * (bpf_sk_assign_tcp_reqsk) or a connection the translate path opens
 * (bpf/proxy.h), an invalid one is dropped and counted by reason, or handed
 * to the stack within its budget (a late segment of a closed connection).
 * Also the segments isnguard sent itself and meets again (its SYN-ACK at tc
 * egress, its RST at tc ingress), and ACKs on a closed entry's tuple.
 */
#ifndef ISNGUARD_BPF_COOKIE_ACK_H
#define ISNGUARD_BPF_COOKIE_ACK_H

#include "proxy_open.h"
#include "synproxy.h"

/*
 * tc egress (syn_at_tc): whether the segment is the cookie SYN-ACK
 * synproxy_reply_skb redirected out of the device it came in on. Its mark
 * goes, as it came (a SYN's skb has none set before tc ingress).
 */
static __always_inline bool synproxy_own_synack(struct __sk_buff *skb)
{
	if (!syn_at_tc || skb->mark != ISN_MARK_SYNACK || skb->ingress_ifindex != skb->ifindex)
		return false;
	skb->mark = 0;
	return true;
}

/*
 * tc ingress: whether the segment is isnguard's RST to a server's challenge
 * ACK (bpf/proxy_open.h, proxy_server_challenged), redirected in from tc
 * egress. Its mark goes; it passes untouched (proxy_own_ack_passed).
 */
static __always_inline bool synproxy_own_rst(struct __sk_buff *skb)
{
	if (skb->mark != ISN_MARK_PROXY_RST)
		return false;
	skb->mark = 0;
	stat_inc(STAT_PROXY_INJECTED);
	return true;
}

/* An ACK (no SYN, no RST) to a protected port: what synproxy_ack takes. */
static __always_inline bool synproxy_ack_candidate(const struct ctx *c, const struct pkt *pkt)
{
	struct tcphdr *th;

	if (pkt->proto != IPPROTO_TCP ||
	    (pkt->tcp_flags & (TCPF_SYN | TCPF_RST | TCPF_ACK)) != TCPF_ACK)
		return false;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	return th && synproxy_port_protected(th->dest);
}

/*
 * Whether the ACK completes the kernel's own syncookie rather than one of
 * ours: a SYN the SYN proxy passed to the host (auto mode below the
 * threshold, IP options, a signed SYN) may have been answered by the stack's
 * syncookies, and then the ACK finds only the listener too. It is the
 * stack's; it is no easier to forge than ours (the kernel's secret).
 */
static __always_inline bool synproxy_kernel_cookie(const struct ctx *c, const struct pkt *pkt,
						   struct tcphdr *th)
{
	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);

		return ip && !bpf_tcp_raw_check_syncookie_ipv4(ip, th);
	}
	struct ipv6hdr *ip6 = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

	return ip6 && !bpf_tcp_raw_check_syncookie_ipv6(ip6, th);
}

/*
 * tc ingress, the first step on a synproxy_ack_candidate that no flow owns
 * (or on the cookie ACK again, req->reopen): whether the ACK may hold a
 * cookie of ours. SYNPROXY_CONTINUE with req's listener and timestamps
 * filled, else the decision (SYNPROXY_NOT_MINE with the SYN proxy off). A
 * global function: verified once on its own, where inlined into each caller
 * it would multiply their paths past the verifier's limit.
 */
__noinline int synproxy_ack_pre(struct __sk_buff *skb, const struct pkt *pkt_arg,
				struct proxy_req *req)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	const struct synproxy_config *sp = synproxy_get();
	struct bpf_sock_tuple t = {};
	struct pkt p, *pkt = &p;
	enum route_kind route;
	struct bpf_sock *sk;
	struct syn_opts so;
	__u32 size;
	int state = -1;

	if (!pkt_arg || !req || !sp)
		return SYNPROXY_NOT_MINE;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	if (synproxy_sock_tuple(c, pkt, &t, &size))
		return STAT_PASS_TRUNCATED;
	sk = bpf_skc_lookup_tcp(c->ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (sk) {
		state = sk->state;	/* -1: no socket */
		bpf_sk_release(sk);
	}
	if (state >= 0 && state != BPF_TCP_LISTEN && !req->reopen)
		return STAT_COOKIE_ACK_SOCKET;
	/*
	 * The route its SYN had (synproxy_syn): a forwarded destination's
	 * cookie is the translate path's, even with a wildcard listener here;
	 * one the SYN proxy left to the stack (no route, or forwarded with
	 * the local path alone) holds no cookie of ours.
	 */
	route = route_of_dst(c, pkt);
	if (route == ROUTE_NONE || (route == ROUTE_FORWARDED && sp->path == SYNPROXY_PATH_LOCAL))
		return SYNPROXY_NOT_MINE;
	if (route == ROUTE_LOCAL && state < 0)
		return STAT_COOKIE_ACK_NO_LISTENER;	/* the stack answers with a RST */
	synopt_parse(c, pkt, &so);
	/* The SYN proxy never answers a signed SYN, so a signed ACK holds no cookie of ours. */
	if (so.is_signed)
		return SYNPROXY_NOT_MINE;
	req->listener = route == ROUTE_LOCAL && state == BPF_TCP_LISTEN;
	req->tsval = so.tsval;
	req->tsecr = so.tsecr;
	req->has_ts = so.has_ts;
	req->rcv_wscale = (__u8)sp->rcv_wscale;
	return SYNPROXY_CONTINUE;
}

/*
 * An ACK that failed the cookie check (cookie_ack_invalid_mac), with the
 * flow entry of its tuple: whether it goes to the host's stack after all.
 * Linux answers an ACK that finds only a listener with a RST at its ack,
 * and a client whose last FIN comes after the host let go of the
 * connection (its TIME_WAIT socket never made: tcp_max_tw_buckets) needs
 * that RST, or it keeps the socket in LAST-ACK for minutes. So an ACK on a
 * tuple whose connection the host has closed (closed holds its flow entry,
 * FLOW_F_COOKIE_LOCAL, until it expires) passes (cookie_ack_invalid_to_stack):
 * the first SYNPROXY_LATE_ACKS on the entry whatever the rate (the host had
 * the connection; a busy server closes more a second than any host-wide
 * rate would pass), more up to invalid_ack_rate a second over all entries;
 * the rest are dropped. Not an ACK on a tuple with no entry: it may be a
 * segment of a handshake in flight whose cookie ACK was lost (a later
 * segment's seq names no client ISN, so its check fails), which a RST would
 * kill and the client's retransmission heals; and a flood of forged ACKs
 * reaches the host not at all. Nor one on an entry the host has not closed,
 * which came before the connection's socket (flow_before_socket): a later
 * segment, which the client sends again.
 */
static __always_inline bool synproxy_invalid_to_stack(struct flow_state *closed)
{
	const struct synproxy_config *sp;
	struct invalid_ack_budget *b;
	__u64 now, step, tat;
	__u32 zero = 0;

	if (!closed || !(closed->flags & FLOW_F_COOKIE_LOCAL) || !(closed->flags & FLOW_F_HOST_DONE))
		return false;
	sp = synproxy_get();
	if (!sp || !sp->invalid_ack_rate)
		return false;
	/* A race of CPUs on one entry passes a few more, no more. */
	if (closed->late_acks < SYNPROXY_LATE_ACKS) {
		__sync_fetch_and_add(&closed->late_acks, 1);
		stat_inc(STAT_COOKIE_INVALID_TO_STACK);
		return true;
	}
	b = bpf_map_lookup_elem(&isn_invalid_acks, &zero);
	if (!b)
		return false;
	now = bpf_ktime_get_coarse_ns();
	step = NSEC_PER_SEC / sp->invalid_ack_rate;
	tat = b->tat_ns;
	if ((__s64)(tat - now) > (__s64)(NSEC_PER_SEC / 10))
		return false;	/* over the rate, past a tenth of a second's burst */
	b->tat_ns = ((__s64)(tat - now) > 0 ? tat : now) + step;
	stat_inc(STAT_COOKIE_INVALID_TO_STACK);
	return true;
}

/*
 * Ingress, an ACK to a protected port on a tuple whose connection is closed
 * (ingress_tcp's INGRESS_CLOSED_FLOW): whether it opens a new connection
 * with a cookie of ours. The client reused the tuple and its SYN got a
 * cookie: the host had no socket left for it (the SYN proxy passes a SYN
 * that finds one), or, on the translate path, the entry was closed
 * (proxy_tuple_busy). Then the old entry goes, from both tables
 * (flow_forget), and the ACK is left untranslated
 * for the SYN proxy to judge again at tc. Otherwise (false) it is a late
 * segment of the old connection, translated as before. A closed entry
 * sees at most the last ACK of a close, so the hash runs about once a
 * connection where the peer closes first, never on the fast path.
 * Only the handshake ACKs real stacks send are checked: no options, or the
 * aligned timestamps alone (RFC 7323 appendix A; Linux, the BSDs, macOS,
 * Windows). No option walk: its call would sit on top of this frame, past
 * tc ingress's stack budget on kernel 6.1 (make check-verifier). Another
 * layout is translated as before, and the host's RST sends the client
 * back to its SYN.
 */
static __always_inline bool synproxy_reopen(const struct ctx *c, const struct pkt *pkt)
{
	const struct isn_config *cfg = config_get();
	union isn_input *in = hash_input_get();
	struct cookie_opts opts;
	struct flow_state *st;
	struct flow_key fk;
	struct syn_opts so;
	struct tcphdr *th;
	bool opening;

	if (!cfg || !in)
		return false;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th || tcp_flow_key(c, pkt, false, &fk))
		return false;
	__builtin_memset(&so, 0, sizeof(so));
	if (pkt->tcp_hlen != TCP_HLEN_MIN && !synopt_aligned_ts(c, pkt, &so))
		return false;
	if (cookie_check(cfg, &fk, bpf_ntohl(th->seq) - 1, bpf_ntohl(th->ack_seq) - 1,
			 bpf_ktime_get_coarse_ns(), so.has_ts, so.tsecr, &opts, in) != COOKIE_OK)
		return false;
	/*
	 * Still closed: another CPU may have replaced the entry meanwhile. And
	 * not the old connection's own first ACK or request once more (a copy
	 * reordered or retransmitted past the close: its cookie is the entry's
	 * wire ISN, a new handshake's is another), which would open the
	 * server's side a second time, or give the local path's listener a
	 * request socket for a connection that is over.
	 */
	st = flow_lookup(&fk, &opening);
	if (st && (flow_phase_of(st->flags) != FLOW_PHASE_CLOSED ||
		   st->wire_isn == bpf_ntohl(th->ack_seq) - 1))
		return false;
	flow_forget(&fk);
	stat_inc(STAT_FLOW_REOPENED);
	return true;
}

/* synproxy_reopen as global functions: the hash verified once, not once per parse path. */
__noinline bool synproxy_reopen_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt_arg)
		return false;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	return synproxy_reopen(&c, &p);
}

__noinline bool synproxy_reopen_skb(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt_arg)
		return false;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	return synproxy_reopen(&c, &p);
}

/* Where a cookie ACK's connection goes, as synproxy_syn decided for its SYN: the translate path. */
static __always_inline bool synproxy_ack_translates(const struct proxy_req *req,
						    const struct synproxy_config *sp)
{
	return !req->listener || req->reopen || sp->path == SYNPROXY_PATH_TRANSLATE ||
	       (sp->path == SYNPROXY_PATH_AUTO && !bpf_ksym_exists(bpf_sk_assign_tcp_reqsk));
}

/*
 * The word of skb->cb (tc's scratch for its programs) where the caller of
 * synproxy_ack_cookie says whether the tuple may have an entry: its own
 * flow lookup found one (isnguard_tc_cookie), or it kept none
 * (isnguard_tc_ingress). Only an entry, a closed local-path one, lets a
 * failed check go to the stack (synproxy_invalid_to_stack), so a forged
 * ACK on a tuple with none, a flood's, costs no second lookup of the
 * table. In skb->cb, not an argument or a field of req: either way kernel
 * 6.1's verifier processed 293,000 to 372,000 instructions for
 * isnguard_tc_cookie built with clang 19, past the budget (make
 * test-kernels; 240,180 with the second lookup always made).
 */
#define SYNPROXY_CB_FLOW_SEEN 0

static __always_inline void synproxy_ack_flow_seen(struct __sk_buff *skb, bool seen)
{
	skb->cb[SYNPROXY_CB_FLOW_SEEN] = seen;
}

/*
 * Second step: the cookie checked (a function of its own for the stack
 * the hash needs). Returns the decision, or where the connection goes:
 * SYNPROXY_LOCAL or SYNPROXY_TRANSLATE, with req->opts decoded. The
 * caller has set SYNPROXY_CB_FLOW_SEEN.
 */
__noinline int synproxy_ack_cookie(struct __sk_buff *skb, const struct pkt *pkt_arg,
				   struct proxy_req *req)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	const struct synproxy_config *sp = synproxy_get();
	const struct isn_config *cfg = config_get();
	union isn_input *in = hash_input_get();
	struct pkt p, *pkt = &p;
	struct flow_key fk;
	struct tcphdr *th;
	int verdict;

	if (!pkt_arg || !req || !sp || !cfg || !in)
		return SYNPROXY_NOT_MINE;
	p = *pkt_arg;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th || tcp_flow_key(c, pkt, false, &fk))
		return STAT_PASS_TRUNCATED;
	/*
	 * Worth a second look as a zero-window probe, should this one fail
	 * (synproxy_ack_req): a pure ACK (no data, no FIN) where the SYN-ACK
	 * offered the zero window, on the translate path. Set before the
	 * hash, so nothing of it is kept across.
	 */
	req->probe_worth = !req->probe && pkt->l4_end == pkt->l4_off + pkt->tcp_hlen &&
			   !(pkt->tcp_flags & TCPF_FIN) && synproxy_ack_translates(req, sp);
	/* A probe's seq is one before the client's next: its ISN (synproxy_ack_req). */
	verdict = cookie_check(cfg, &fk, bpf_ntohl(th->seq) - (req->probe ? 0 : 1),
			       bpf_ntohl(th->ack_seq) - 1, bpf_ktime_get_coarse_ns(), req->has_ts,
			       req->tsecr, &req->opts, in);
	if (verdict != COOKIE_OK) {
		if (req->probe)
			return STAT_COOKIE_BAD_MAC;	/* the first look did the rest */
		if (synproxy_kernel_cookie(c, pkt, th))
			return SYNPROXY_NOT_MINE;
		/* Here, not after the callers' paths have joined: kernel 6.1 walked it once per path. */
		req->to_stack = skb->cb[SYNPROXY_CB_FLOW_SEEN] &&
				synproxy_invalid_to_stack(bpf_map_lookup_elem(&isn_flows, &fk));
		return STAT_COOKIE_BAD_MAC;
	}
	stat_inc(STAT_COOKIE_ACK_VALID);
	/* A probe answers a zero window, which only the translate path offers. */
	return req->probe || synproxy_ack_translates(req, sp) ? SYNPROXY_TRANSLATE : SYNPROXY_LOCAL;
}

/*
 * The local path: the valid cookie ACK (req, from synproxy_ack_cookie) becomes
 * a request socket of the listener, with the options the cookie carried.
 */
__noinline int synproxy_assign(struct __sk_buff *skb, const struct pkt *pkt_arg,
			       const struct proxy_req *req)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple t = {};
	struct pkt p, *pkt = &p;
	struct tcp_sock *tp;
	struct bpf_sock *sk;
	__u32 size;
	int ret;

	if (!pkt_arg || !req)
		return STAT_DROP_ERROR;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	if (synproxy_sock_tuple(c, pkt, &t, &size))
		return STAT_PASS_TRUNCATED;
	sk = bpf_skc_lookup_tcp(c->ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return STAT_COOKIE_ACK_NO_LISTENER;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || sk->state != BPF_TCP_LISTEN) {
		bpf_sk_release(sk);
		return STAT_COOKIE_ASSIGN_ERROR;
	}
	/* A full accept queue would drop the new connection silently (sk_acceptq_is_full). */
	if (tp->inet_conn.icsk_inet.sk.sk_ack_backlog >
	    tp->inet_conn.icsk_inet.sk.sk_max_ack_backlog) {
		bpf_sk_release(sk);
		return STAT_COOKIE_QUEUE_FULL;
	}
	/* No request socket to give without the kfunc (before Linux 6.9: 6.1). */
	if (!bpf_ksym_exists(bpf_sk_assign_tcp_reqsk)) {
		bpf_sk_release(sk);
		return STAT_COOKIE_ASSIGN_ERROR;
	}
	attrs.rcv_tsval = req->tsval;
	attrs.rcv_tsecr = req->tsecr;	/* the kernel continues the host's TSval from it */
	attrs.mss = req->opts.mss;
	attrs.wscale_ok = req->opts.wscale_ok;
	attrs.snd_wscale = req->opts.wscale;
	attrs.rcv_wscale = req->opts.wscale_ok ? req->rcv_wscale : 0;	/* what the SYN-ACK said */
	attrs.sack_ok = req->opts.sack_ok;
	attrs.ecn_ok = req->opts.ecn_ok;
	attrs.tstamp_ok = req->has_ts;
	ret = bpf_sk_assign_tcp_reqsk(c->ctx, (struct sock *)tp, &attrs, sizeof(attrs));
	bpf_sk_release(sk);
	return ret ? STAT_COOKIE_ASSIGN_ERROR : STAT_COOKIE_HANDSHAKE;
}

/*
 * The local path made a connection (synproxy_assign): its entry, delta 0,
 * established (the cookie ACK completes the handshake), so that its later
 * segments are told from cookie ACKs by a lookup. Without it, a request
 * that comes in the same receive batch as the cookie ACK reaches tc before
 * the stack has made the connection, finds only the listener, and is
 * judged a second cookie ACK: a second request socket, which the stack
 * drops with the data. A closed flow's entry on the tuple is replaced, as
 * is one made by a cookie ACK the stack had not taken when this one came
 * from another CPU (flow_before_socket). With the table full the
 * connection goes on without one, as before.
 */
__noinline int synproxy_local_flow(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx cs = { .ctx = skb, .kind = CTX_SKB }, *c = &cs;
	struct flow_state *fresh, *old;
	struct pkt p, *pkt = &p;
	struct flow_key fk;
	struct tcphdr *th;
	__u32 seq, ack;
	__u64 now;

	if (!pkt_arg)
		return -1;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th || tcp_flow_key(c, pkt, false, &fk))
		return -1;
	seq = bpf_ntohl(th->seq);
	ack = bpf_ntohl(th->ack_seq);
	old = bpf_map_lookup_elem(&isn_flows, &fk);
	if (!old && flow_table_full())
		return -1;
	fresh = flow_new_get();
	if (!fresh)
		return -1;
	now = bpf_ktime_get_coarse_ns();
	fresh->host_isn = ack - 1;
	fresh->wire_isn = ack - 1;
	fresh->host_snd_nxt = ack;
	fresh->host_ack = seq;
	fresh->flags = FLOW_F_PASSIVE_OPEN | FLOW_F_ESTABLISHED | FLOW_F_HOST_ACKED |
		       FLOW_F_COOKIE_LOCAL;
	fresh->hash = ISN_HASH_SIPHASH;
	fresh->open_cpu = (__u16)bpf_get_smp_processor_id();	/* see flow_before_socket */
	fresh->created_ns = now;
	fresh->last_seen_ns = now;
	/*
	 * A slot of its own even in place of another entry: the old slot's
	 * id no longer matches, and it is dropped when due.
	 */
	fresh->sweep_id = sweep_queue(SWEEP_FLOWS, &fk, now);
	if (!fresh->sweep_id ||
	    bpf_map_update_elem(&isn_flows, &fk, fresh, old ? BPF_EXIST : BPF_NOEXIST))
		return -1;
	if (old)
		stat_inc(STAT_FLOW_REMOVED);	/* the entry it replaced */
	else
		flow_count_add(1);
	stat_inc(STAT_FLOW_CREATED);
	return 0;
}

/*
 * tc ingress: an ACK to a protected port (synproxy_ack_candidate) that no
 * flow owns, or the cookie ACK again while a proxied flow opens: the
 * decision. STAT_COOKIE_HANDSHAKE means the skb now carries the listener's
 * new request socket, STAT_PROXY_SYN that it is now the SYN to the server.
 * A flow whose server answered after the caller found it opening (reopen)
 * has the segment translated as its own, as if the caller had seen it
 * open: the request sent with the cookie ACK's retransmission, or on its
 * heels, reaches the server.
 * The global functions get copies of *pkt (see proxy_translate), and are
 * called one after the other, not nested: their stacks add up.
 */
static __always_inline int synproxy_ack_req(const struct ctx *c, const struct pkt *pkt,
					    bool reopen, bool *to_stack)
{
	struct proxy_req req = { .reopen = reopen };
	struct pkt copy = *pkt;
	int ret;

	ret = synproxy_ack_pre(c->ctx, &copy, &req);
	if (ret != SYNPROXY_CONTINUE)
		return ret;
	copy = *pkt;
	ret = synproxy_ack_cookie(c->ctx, &copy, &req);
	/*
	 * The translate path's cookie SYN-ACK offered a zero window. A client
	 * whose cookie ACK was lost (a SYN flood's congestion) then sends no
	 * data that would carry the cookie again, only zero-window probes: a
	 * pure ACK one byte before its next, whose seq is its ISN. Taken for
	 * the ACK, or the connection would wait for ever: a second hash for a
	 * pure ACK (no data, no FIN) that fails the first, as a forged one
	 * does, where the SYN-ACK offered that zero window: on the translate
	 * path (a forged pure ACK to a local listener costs one look). Two
	 * independent checks: a forged pure ACK there passes with twice the
	 * probability of one, 2^-29 without timestamps, 2^-53 with (bpf/
	 * cookie.h). The same global function again, verified once.
	 */
	if (ret == STAT_COOKIE_BAD_MAC && req.probe_worth && !req.to_stack) {
		req.probe = true;
		copy = *pkt;
		ret = synproxy_ack_cookie(c->ctx, &copy, &req);
		req.probe = ret == SYNPROXY_TRANSLATE;
	}
	*to_stack = req.to_stack;
	if (ret != SYNPROXY_TRANSLATE && ret != SYNPROXY_LOCAL)
		return ret;
	copy = *pkt;
	if (ret == SYNPROXY_TRANSLATE) {
		ret = proxy_open(c->ctx, &copy, &req);
		if (ret == STAT_PROXY_SYN) {
			copy = *pkt;
			resend_track(c->ctx, &copy);	/* isnguard resends it while the server is silent */
		} else if (ret == PROXY_ANSWERED) {
			/*
			 * Translated as the flow's own where the caller saw the
			 * flow opening. Where it saw no entry at all, another
			 * CPU would have had to open the flow and take the
			 * server's SYN-ACK meanwhile: too rare to be worth the
			 * verifier's instructions in isnguard_tc_ingress,
			 * which is at its budget on kernel 6.1.
			 */
			copy = *pkt;
			ret = reopen ? proxy_client_ack(c->ctx, &copy) : STAT_DROP_ERROR;
		}
		return ret;
	}
	ret = synproxy_assign(c->ctx, &copy, &req);
	if (ret == STAT_COOKIE_HANDSHAKE) {
		copy = *pkt;
		synproxy_local_flow(c->ctx, &copy);
	}
	return ret;
}

/*
 * *to_stack: the ACK failed the check but goes to the host's stack all the
 * same. A port only watched (monitor mode) answers no SYN, so its ACKs are
 * the host's: they pass unjudged, as with the proxy off. The caller has
 * set SYNPROXY_CB_FLOW_SEEN.
 */
static __always_inline int synproxy_ack(const struct ctx *c, const struct pkt *pkt, bool *to_stack)
{
	if (syn_ack_monitored(c, pkt))
		return SYNPROXY_NOT_MINE;
	return synproxy_ack_req(c, pkt, false, to_stack);
}

/*
 * tc ingress: a client segment of a proxied connection whose server had
 * not answered when the caller looked (st). The cookie ACK again (the
 * client retransmits the ACK or its first data) sends the SYN again, or is
 * translated when the server's SYN-ACK has come since (synproxy_ack_req);
 * anything else is dropped (STAT_PROXY_HELD), for the client to retransmit
 * once the connection is open.
 */
static __always_inline int synproxy_opening(const struct ctx *c, const struct pkt *pkt,
					    const struct flow_state *st)
{
	struct tcphdr *th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	bool to_stack;
	int ret;

	if (!th)
		return STAT_PASS_TRUNCATED;
	/* isnguard's own SYN, resent (bpf/resend.h), comes in here: it passes untouched. */
	if ((pkt->tcp_flags & (TCPF_SYN | TCPF_ACK | TCPF_RST | TCPF_FIN)) == TCPF_SYN &&
	    bpf_ntohl(th->seq) + 1 == st->host_ack)
		return STAT_PROXY_INJECTED;
	if (!synproxy_ack_candidate(c, pkt) || bpf_ntohl(th->seq) != st->host_ack ||
	    bpf_ntohl(th->ack_seq) != st->wire_isn + 1)
		return STAT_PROXY_HELD;
	/* Its tuple's entry is the proxied flow: never to the stack. */
	synproxy_ack_flow_seen(c->ctx, false);
	ret = synproxy_ack_req(c, pkt, true, &to_stack);
	return ret == SYNPROXY_NOT_MINE ? STAT_PROXY_HELD : ret;
}

#endif /* ISNGUARD_BPF_COOKIE_ACK_H */
