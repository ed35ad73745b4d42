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
#include "events.h"
#include "flow.h"
#include "local_addr.h"
#include "parse.h"
#include "proxy.h"
#include "route.h"
#include "stats.h"
#include "synhdr.h"
#include "synopt.h"
#include "syn_policy.h"
#include "tcp.h"

/* Not a segment for the SYN proxy: the caller goes on as without it. */
#define SYNPROXY_NOT_MINE (-1)
/* synproxy_ack_cookie: a valid cookie, for the translating proxy to open (bpf/proxy.h). */
#define SYNPROXY_TRANSLATE (-2)
/* synproxy_ack_cookie: a valid cookie, for the host's listener (synproxy_assign). */
#define SYNPROXY_LOCAL (-3)
/* synproxy_ack_pre: the ACK may hold a cookie of ours; synproxy_ack_cookie says. */
#define SYNPROXY_CONTINUE (-4)
/* synproxy_syn: the SYN gets a cookie SYN-ACK, as planned (synproxy_answer). */
#define SYNPROXY_ANSWER (-5)
/* synproxy_syn: it would, but the port is only watched (monitor mode): it passes. */
#define SYNPROXY_MONITOR (-6)

/* RFC 9293 3.7.1 and RFC 8200 section 8.3: the MSS to assume when a SYN names none. */
#define SYNPROXY_DEFAULT_MSS4 536
#define SYNPROXY_DEFAULT_MSS6 1220
#define IPV4_TCP_HDRS 40
#define IPV6_TCP_HDRS 60
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct invalid_ack_budget);
} isn_invalid_acks SEC(".maps");

static __always_inline const struct synproxy_config *synproxy_get(void)
{
	__u32 zero = 0;
	const struct synproxy_config *sp = bpf_map_lookup_elem(&isn_synproxy, &zero);

	return sp && sp->mode != SYNPROXY_OFF ? sp : NULL;
}

/*
 * Whether tc ingress beside XDP (isnguard_tc_cookie) has anything to look
 * at: not while the proxy is off and has never been on (SYNPROXY_F_WAS_ON),
 * as with ISN rewriting alone. Then every packet passes unparsed.
 */
static __always_inline bool synproxy_acks_wanted(void)
{
	__u32 zero = 0;
	const struct synproxy_config *sp = bpf_map_lookup_elem(&isn_synproxy, &zero);

	return sp && (sp->mode != SYNPROXY_OFF || (sp->flags & SYNPROXY_F_WAS_ON));
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
static __always_inline bool synproxy_auto_active(const struct synproxy_config *sp, __be16 port,
						 __u64 now)
{
	__u32 index = bpf_ntohs(port);
	struct syn_rate *rate = bpf_map_lookup_elem(&isn_syn_rate, &index);
	__u64 elapsed, per_sec;
	__u32 was, on;

	if (!rate)
		return true;
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
		if (on != was) {
			stat_inc(on ? STAT_AUTO_ON : STAT_AUTO_OFF);
			event_auto_switch(index, per_sec > 0xffffffff ? 0xffffffff : (__u32)per_sec,
					  sp->syn_threshold, on);
		}
	}
	__sync_fetch_and_add(&rate->syns, 1);
	rate->last_syn_ns = now;
	return rate->active;
}

/*
 * The receiving device's own MAC address, its six bytes in the low 48 bits
 * (set by the loader for an Ethernet device; 0: not known, not checked).
 */
const volatile __u64 dev_mac = 0;

/*
 * Set by the loader (`attach --syn-hook tc`): this device has no XDP
 * program, and isnguard_tc_ingress answers SYNs itself (synproxy_syn_tc).
 * Its SYN-ACK, the SYN's skb turned around, leaves through the device's
 * own tc egress (bpf_redirect) carrying ISN_MARK_SYNACK, where
 * synproxy_own_synack lets it pass untouched: it is not the host's
 * SYN-ACK, whose ISN egress would replace.
 */
const volatile bool syn_at_tc = false;

/* Whether an Ethernet frame is addressed to another station's MAC. */
static __always_inline bool synproxy_eth_other_host(const struct ethhdr *eth)
{
	__u64 dst = 0;

	if (!dev_mac)
		return false;
	for (int i = 0; i < 6; i++)
		dst = dst << 8 | eth->h_dest[i];
	return dst != dev_mac;
}

