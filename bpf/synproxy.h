/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN-cookie front end of the local host. XDP answers a SYN to a
 * protected port with a SYN-ACK built in place (XDP_TX) whose ISN is a keyed
 * cookie (bpf/cookie.h); nothing is stored. At tc ingress, an ACK to a
 * protected port that no socket owns is checked: a valid cookie becomes a
 * request socket of the listener (bpf_sk_assign_tcp_reqsk, Linux 6.9), which
 * the stack turns into the connection with the options the cookie carried;
 * an invalid one is dropped and counted by reason. The host's listener never
 * sees a SYN, so a flood fills no queue.
 */
#ifndef ISNGUARD_BPF_SYNPROXY_H
#define ISNGUARD_BPF_SYNPROXY_H

#include <bpf/bpf_helpers.h>
#include "config.h"
#include "cookie.h"
#include "csum.h"
#include "ctx.h"
#include "flow.h"
#include "parse.h"
#include "stats.h"
#include "synopt.h"
#include "tcp.h"

/* Not a segment for the SYN proxy: the caller goes on as without it. */
#define SYNPROXY_NOT_MINE (-1)

#define TCPF_ECE 0x40
#define TCPF_CWR 0x80
#define SYNPROXY_TTL 64
#define IP_DF 0x4000
/* RFC 9293 3.7.1 and RFC 8200 section 8.3: the MSS to assume when a SYN names none. */
#define SYNPROXY_DEFAULT_MSS4 536
#define SYNPROXY_DEFAULT_MSS6 1220
#define IPV4_TCP_HDRS 40
#define IPV6_TCP_HDRS 60
/* The longest SYN-ACK header: 20 bytes, MSS, SACK-permitted + timestamps, window scale. */
#define SYNACK_MAX_WORDS 10
#define SYNACK_UNTOUCHED 1

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct synproxy_config);
} isn_synproxy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SYNPROXY_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} isn_synproxy_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct syn_rate);
} isn_syn_rate SEC(".maps");

static __always_inline const struct synproxy_config *synproxy_get(void)
{
	__u32 zero = 0;
	const struct synproxy_config *sp = bpf_map_lookup_elem(&isn_synproxy, &zero);

	return sp && sp->mode != SYNPROXY_OFF ? sp : NULL;
}

static __always_inline bool synproxy_port_protected(__be16 port)
{
	__u32 host_port = bpf_ntohs(port), word = host_port >> 6;
	__u64 *bits = bpf_map_lookup_elem(&isn_synproxy_ports, &word);

	return bits && ((*bits >> (host_port & 63)) & 1);
}

/*
 * Auto mode: the port's SYN rate over the last window of at least a second
 * switches cookies on above the threshold and off again below half of it,
 * so a rate near the threshold does not flap; a second with no SYN at all
 * counts as rate 0. Windows are per port and
 * shared by all CPUs; a race at a window's end loses a few counts, no more.
 */
static __always_inline bool synproxy_auto_active(const struct synproxy_config *sp, __be16 port)
{
	__u32 index = bpf_ntohs(port);
	struct syn_rate *rate = bpf_map_lookup_elem(&isn_syn_rate, &index);
	__u64 now, elapsed, per_sec;
	__u32 was, on;

	if (!rate)
		return true;
	now = bpf_ktime_get_coarse_ns();
	elapsed = now - rate->window_start_ns;
	if (elapsed >= NSEC_PER_SEC) {
		/*
		 * A whole second without a SYN: the port is quiet now, whatever
		 * the window counted before it (a flood that just stopped).
		 */
		per_sec = now - rate->last_syn_ns >= NSEC_PER_SEC
				  ? 0 : (__u64)rate->syns * NSEC_PER_SEC / elapsed;
		was = rate->active;
		on = was ? per_sec * 2 >= sp->syn_threshold : per_sec > sp->syn_threshold;
		rate->window_start_ns = now;
		rate->syns = 0;
		rate->active = on;
		if (on != was)
			stat_inc(on ? STAT_AUTO_ON : STAT_AUTO_OFF);
	}
	__sync_fetch_and_add(&rate->syns, 1);
	rate->last_syn_ns = now;
	return rate->active;
}

