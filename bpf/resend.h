/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The translating proxy's SYN, sent again to a silent server (bpf/proxy.h).
 * The client's ACK became the only SYN there was; a client whose server
 * speaks first (SMTP, SSH) then sends nothing more, so a SYN lost on the way
 * or dropped by a full accept queue was never sent again, and the client
 * waited for ever. isnguard now resends it with Linux's back-off (1 s, then
 * doubling) and, at SYNPROXY_CONNECT_TIMEOUT_NS, gives up: the client gets
 * a RST it accepts (RFC 5961 3.2: at exactly its RCV.NXT) and the entry goes.
 *
 * A BPF timer cannot send a packet, and isnguard has no daemon: a packet
 * must carry each resend. The clock is the tick device (ISN_TICK_DEV), a
 * bridge with no ports made by attach, whose IGMP querier the kernel runs
 * once a second: each query arrives at the bridge's own ingress, where
 * isnguard_tc_tick rewrites it into the due SYNs and RSTs, one clone each
 * (bpf_clone_redirect), from what proxy_open recorded here (the SYN's TCP
 * header, the cookie ACK's interface and MACs). The SYN goes in at that
 * interface again, as the client's ACK did; the RST goes out of it.
 * netfilter's SYNPROXY and pf's synproxy resend only on the client's own
 * retransmissions, as isnguard did before.
 */
#ifndef ISNGUARD_BPF_RESEND_H
#define ISNGUARD_BPF_RESEND_H

#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "ctx.h"
#include "flow.h"
#include "parse.h"
#include "stats.h"
#include "synhdr.h"
#include "tcp.h"

#define EEXIST 17	/* errno values are #defines, not in vmlinux.h */

/* Due flows one tick sends for; the rest wait a tick. */
#define RESEND_BURST 32
#define IGMP_HOST_MEMBERSHIP_QUERY 0x11

/*
 * Set by the loader: the network namespace of the interfaces this object
 * is attached to. The state (and isn_syn_resend) is shared by attachments
 * in every namespace; each namespace's tick resends only its own flows.
 */
const volatile __u64 netns_ino = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SYNPROXY_RESEND_MAX);
	__type(key, struct flow_key);
	__type(value, struct syn_resend);
} isn_syn_resend SEC(".maps");

/* A new entry and its key are written here: they do not fit proxy_open's call chain's stack. */
struct resend_new {
	struct flow_key key;
	struct syn_resend r;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct resend_new);
} isn_resend_new SEC(".maps");

/* The keys of the flows one tick found due. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RESEND_BURST);
	__type(key, __u32);
	__type(value, struct flow_key);
} isn_resend_due SEC(".maps");

/*
 * tc ingress: the first SYN of a flow, just made from the cookie ACK in
 * place by proxy_open (STAT_PROXY_SYN), is recorded for resends: its TCP
 * header, read back from the skb, and where it came from. The SYN again
 * (the client's own retransmission) finds it recorded already. Frames with
 * a VLAN tag are not: the tick's frames have none. A global function, after
 * proxy_open, not inside it: its stack would not fit on top of that one.
 */
__noinline int resend_track(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct resend_new *n;
	struct pkt p;
	__u32 zero = 0, tcp_len;
	__u8 doff;
	long err;

	if (!pkt_arg)
		return -1;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	n = bpf_map_lookup_elem(&isn_resend_new, &zero);
	if (!n || p.l3_off != (l3_device ? 0 : ETH_HLEN) || skb->vlan_present ||
	    bpf_skb_load_bytes(skb, p.l4_off + 12, &doff, 1))
		goto untracked;
	tcp_len = (doff >> 4) * 4;
	if (tcp_len < TCP_HLEN_MIN || tcp_len > sizeof(n->r.tcp))
		goto untracked;
	__builtin_memset(&n->r, 0, sizeof(n->r));
	if (tcp_flow_key(&c, &p, false, &n->key) ||
	    (!l3_device && bpf_skb_load_bytes(skb, 0, n->r.macs, sizeof(n->r.macs))))
		goto untracked;
	/* A word at a time: a load's length the verifier sees bounded with either compiler. */
#pragma unroll
	for (__u32 i = 0; i < SYNHDR_MAX_WORDS; i++) {
		if (i * 4 >= tcp_len)
			break;
		if (bpf_skb_load_bytes(skb, p.l4_off + i * 4, &n->r.tcp[i], 4))
			goto untracked;
	}
	((__u16 *)n->r.tcp)[8] = 0;	/* the checksum: the tick computes it */
	n->r.tcp_len = tcp_len;
	n->r.first_ns = bpf_ktime_get_coarse_ns();
	n->r.netns_ino = netns_ino;
	n->r.ifindex = skb->ifindex;
	/* A map value is a key kernel 6.1 takes. */
	err = bpf_map_update_elem(&isn_syn_resend, &n->key, &n->r, BPF_NOEXIST);
	if (!err || err == -EEXIST)
		return 0;
untracked:
	stat_inc(STAT_PROXY_RESEND_UNTRACKED);	/* the client's retransmissions alone resend */
	return -1;
}