/*
 * RFC 1122 4.2.3.10: a SYN to a broadcast or multicast address MUST be
 * silently discarded. Never answered: one spoofed broadcast SYN would draw a
 * SYN-ACK from every isnguard host on the link. Told by a group Ethernet
 * destination (broadcast and multicast frames), an IPv4 multicast or
 * limited-broadcast destination, or an IPv6 multicast one; the stack then
 * discards the SYN itself (STAT_SYN_NOT_UNICAST). Nor a unicast frame to
 * another station's MAC, which a promiscuous device receives and the stack
 * drops as not its own (PACKET_OTHERHOST; STAT_SYN_OTHER_HOST). 0 when the
 * SYN may be answered.
 */
static __always_inline int synproxy_dst_check(const struct ctx *c, const struct pkt *pkt)
{
	if (!l3_device) {
		struct ethhdr *eth = ctx_ptr(c, 0, ETH_HLEN);

		if (!eth || (eth->h_dest[0] & 1))
			return STAT_SYN_NOT_UNICAST;
		if (synproxy_eth_other_host(eth))
			return STAT_SYN_OTHER_HOST;
	}
	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);
		__u32 daddr;

		if (!ip)
			return STAT_SYN_NOT_UNICAST;
		daddr = bpf_ntohl(ip->daddr);
		return (daddr & 0xf0000000) != 0xe0000000 && daddr != 0xffffffff
			       ? 0 : STAT_SYN_NOT_UNICAST;
	}
	struct ipv6hdr *ip6 = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

	return ip6 && ip6->daddr.in6_u.u6_addr8[0] != 0xff ? 0 : STAT_SYN_NOT_UNICAST;
}

/* Linux gives the loopback device this ifindex in every namespace. */
#define LOOPBACK_IFINDEX 1

/* An IPv6 address of 15 zero bytes, then last: the unspecified one (0) or loopback (1). */
static __always_inline bool ipv6_addr_low(const struct in6_addr *a, __u8 last)
{
	return !(a->in6_u.u6_addr32[0] | a->in6_u.u6_addr32[1] | a->in6_u.u6_addr32[2]) &&
	       a->in6_u.u6_addr32[3] == bpf_htonl(last);
}

/*
 * Whether the SYN's addresses are ones no host may send from or receive at
 * from a link: RFC 1122 3.2.1.3, a host MUST silently discard a datagram
 * from a multicast or broadcast source, from 0/8 (this network) or 127/8
 * (loopback); RFC 4291 2.5.2-2.5.3 and 2.7 for IPv6's unspecified,
 * loopback and multicast sources. As Linux tells them, where it discards
 * them without a lookup (ip_route_input_slow, ip6_rcv_core,
 * tcp_v6_conn_request): the sources above, an IPv4-mapped IPv6 source, a
 * 0/8 or loopback destination, an unspecified IPv6 one; loopback only off
 * the loopback device. What takes a route lookup (a source that is one of
 * the host's own addresses or a subnet's broadcast, reverse-path
 * filtering) is not checked here. A limited broadcast or multicast
 * destination is synproxy_dst_check's, before: the stack discards those.
 * Never answered, or one spoofed SYN would draw a SYN-ACK to a multicast
 * group, the link's broadcast or the host itself.
 */
static __always_inline bool synproxy_martian(const struct ctx *c, const struct pkt *pkt)
{
	bool lo = ctx_ifindex(c) == LOOPBACK_IFINDEX;

	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);
		__u32 src, dst;

		if (!ip)
			return false;
		src = bpf_ntohl(ip->saddr) >> 24;
		dst = bpf_ntohl(ip->daddr) >> 24;
		/* from 224/4 (multicast) or 255.255.255.255, to or from 0/8 */
		if ((src & 0xf0) == 0xe0 || ip->saddr == 0xffffffff || src == 0 || dst == 0)
			return true;
		return !lo && (src == 127 || dst == 127);
	}
	struct ipv6hdr *ip6 = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);
	const struct in6_addr *src, *dst;

	if (!ip6)
		return false;
	src = &ip6->saddr;
	dst = &ip6->daddr;
	if (src->in6_u.u6_addr8[0] == 0xff || ipv6_addr_low(src, 0) || ipv6_addr_low(dst, 0))
		return true;
	/* ::ffff:0:0/96 */
	if (!(src->in6_u.u6_addr32[0] | src->in6_u.u6_addr32[1]) &&
	    src->in6_u.u6_addr32[2] == bpf_htonl(0xffff))
		return true;
	return !lo && (ipv6_addr_low(src, 1) || ipv6_addr_low(dst, 1));
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

