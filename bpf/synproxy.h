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
 *
 * This header holds what both halves share: the settings and their maps,
 * auto mode, and the checks a segment meets before either half takes it
 * (the destination, martian sources, the socket the tuple has). The SYN
 * half is bpf/syn_answer.h (its checksum check bpf/syn_csum.h), the ACK
 * half bpf/cookie_ack.h.
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
	const __be32 *src, *dst;
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

#endif /* ISNGUARD_BPF_SYNPROXY_H */