/* When the next resend (or, after the last, the give-up) of r is due. */
static __always_inline __u64 resend_due_ns(const struct syn_resend *r)
{
	if (r->resends >= SYNPROXY_SYN_RESENDS)
		return r->first_ns + SYNPROXY_CONNECT_TIMEOUT_NS;
	/* 1, 3, 7 s: each wait twice the one before, as Linux's SYN retransmissions. */
	return r->first_ns + (SYNPROXY_RESEND_FIRST_NS << (r->resends + 1)) -
	       SYNPROXY_RESEND_FIRST_NS;
}

/* Whether st is still the connection r was recorded for, its server silent. */
static __always_inline bool resend_live(const struct syn_resend *r, const struct flow_state *st)
{
	__u32 seq = bpf_ntohl(r->tcp[1]);

	return st && (st->flags & FLOW_F_PROXY_OPEN) && seq + 1 == st->host_ack;
}

struct resend_walk {
	__u64 now;
	__u32 due;
};

static long resend_collect(void *map, const struct flow_key *key, struct syn_resend *r,
			   struct resend_walk *walk)
{
	struct flow_key *slot;
	__u32 index = walk->due;

	if (r->netns_ino != netns_ino)
		return 0;
	if (!resend_live(r, bpf_map_lookup_elem(&isn_flows, key))) {
		bpf_map_delete_elem(map, key);	/* the server answered, or the entry went */
		return 0;
	}
	if ((__s64)(walk->now - resend_due_ns(r)) < 0)
		return 0;
	slot = bpf_map_lookup_elem(&isn_resend_due, &index);
	if (!slot)
		return 1;
	*slot = *key;
	walk->due = index + 1;
	return walk->due >= RESEND_BURST;
}

/*
 * The carrier becomes the frame: Ethernet (dst, src, type), a fresh IP
 * header from src to dst, the TCP words with their checksum.
 */
static __always_inline int resend_frame(struct __sk_buff *skb, const struct flow_key *fk,
					const __u8 *eth_dst, const __u8 *eth_src,
					const __u8 *src, const __u8 *dst, __u32 *words,
					__u32 tcp_len)
{
	bool v4 = fk->family == FLOW_FAMILY_IPV4;
	__u16 proto = v4 ? ETH_P_IP : ETH_P_IPV6;
	__u32 ip_len = v4 ? IPV4_HLEN_MIN : IPV6_HLEN;
	__u32 addrs[8] = {};
	__u8 eth[ETH_HLEN];

	tcp_len &= 0x3c;
	if (tcp_len > SYNHDR_MAX_WORDS * 4 || tcp_len < TCP_HLEN_MIN)
		return -1;
	if (skb->protocol != bpf_htons(proto) && bpf_skb_change_proto(skb, bpf_htons(proto), 0))
		return -1;
	if (bpf_skb_change_tail(skb, ETH_HLEN + ip_len + tcp_len, 0))
		return -1;
	__builtin_memcpy(eth, eth_dst, 6);
	__builtin_memcpy(eth + 6, eth_src, 6);
	*(__be16 *)(eth + 12) = bpf_htons(proto);
	if (bpf_skb_store_bytes(skb, 0, eth, sizeof(eth), 0))
		return -1;
	if (v4) {
		struct iphdr ip = {
			.version = 4,
			.ihl = 5,
			.frag_off = bpf_htons(0x4000),	/* DF, as Linux's SYNs */
			.ttl = SYNHDR_TTL,
			.protocol = IPPROTO_TCP,
		};

		__builtin_memcpy(&ip.saddr, src, 4);
		__builtin_memcpy(&ip.daddr, dst, 4);
		synhdr_ipv4(&ip, tcp_len, false);
		__builtin_memcpy(addrs, &ip.saddr, 8);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, addrs, 2);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0))
			return -1;
	} else {
		struct ipv6hdr ip6 = { .version = 6, .nexthdr = IPPROTO_TCP,
				       .hop_limit = SYNHDR_TTL };

		__builtin_memcpy(&ip6.saddr, src, 16);
		__builtin_memcpy(&ip6.daddr, dst, 16);
		synhdr_ipv6(&ip6, tcp_len, false);
		__builtin_memcpy(addrs, &ip6.saddr, 32);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, addrs, 8);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6), 0))
			return -1;
	}
	return bpf_skb_store_bytes(skb, ETH_HLEN + ip_len, words, tcp_len, 0) ? -1 : 0;
}