/* The segment's tuple for a socket lookup, as the host receives it. */
static __always_inline int synproxy_sock_tuple(const struct ctx *c, const struct pkt *pkt,
					       struct bpf_sock_tuple *t, __u32 *size)
{
	const void *src, *dst;
	struct tcphdr *th;

	if (tcp_addrs(c, pkt, &th, &src, &dst))
		return -1;
	if (pkt->family == FLOW_FAMILY_IPV4) {
		__builtin_memcpy(&t->ipv4.saddr, src, 4);
		__builtin_memcpy(&t->ipv4.daddr, dst, 4);
		t->ipv4.sport = th->source;
		t->ipv4.dport = th->dest;
		*size = sizeof(t->ipv4);
	} else {
		__builtin_memcpy(t->ipv6.saddr, src, 16);
		__builtin_memcpy(t->ipv6.daddr, dst, 16);
		t->ipv6.sport = th->source;
		t->ipv6.dport = th->dest;
		*size = sizeof(t->ipv6);
	}
	return 0;
}

/* The socket state for the segment's tuple: a listener, another socket, or none (-1). */
static __always_inline int synproxy_socket_state(const struct ctx *c, const struct pkt *pkt)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	__u32 size;
	int state;

	if (synproxy_sock_tuple(c, pkt, &t, &size))
		return -1;
	sk = bpf_skc_lookup_tcp(c->ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return -1;
	state = sk->state;
	bpf_sk_release(sk);
	return state;
}

/* What the SYN-ACK offers: the client's options the host's stack would also take. */
struct synack_plan {
	struct cookie_opts opts;
	__u32 mss_index;
	__u16 mss_advertised;	/* the host's own MSS, from the interface MTU */
	bool ts;
	__u32 client_isn;
	__u32 client_tsval;
};

static __always_inline void synproxy_plan(const struct ctx *c, const struct pkt *pkt,
					  const struct synproxy_config *sp,
					  const struct syn_opts *so, struct synack_plan *plan)
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
	plan->client_tsval = so->tsval;
	plan->mss_advertised = own ? own : cookie_mss_value(pkt->family, 0);
	plan->opts.wscale_ok = so->has_wscale && (sp->flags & SYNPROXY_F_WSCALE);
	plan->opts.wscale = so->wscale > COOKIE_TCP_WSCALE_MAX ? COOKIE_TCP_WSCALE_MAX : so->wscale;
	plan->opts.sack_ok = so->sack_ok && (sp->flags & SYNPROXY_F_SACK);
	/* RFC 3168 6.1.1: an ECN-setup SYN has ECE and CWR set. */
	plan->opts.ecn_ok = (pkt->tcp_flags & (TCPF_ECE | TCPF_CWR)) == (TCPF_ECE | TCPF_CWR) &&
			    (sp->flags & SYNPROXY_F_ECN);
	if (plan->ts) {
		plan->mss_index = cookie_mss_index(pkt->family, limit, true);
	} else {
		/*
		 * Without timestamps the cookie has room for little (include/
		 * isnguard.h): a coarser MSS, window scaling only at the shift
		 * Windows uses, no ECN. The SYN-ACK offers only that, so both
		 * ends agree; scaling off is safe, only slower.
		 */
		plan->mss_index = cookie_mss_index(pkt->family, limit, false);
		if (plan->opts.wscale != COOKIE_NOTS_WSCALE)
			plan->opts.wscale_ok = false;
		plan->opts.ecn_ok = false;
	}
	if (!plan->opts.wscale_ok)
		plan->opts.wscale = 0;
}

/*
 * The SYN-ACK's TCP header in words, Linux's option layout: MSS; SACK-permitted
 * and timestamps (or NOP, NOP, timestamps; or NOP, NOP, SACK-permitted);
 * NOP and window scale. Returns the header length.
 */