/* Copies the header words into the frame; the frame ends right after them. */
static __always_inline int synack_store_tcp(const struct ctx *c, __u32 off, const __u32 *words,
					    __u32 tcp_len)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < SYNHDR_MAX_WORDS; i++) {
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

/* Data on a SYN (Fast Open) is summed in chunks of this many bytes, copied out of the frame. */
#define SYN_CSUM_CHUNK 64
/*
 * The longest data checked: a frame of native XDP is at most a page. A
 * SYN with more (generic XDP's linearised skb) goes to the host, which
 * checks it itself, as a multi-buffer one does.
 */
#define SYN_CSUM_MAX_CHUNKS 64

/*
 * Adds the bytes [off, end) of the frame to *sum: whole chunks, then the
 * last one zero-padded (RFC 1071 pads an odd end so), which ends the loop,
 * so that the verifier walks each length once, not every way to go on.
 * The load-bytes helpers take any offset, where a packet pointer's is
 * bounded, and follow an skb's pages. 0, or -1 when the frame ends early.
 */
static __always_inline int synproxy_csum_data_ctx(const struct ctx *c, __u32 off, __u32 end,
						  __u64 *sum)
{
	__u8 chunk[SYN_CSUM_CHUNK];
	__u32 i, len;

	for (i = 0; i < SYN_CSUM_MAX_CHUNKS; i++) {
		len = end - off;
		if ((__s32)len <= 0)	/* signed: the verifier then knows len is not 0 */
			return 0;
		if (len < SYN_CSUM_CHUNK) {
			__builtin_memset(chunk, 0, sizeof(chunk));
			if (ctx_load_bytes(c, off, chunk, len))
				return -1;
			*sum += (__u32)bpf_csum_diff(NULL, 0, (__be32 *)chunk, sizeof(chunk), 0);
			return 0;
		}
		if (ctx_load_bytes(c, off, chunk, SYN_CSUM_CHUNK))
			return -1;
		*sum += (__u32)bpf_csum_diff(NULL, 0, (__be32 *)chunk, sizeof(chunk), 0);
		off += SYN_CSUM_CHUNK;
	}
	return end == off ? 0 : -1;
}

/* synproxy_csum_data_ctx as global functions, one per context, each verified once. */
__noinline int synproxy_csum_data(struct xdp_md *xdp, __u32 off, __u32 end, __u64 *sum)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };

	return sum ? synproxy_csum_data_ctx(&c, off, end, sum) : -1;
}

__noinline int synproxy_csum_data_skb(struct __sk_buff *skb, __u32 off, __u32 end, __u64 *sum)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };

	return sum ? synproxy_csum_data_ctx(&c, off, end, sum) : -1;
}

/*
 * The sum of the TCP header at off, words 32-bit words long (the parse
 * found them in the frame): one bpf_csum_diff of a constant length per
 * header length, where a word at a time cost 20-40 ns more a SYN.
 */
#define SYN_CSUM_HDR(n)								\
	case (n): {								\
		void *h = ctx_ptr(c, off, (n) * 4);				\
									\
		return h ? (__u32)bpf_csum_diff(NULL, 0, h, (n) * 4, 0) : 0;	\
	}
static __always_inline __u32 synproxy_csum_header(const struct ctx *c, __u32 off, __u32 words)
{
	switch (words) {
	SYN_CSUM_HDR(5) SYN_CSUM_HDR(6) SYN_CSUM_HDR(7) SYN_CSUM_HDR(8) SYN_CSUM_HDR(9)
	SYN_CSUM_HDR(10) SYN_CSUM_HDR(11) SYN_CSUM_HDR(12) SYN_CSUM_HDR(13) SYN_CSUM_HDR(14)
	SYN_CSUM_HDR(15)
	}
	return 0;
}

