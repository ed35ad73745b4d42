/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * "Is the destination mine" without a route lookup for the host's own
 * addresses: route_of (bpf/route.h) costs a bpf_fib_lookup per SYN and per
 * cookie ACK, tens of ns where the namespace forwards (IPv6 the most). The
 * namespace's addresses are in isn_local_addrs, written by attach from its
 * address list (user/local_addrs.c); a destination found there is
 * ROUTE_LOCAL, the answer the FIB gives an address of the host (RTN_LOCAL:
 * NOT_FWDED), or gives anything where forwarding is off (FWD_DISABLED).
 *
 * The map is a shortcut, never the decision: what it misses (an address
 * added after attach, any forwarded destination) takes route_of as before,
 * so a miss costs the lookup and is never wrong. What it holds may be
 * stale: an address removed after attach. So an entry is trusted for
 * LOCAL_ADDR_RECHECK_NS after the route last said local; the first segment
 * after that asks route_of again, and an entry the route no longer calls
 * local is deleted (the destination takes route_of from then on). A
 * removed address is answered as local for at most that long.
 */
#ifndef ISNGUARD_BPF_LOCAL_ADDR_H
#define ISNGUARD_BPF_LOCAL_ADDR_H

#include <bpf/bpf_helpers.h>
#include "config.h"
#include "ctx.h"
#include "isnguard.h"
#include "parse.h"
#include "route.h"
#include "tcp.h"

#define LOCAL_ADDR_RECHECK_NS 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ISN_LOCAL_ADDRS_MAX);
	__type(key, struct local_addr_key);
	__type(value, struct local_addr);
} isn_local_addrs SEC(".maps");

/* The segment's destination as route_of would class it, from isn_local_addrs where it can. */
static __always_inline enum route_kind route_of_dst_ctx(const struct ctx *c, const struct pkt *pkt)
{
	struct local_addr_key key = { .netns_ino = netns_ino, .family = pkt->family };
	struct local_addr *known = NULL;
	const __be32 *src, *dst;
	enum route_kind route;
	struct tcphdr *th;
	__u64 now = 0;

	if (!tcp_addrs(c, pkt, &th, &src, &dst)) {
		if (pkt->family == FLOW_FAMILY_IPV4)
			__builtin_memcpy(key.addr, dst, 4);
		else
			__builtin_memcpy(key.addr, dst, 16);
		known = bpf_map_lookup_elem(&isn_local_addrs, &key);
	}
	if (known) {
		now = bpf_ktime_get_coarse_ns();
		if (now - known->checked_ns < LOCAL_ADDR_RECHECK_NS)
			return ROUTE_LOCAL;
	}
	route = route_of(c, pkt);
	if (known && route == ROUTE_LOCAL)
		known->checked_ns = now;
	else if (known)
		bpf_map_delete_elem(&isn_local_addrs, &key);
	return route;
}

/*
 * route_of_dst_ctx as global functions, one per context, each verified once:
 * inlined, its lookup and recheck were verified again on every path of its
 * callers (synproxy_syn, synproxy_ack_pre), which the tightest program's
 * budget has no room for.
 */
__noinline int route_of_dst_xdp(struct xdp_md *xdp, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p;

	if (!pkt_arg)
		return ROUTE_LOCAL;
	p = *pkt_arg;
	return route_of_dst_ctx(&c, &p);
}

__noinline int route_of_dst_skb(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt p;

	if (!pkt_arg)
		return ROUTE_LOCAL;
	p = *pkt_arg;
	return route_of_dst_ctx(&c, &p);
}

static __always_inline enum route_kind route_of_dst(const struct ctx *c, const struct pkt *pkt)
{
	return (enum route_kind)(c->kind == CTX_XDP ? route_of_dst_xdp(c->ctx, pkt)
						    : route_of_dst_skb(c->ctx, pkt));
}

#endif /* ISNGUARD_BPF_LOCAL_ADDR_H */