static __always_inline __u32 synack_tcp_header(__u32 *w, const struct tcphdr *syn,
					       const struct synack_plan *plan,
					       const struct synproxy_config *sp, __u32 cookie,
					       __u32 tsval)
{
	__u8 *b = (__u8 *)w;
	__u32 n = 5;

	__builtin_memcpy(&b[0], &syn->dest, 2);
	__builtin_memcpy(&b[2], &syn->source, 2);
	w[1] = bpf_htonl(cookie);
	w[2] = bpf_htonl(plan->client_isn + 1);
	w[n++] = bpf_htonl(SYNOPT_MSS << 24 | SYNOPT_LEN_MSS << 16 | plan->mss_advertised);
	if (plan->ts) {
		w[n++] = bpf_htonl((plan->opts.sack_ok ? (SYNOPT_SACK_PERM << 24 |
							  SYNOPT_LEN_SACK_PERM << 16)
						       : (SYNOPT_NOP << 24 | SYNOPT_NOP << 16)) |
				   SYNOPT_TIMESTAMP << 8 | SYNOPT_LEN_TIMESTAMP);
		w[n++] = bpf_htonl(tsval);
		w[n++] = bpf_htonl(plan->client_tsval);
	} else if (plan->opts.sack_ok) {
		w[n++] = bpf_htonl(SYNOPT_NOP << 24 | SYNOPT_NOP << 16 | SYNOPT_SACK_PERM << 8 |
				   SYNOPT_LEN_SACK_PERM);
	}
	if (plan->opts.wscale_ok)
		w[n++] = bpf_htonl(SYNOPT_NOP << 24 | SYNOPT_WSCALE << 16 | SYNOPT_LEN_WSCALE << 8 |
				   (sp->rcv_wscale & 0xff));
	b[12] = (__u8)(n << 4);
	b[13] = TCPF_SYN | TCPF_ACK | (plan->opts.ecn_ok ? TCPF_ECE : 0);
	b[14] = (__u8)(sp->window >> 8);
	b[15] = (__u8)sp->window;
	return n * 4;
}

/* Ones'-complement sum of n 32-bit words, in memory order, folded to 16 bits (RFC 1071). */
static __always_inline __u16 csum_words(const __u32 *w, __u32 n, __u64 sum)
{
#pragma unroll
	for (__u32 i = 0; i < SYNACK_MAX_WORDS; i++)
		if (i < n)
			sum += w[i];
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return csum_fold32((__u32)sum);
}

/* The IPv4 header of the SYN-ACK: the SYN's, addresses swapped, fields of a fresh packet. */
static __always_inline void synack_ipv4(struct iphdr *ip, __u32 tcp_len)
{
	__be32 addr = ip->saddr;

	ip->saddr = ip->daddr;
	ip->daddr = addr;
	ip->tos = 0;
	ip->tot_len = bpf_htons((__u16)(IPV4_HLEN_MIN + tcp_len));
	ip->id = 0;
	ip->frag_off = bpf_htons(IP_DF);
	ip->ttl = SYNPROXY_TTL;
	ip->check = 0;
	ip->check = (__u16)~csum_words((const __u32 *)ip, IPV4_HLEN_MIN / 4, 0);
}

static __always_inline void synack_ipv6(struct ipv6hdr *ip6, __u32 tcp_len)
{
	struct in6_addr addr = ip6->saddr;

	ip6->saddr = ip6->daddr;
	ip6->daddr = addr;
	*(__be32 *)ip6 = bpf_htonl(0x60000000);	/* version 6, no class, no label */
	ip6->payload_len = bpf_htons((__u16)tcp_len);
	ip6->hop_limit = SYNPROXY_TTL;
}

/* The TCP checksum over the pseudo header (addrs: the IP source and destination) and words. */
static __always_inline __u16 synack_tcp_csum(const __u32 *words, __u32 tcp_len,
					     const __u32 *addrs, __u32 addr_words)
{
	__u64 sum = (__u32)bpf_htons(IPPROTO_TCP) + (__u32)bpf_htons((__u16)tcp_len);

#pragma unroll
	for (__u32 i = 0; i < 8; i++)
		if (i < addr_words)
			sum += addrs[i];
	return (__u16)~csum_words(words, tcp_len / 4, sum);
}