/*
 * Whether a SYN about to be answered has the checksums the host's stack
 * would check (RFC 1122 4.2.2.7: the receiver MUST check the TCP
 * checksum; 3.2.1.2, the IPv4 header's): 0 when they hold, else the
 * decision. A corrupted SYN would otherwise get a SYN-ACK the host would
 * never send. Neither XDP nor tc sees the device's verdict, so both are
 * summed here: the IPv4 header, the pseudo header, the TCP header in place
 * (synproxy_csum_header), and any data (a Fast Open SYN's) through
 * synproxy_csum_data.
 * A frame whose checksum field holds exactly the pseudo header's sum is a
 * CHECKSUM_PARTIAL skb of a local sender (a veth peer, generic XDP), which
 * the stack takes unchecked: so does this. A corrupted SYN hits that value
 * as rarely as a valid checksum (2^-16). Called through a global function
 * per context (synproxy_syn_check, synproxy_syn_check_skb), verified once.
 */
static __always_inline int synproxy_syn_csum_ctx(const struct ctx *c, const struct pkt *pkt_arg)
{
	__u32 off, end, words, have;
	struct tcphdr *th;
	__u64 pseudo, sum;
	struct pkt p;
	int err;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;
	off = p.l4_off;
	end = p.l4_end;
	words = p.tcp_hlen / 4;
	/* What the frame holds; an skb's data may go on past its linear part. */
	have = c->kind == CTX_XDP ? (__u32)(ctx_data_end(c) - ctx_data(c)) : ctx_skb_len(c);
	/* The IP length says more than the frame holds: the stack drops it as truncated. */
	if (end > have || end < off + p.tcp_hlen ||
	    end - off - p.tcp_hlen > SYN_CSUM_CHUNK * SYN_CSUM_MAX_CHUNKS)
		return STAT_SYN_UNANSWERABLE;
	th = ctx_ptr(c, off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	pseudo = (__u32)bpf_htonl(end - off + IPPROTO_TCP);	/* length and protocol, as words */
	if (p.family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, p.l3_off, IPV4_HLEN_MIN);

		if (!ip)
			return STAT_PASS_TRUNCATED;
		if (csum_words((const __u32 *)ip, IPV4_HLEN_MIN / 4, 0) != 0xffff)
			return STAT_SYN_BAD_CHECKSUM;
		pseudo = csum_words_add((const __u32 *)&ip->saddr, 2, pseudo);
	} else {
		struct ipv6hdr *ip6 = ctx_ptr(c, p.l3_off, IPV6_HLEN);

		if (!ip6)
			return STAT_PASS_TRUNCATED;
		pseudo = csum_words_add((const __u32 *)&ip6->saddr, 8, pseudo);
	}
	if (th->check == csum_fold32(csum_fold64(pseudo)))
		return 0;	/* CHECKSUM_PARTIAL */

	sum = pseudo + synproxy_csum_header(c, off, words);
	if (end > off + p.tcp_hlen) {
		err = c->kind == CTX_XDP
			      ? synproxy_csum_data(c->ctx, off + p.tcp_hlen, end, &sum)
			      : synproxy_csum_data_skb(c->ctx, off + p.tcp_hlen, end, &sum);
		if (err)
			return STAT_PASS_TRUNCATED;
	}
	return csum_fold32(csum_fold64(sum)) == 0xffff ? 0 : STAT_SYN_BAD_CHECKSUM;
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
 * ACK (bpf/proxy.h, proxy_server_challenged), redirected in from tc
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
 * Second step: the cookie checked (a function of its own for the stack
 * the hash needs). Returns the decision, or where the connection goes:
 * SYNPROXY_LOCAL or SYNPROXY_TRANSLATE, with req->opts decoded.
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
		req->to_stack = synproxy_invalid_to_stack(bpf_map_lookup_elem(&isn_flows, &fk));
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
 * the host's: they pass unjudged, as with the proxy off.
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
	ret = synproxy_ack_req(c, pkt, true, &to_stack);
	return ret == SYNPROXY_NOT_MINE ? STAT_PROXY_HELD : ret;
}

#endif /* ISNGUARD_BPF_SYNPROXY_H */
