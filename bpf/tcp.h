/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TCP header helpers every direction uses: field offsets, the flow key of a
 * segment, and a sequence-space shift of one field with its checksum. The
 * egress, ingress, ICMP and SYN-cookie code include this, never each other.
 */
#ifndef ISNGUARD_BPF_TCP_H
#define ISNGUARD_BPF_TCP_H

#include "ctx.h"
#include "flow.h"
#include "parse.h"

#define TCP_SEQ_OFF 4
#define TCP_ACK_OFF 8
#define TCP_CSUM_OFF 16

/*
 * The segment's TCP header and IP addresses (4 or 16 bytes each), as
 * pointers into the packet; -1 when they are not in it. The addresses as
 * the headers type them, 32-bit words, so that a copy of one is word loads,
 * not a load, a shift and an or a byte.
 */
static __always_inline int tcp_addrs(const struct ctx *c, const struct pkt *pkt,
				     struct tcphdr **th, const __be32 **src, const __be32 **dst)
{
	*th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	if (!*th)
		return -1;
	if (pkt->family == FLOW_FAMILY_IPV4) {
		/*
		 * 40 bytes, as for IPv6: any TCP segment has them after its IP
		 * header's start. Kernel 6.1's verifier forgets the family test
		 * (a byte of a stack slot) by the time the callers copy 4 or 16
		 * bytes on a second test, and checks the IPv6 copy against this
		 * pointer's range.
		 */
		struct iphdr *iph = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

		if (!iph)
			return -1;
		*src = &iph->saddr;
		*dst = &iph->daddr;
	} else {
		struct ipv6hdr *ip6h = ctx_ptr(c, pkt->l3_off, IPV6_HLEN);

		if (!ip6h)
			return -1;
		*src = ip6h->saddr.in6_u.u6_addr32;
		*dst = ip6h->daddr.in6_u.u6_addr32;
	}
	return 0;
}

/*
 * The flow key of a TCP segment. Local is the protected host: the source of
 * what it sends (egress), the destination of what it receives.
 */
static __always_inline int tcp_flow_key(const struct ctx *c, const struct pkt *pkt,
					bool egress, struct flow_key *fk)
{
	const __be32 *src, *dst;
	struct tcphdr *th;

	if (tcp_addrs(c, pkt, &th, &src, &dst))
		return -1;
	if (egress)
		flow_key_fill(fk, pkt->family, src, dst, th->source, th->dest);
	else
		flow_key_fill(fk, pkt->family, dst, src, th->dest, th->source);
	return 0;
}

/* Sequence space the segment occupies: its data, plus one each for SYN and FIN. */
static __always_inline __u32 tcp_seg_len(const struct pkt *pkt)
{
	return pkt->l4_end - pkt->l4_off - pkt->tcp_hlen + !!(pkt->tcp_flags & TCPF_SYN) +
	       !!(pkt->tcp_flags & TCPF_FIN);
}

/* a is after b in sequence space (RFC 9293 section 3.4). */
static __always_inline bool seq_after(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

/* Adds delta to the 32-bit sequence-space field at off (TCP checksum follows). */
static __always_inline int tcp_shift_field(const struct ctx *c, const struct pkt *pkt,
					   __u32 off, __u32 delta)
{
	__be32 old;

	if (ctx_load_be32(c, off, &old))
		return -1;
	return ctx_replace_be32(c, off, pkt->l4_off + TCP_CSUM_OFF, old,
				bpf_htonl(bpf_ntohl(old) + delta));
}

#endif /* ISNGUARD_BPF_TCP_H */