/*
 * One due flow (slot of isn_resend_due): its SYN again, in at the interface
 * the cookie ACK came in by; or, past the connect timeout, a RST out to the
 * client, and the entry goes. A global function, verified once.
 */
__noinline int resend_one(struct __sk_buff *skb, __u32 slot)
{
	__u32 words[SYNHDR_MAX_WORDS] = {};
	struct flow_key key, *due;
	struct flow_state *st;
	struct syn_resend *r;
	struct synhdr h = {};
	__u32 ifindex;
	__u8 macs[12];
	__u64 now;

	due = bpf_map_lookup_elem(&isn_resend_due, &slot);
	if (!due)
		return -1;
	key = *due;
	r = bpf_map_lookup_elem(&isn_syn_resend, &key);
	st = bpf_map_lookup_elem(&isn_flows, &key);
	if (!r || !resend_live(r, st))
		return 0;
	now = bpf_ktime_get_coarse_ns();
	__builtin_memcpy(macs, r->macs, sizeof(macs));
	if ((__s64)(now - r->first_ns) < (__s64)SYNPROXY_CONNECT_TIMEOUT_NS) {
		__builtin_memcpy(words, r->tcp, sizeof(words));
		if (resend_frame(skb, &key, macs, macs + 6, key.remote_addr, key.local_addr, words,
				 r->tcp_len))
			return -1;
		r->resends++;
		stat_inc(STAT_PROXY_SYN_RESENT);
		return bpf_clone_redirect(skb, r->ifindex, BPF_F_INGRESS);
	}
	/* The server never answered: the client gets a RST at the seq it expects. */
	h.source = key.local_port;
	h.dest = key.remote_port;
	h.seq = st->wire_isn + 1;
	h.flags = TCPF_RST;
	if (resend_frame(skb, &key, macs + 6, macs, key.local_addr, key.remote_addr, words,
			 synhdr_words(words, &h)))
		return -1;
	ifindex = r->ifindex;
	bpf_map_delete_elem(&isn_syn_resend, &key);
	if (!bpf_map_delete_elem(&isn_flows, &key)) {
		flow_count_add(-1);
		stat_inc(STAT_FLOW_REMOVED);
	}
	stat_inc(STAT_PROXY_GAVE_UP);
	return bpf_clone_redirect(skb, ifindex, 0);
}

/*
 * The tick device's ingress: an IGMP query (once a second) carries the due
 * resends, each a clone of it rewritten; then it is dropped. Anything else
 * passes.
 */
static __always_inline int resend_tick(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct resend_walk walk = {};
	struct iphdr *ip;
	__u8 *type;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	ip = ctx_ptr(&c, ETH_HLEN, IPV4_HLEN_MIN);
	if (!ip || ip->protocol != IPPROTO_IGMP)
		return TC_ACT_UNSPEC;
	type = ctx_ptr(&c, ETH_HLEN + ip->ihl * 4, 1);
	if (!type || *type != IGMP_HOST_MEMBERSHIP_QUERY)
		return TC_ACT_UNSPEC;
	walk.now = bpf_ktime_get_coarse_ns();
	bpf_for_each_map_elem(&isn_syn_resend, resend_collect, &walk, 0);
	for (__u32 i = 0; i < RESEND_BURST; i++) {
		if (i >= walk.due)
			break;
		resend_one(skb, i);
	}
	return TC_ACT_SHOT;
}

#endif /* ISNGUARD_BPF_RESEND_H */