/* Copies the header words into the frame; the frame ends right after them. */
static __always_inline int synack_store_tcp(const struct ctx *c, __u32 off, const __u32 *words,
					    __u32 tcp_len)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < SYNACK_MAX_WORDS; i++) {
		__u32 *word;

		if (i * 4 >= tcp_len)
			break;
		word = ctx_ptr(c, off + i * 4, sizeof(*word));
		if (!word)
			return -1;
		*word = words[i];
	}
	return 0;
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
	__u32 words[SYNACK_MAX_WORDS] = {};
	__u32 tcp_len, frame_len, ip_len;
	struct tcphdr *th;
	int delta;

	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return SYNACK_UNTOUCHED;
	tcp_len = synack_tcp_header(words, th, plan, sp, cookie, tsval);
	if (tcp_len > SYNACK_MAX_WORDS * 4 || tcp_len < TCP_HLEN_MIN + 4)
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
		synack_ipv4(ip, tcp_len);
		((__u16 *)words)[8] = synack_tcp_csum(words, tcp_len, (const __u32 *)&ip->saddr, 2);
	} else {
		struct ipv6hdr *ip6 = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

		if (!ip6)
			return -1;
		synack_ipv6(ip6, tcp_len);
		((__u16 *)words)[8] = synack_tcp_csum(words, tcp_len, (const __u32 *)&ip6->saddr, 8);
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
 * The IP header alone before TCP, as the SYN-ACK is built: no IPv4 options,
 * no IPv6 extension headers, not a fragment (a first fragment parses, but
 * only the reassembled SYN is the client's).
 */
static __always_inline bool synproxy_plain_ip(const struct ctx *c, const struct pkt *pkt)
{
	struct iphdr *iph;

	if (pkt->family == FLOW_FAMILY_IPV6)
		return pkt->l4_off == pkt->l3_off + IPV6_HLEN;
	iph = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);
	return iph && pkt->l4_off == pkt->l3_off + IPV4_HLEN_MIN &&
	       !(iph->frag_off & bpf_htons(IP_MF | IP_OFFSET));
}

/*
 * XDP: a SYN (no ACK). Returns the decision, STAT_COOKIE_SENT meaning
 * XDP_TX, or SYNPROXY_NOT_MINE when the SYN proxy does not guard its port.
 */
static __always_inline int synproxy_syn(const struct ctx *c, const struct pkt *pkt)
{
	const struct synproxy_config *sp = synproxy_get();
	const struct isn_config *cfg;
	const struct isn_key *key;
	struct synack_plan plan = {};
	struct syn_opts so;
	struct flow_key fk;
	struct tcphdr *th;
	__u32 cookie, tsval = 0;
	__be32 seq;
	int state, ret;

	if (!sp)
		return SYNPROXY_NOT_MINE;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th || !synproxy_port_protected(th->dest))
		return SYNPROXY_NOT_MINE;
	stat_inc(STAT_SYN_SEEN);
	if (sp->mode == SYNPROXY_AUTO && !synproxy_auto_active(sp, th->dest))
		return STAT_SYN_PASSED_AUTO;
	/*
	 * Answered only in the plain form: no IP options, no FIN or RST beside
	 * SYN, and one buffer (a SYN spread over fragments carries more data
	 * than a SYN-ACK can be cut down from in place).
	 */
	if (pkt->tcp_flags & (TCPF_FIN | TCPF_RST) || !synproxy_plain_ip(c, pkt) ||
	    bpf_xdp_get_buff_len(c->ctx) != (__u64)(ctx_data_end(c) - ctx_data(c)))
		return STAT_SYN_UNANSWERABLE;
	synopt_parse(c, pkt, &so);
	if (so.is_signed)
		return STAT_SYN_UNANSWERABLE;	/* TCP-MD5/AO: only the host can sign */

	state = synproxy_socket_state(c, pkt);
	if (state < 0)
		return STAT_SYN_NO_LISTENER;	/* the stack answers with a RST */
	if (state != BPF_TCP_LISTEN)
		return STAT_SYN_PASSED_SOCKET;	/* TIME_WAIT reuse, challenge ACK: the stack's call */

	cfg = config_get();
	if (!cfg)
		return STAT_DROP_ERROR;
	key = key_get(cfg->key_gen);
	if (!key || tcp_flow_key(c, pkt, false, &fk) || ctx_load_be32(c, pkt->l4_off + TCP_SEQ_OFF, &seq))
		return STAT_DROP_ERROR;
	plan.client_isn = bpf_ntohl(seq);
	synproxy_plan(c, pkt, sp, &so, &plan);
	cookie = cookie_make(key, cfg->key_gen, &fk, plan.client_isn, bpf_ktime_get_coarse_ns(),
			     cookie_opt_bits(plan.mss_index, &plan.opts, plan.ts), plan.ts, &tsval);
	ret = synproxy_reply(c, pkt, &plan, sp, cookie, tsval);
	if (ret == SYNACK_UNTOUCHED)
		return STAT_SYN_UNANSWERABLE;
	return ret ? STAT_DROP_ERROR : STAT_COOKIE_SENT;
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
 * tc ingress: a synproxy_ack_candidate that no flow of the rewriting tables
 * owns. Returns the decision, or SYNPROXY_NOT_MINE with the SYN proxy off.
 * STAT_COOKIE_HANDSHAKE means the skb now carries the new request socket.
 */
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

static __always_inline int synproxy_ack(const struct ctx *c, const struct pkt *pkt)
{
	const struct synproxy_config *sp;
	const struct isn_config *cfg;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple t = {};
	struct cookie_opts opts = {};
	struct tcp_sock *tp;
	struct bpf_sock *sk;
	struct syn_opts so;
	struct flow_key fk;
	struct tcphdr *th;
	__u32 size, seq, ack;
	int verdict, ret;

	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	sp = synproxy_get();
	cfg = config_get();
	if (!sp || !cfg)
		return SYNPROXY_NOT_MINE;
	seq = bpf_ntohl(th->seq);
	ack = bpf_ntohl(th->ack_seq);
	if (synproxy_sock_tuple(c, pkt, &t, &size) || tcp_flow_key(c, pkt, false, &fk))
		return STAT_PASS_TRUNCATED;

	sk = bpf_skc_lookup_tcp(c->ctx, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return STAT_COOKIE_ACK_NO_LISTENER;	/* the stack answers with a RST */
	if (sk->state != BPF_TCP_LISTEN) {
		bpf_sk_release(sk);
		return STAT_COOKIE_ACK_SOCKET;
	}

	synopt_parse(c, pkt, &so);
	/* The SYN proxy never answers a signed SYN, so a signed ACK holds no cookie of ours. */
	if (so.is_signed) {
		bpf_sk_release(sk);
		return SYNPROXY_NOT_MINE;
	}
	verdict = cookie_check(cfg, &fk, seq - 1, ack - 1, bpf_ktime_get_coarse_ns(), so.has_ts,
			       so.tsecr, &opts);
	if (verdict != COOKIE_OK) {
		bpf_sk_release(sk);
		if (synproxy_kernel_cookie(c, pkt, th))
			return SYNPROXY_NOT_MINE;
		if (verdict == COOKIE_EXPIRED)
			return STAT_COOKIE_EXPIRED;
		if (verdict == COOKIE_UNKNOWN_KEY)
			return STAT_COOKIE_UNKNOWN_KEY;
		return STAT_COOKIE_BAD_MAC;
	}
	stat_inc(STAT_COOKIE_ACK_VALID);

	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || !bpf_ksym_exists(bpf_sk_assign_tcp_reqsk)) {
		bpf_sk_release(sk);
		return STAT_COOKIE_ASSIGN_ERROR;
	}
	/* A full accept queue would drop the new connection silently (sk_acceptq_is_full). */
	if (tp->inet_conn.icsk_inet.sk.sk_ack_backlog >
	    tp->inet_conn.icsk_inet.sk.sk_max_ack_backlog) {
		bpf_sk_release(sk);
		return STAT_COOKIE_QUEUE_FULL;
	}
	attrs.rcv_tsval = so.tsval;
	attrs.rcv_tsecr = so.tsecr;	/* the kernel continues the host's TSval from it */
	attrs.mss = opts.mss;
	attrs.wscale_ok = opts.wscale_ok;
	attrs.snd_wscale = opts.wscale;
	attrs.rcv_wscale = opts.wscale_ok ? sp->rcv_wscale : 0;	/* what the SYN-ACK said */
	attrs.sack_ok = opts.sack_ok;
	attrs.ecn_ok = opts.ecn_ok;
	attrs.tstamp_ok = so.has_ts;
	ret = bpf_sk_assign_tcp_reqsk(c->ctx, (struct sock *)tp, &attrs, sizeof(attrs));
	bpf_sk_release(sk);
	return ret ? STAT_COOKIE_ASSIGN_ERROR : STAT_COOKIE_HANDSHAKE;
}

#endif /* ISNGUARD_BPF_SYNPROXY_H */
