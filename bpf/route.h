/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where a segment to a protected port goes, as the host would route it:
 * the one decision the SYN proxy takes for a SYN (XDP, bpf/syn_answer.h
 * synproxy_syn) and again for its cookie ACK (tc ingress, bpf/cookie_ack.h
 * synproxy_ack_pre), so an ACK is judged on the path its SYN was answered
 * on. RFC 1122 4.2.3.10: a SYN is answered only for a destination of this
 * host (the local path) or one it forwards (the translate path); a socket
 * lookup alone cannot tell, a wildcard listener matches any destination.
 *
 * bpf_fib_lookup's answers (net/core/filter.c, bpf_ipv{4,6}_fib_lookup):
 * - SUCCESS, NO_NEIGH (and FRAG_NEEDED, UNSUPP_LWT, a forwarding route
 *   all the same): a unicast route out, the host forwards it.
 * - BLACKHOLE, UNREACHABLE, PROHIBIT: the host drops it.
 * - NOT_FWDED: every other route type, RTN_LOCAL, RTN_BROADCAST,
 *   RTN_MULTICAST, IPv6 anycast alike, and no route at all. The helper
 *   does not say which. Multicast and the limited broadcast are refused
 *   before (synproxy_dst_unicast), as is a subnet-directed broadcast in a
 *   broadcast frame; a directed broadcast in a unicast frame, or a
 *   destination with no route, is taken as local here (README, limits).
 * - FWD_DISABLED: forwarding is off on the receiving device, and the
 *   helper returns this before it looks anything up (whatever the flags).
 *   Such a host forwards nothing: a destination is its own or dropped, and
 *   the FIB cannot say which; it is taken as local, as before.
 */
#ifndef ISNGUARD_BPF_ROUTE_H
#define ISNGUARD_BPF_ROUTE_H

#include "ctx.h"
#include "parse.h"
#include "tcp.h"

#define ROUTE_AF_INET 2
#define ROUTE_AF_INET6 10

enum route_kind {
	ROUTE_LOCAL,		/* the host's own (or, forwarding off, not told apart) */
	ROUTE_FORWARDED,	/* a server behind this host */
	ROUTE_NONE,		/* unreachable, blackhole, prohibit: the host drops it */
};

static __always_inline enum route_kind route_classify(long rc)
{
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
	case BPF_FIB_LKUP_RET_NO_NEIGH:
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
	case BPF_FIB_LKUP_RET_UNSUPP_LWT:
		return ROUTE_FORWARDED;
	case BPF_FIB_LKUP_RET_BLACKHOLE:
	case BPF_FIB_LKUP_RET_UNREACHABLE:
	case BPF_FIB_LKUP_RET_PROHIBIT:
		return ROUTE_NONE;
	default:
		return ROUTE_LOCAL;	/* NOT_FWDED, FWD_DISABLED, a helper error */
	}
}

/* The segment's destination as the FIB routes it, coming in where it came in. */
static __always_inline enum route_kind route_of(const struct ctx *c, const struct pkt *pkt)
{
	struct bpf_fib_lookup fib = {};
	const __be32 *src, *dst;
	struct tcphdr *th;

	if (tcp_addrs(c, pkt, &th, &src, &dst))
		return ROUTE_LOCAL;
	fib.l4_protocol = IPPROTO_TCP;
	fib.sport = th->source;
	fib.dport = th->dest;
	fib.ifindex = ctx_ifindex(c);
	if (pkt->family == FLOW_FAMILY_IPV4) {
		fib.family = ROUTE_AF_INET;
		__builtin_memcpy(&fib.ipv4_src, src, 4);
		__builtin_memcpy(&fib.ipv4_dst, dst, 4);
	} else {
		fib.family = ROUTE_AF_INET6;
		__builtin_memcpy(fib.ipv6_src, src, 16);
		__builtin_memcpy(fib.ipv6_dst, dst, 16);
	}
	return route_classify(bpf_fib_lookup(c->ctx, &fib, sizeof(fib), 0));
}

#endif /* ISNGUARD_BPF_ROUTE_H */
