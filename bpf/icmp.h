/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ICMP and ICMPv6 errors about the host's own segments quote the segment's
 * IP header and at least its first 8 TCP bytes (RFC 792, RFC 4443 section
 * 2.4), seq among them, in wire space. The host's stack checks that seq
 * against its own send window (Linux tcp_v4_err/tcp_v6_err) and drops the
 * error otherwise, which would break path-MTU discovery. So the quoted seq
 * goes back by delta and the ICMP checksum is fixed to match. The quoted TCP
 * checksum, when quoted at all, is left alone: it covers bytes the error does
 * not carry, and no stack verifies it.
 */
#ifndef ISNGUARD_BPF_ICMP_H
#define ISNGUARD_BPF_ICMP_H

#include "ctx.h"
#include "flow.h"
#include "parse.h"
#include "tcp.h"

#define ICMP_DEST_UNREACH 3
#define ICMP_REDIRECT 5
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PKT_TOOBIG 2
#define ICMPV6_TIME_EXCEED 3
#define ICMPV6_PARAMPROB 4
#define NDISC_REDIRECT 137
/* NDISC redirect: ICMPv6 header, target and destination address, then options (RFC 4861 4.5). */
#define NDISC_REDIRECT_HLEN 40
#define ND_OPT_REDIRECT_HDR 4
#define ND_OPT_HDR_LEN 8		/* the Redirected Header option's own header (RFC 4861 4.6.3) */
/* Options looked at before the Redirected Header; Linux sends at most a target link-layer one. */
#define MAX_ND_OPTS 4
#define ICMP_CSUM_OFF 2
/* The quoted TCP bytes needed: ports and seq. */
#define ICMP_QUOTED_TCP_LEN 8

/*
 * Errors, and redirects: a redirect quotes the segment as errors do, and
 * the host's TCP checks the quoted seq before it takes the new route
 * (Linux tcp_v4_err/tcp_v6_err, ICMP_REDIRECT and NDISC_REDIRECT).
 */
static __always_inline bool icmp_is_error(const struct pkt *pkt, __u8 type)
{
	if (pkt->family == FLOW_FAMILY_IPV4)
		return type == ICMP_DEST_UNREACH || type == ICMP_TIME_EXCEEDED ||
		       type == ICMP_PARAMETERPROB || type == ICMP_REDIRECT;
	return type == ICMPV6_DEST_UNREACH || type == ICMPV6_PKT_TOOBIG ||
	       type == ICMPV6_TIME_EXCEED || type == ICMPV6_PARAMPROB || type == NDISC_REDIRECT;
}

/*
 * Where the quoted IP header starts: after the 8-byte ICMP header, or for
 * an NDISC redirect inside its Redirected Header option (RFC 4861 section
 * 4.6.3), found by walking the options. 0 when there is none.
 */
static __always_inline __u32 icmp_quote_off(const struct ctx *c, const struct pkt *pkt, __u8 type)
{
	__u32 off = pkt->l4_off + NDISC_REDIRECT_HLEN;
	__u32 i;

	if (pkt->family == FLOW_FAMILY_IPV4 || type != NDISC_REDIRECT)
		return pkt->l4_off + ICMP_HLEN;
#pragma unroll
	for (i = 0; i < MAX_ND_OPTS; i++) {
		__u8 *opt = ctx_ptr(c, off, 2);

		if (!opt || !opt[1])
			return 0;
		if (opt[0] == ND_OPT_REDIRECT_HDR)
			return off + ND_OPT_HDR_LEN;
		off += opt[1] * 8;
	}
	return 0;
}

/* The quoted segment's flow (it was the host's: its source is local) and its TCP offset. */
static __always_inline int icmp_quoted_flow(const struct ctx *c, const struct pkt *pkt,
					    __u32 inner_l3, struct flow_key *fk, __u32 *inner_l4)
{
	struct tcphdr *th;

	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct iphdr *iph = ctx_ptr(c, inner_l3, IPV4_HLEN_MIN);

		if (!iph || iph->version != 4 || iph->ihl < 5 || iph->protocol != IPPROTO_TCP ||
		    (iph->frag_off & bpf_htons(IP_OFFSET)))
			return -1;
		*inner_l4 = inner_l3 + iph->ihl * 4;
		th = ctx_ptr(c, *inner_l4, ICMP_QUOTED_TCP_LEN);
		if (!th)
			return -1;
		flow_key_fill(fk, FLOW_FAMILY_IPV4, &iph->saddr, &iph->daddr, th->source, th->dest);
	} else {
		struct ipv6hdr *ip6h = ctx_ptr(c, inner_l3, IPV6_HLEN);
		__u8 nexthdr;

		if (!ip6h || ip6h->version != 6)
			return -1;
		/* The quote of a segment behind extension headers has them too. */
		nexthdr = ip6h->nexthdr;
		*inner_l4 = inner_l3 + IPV6_HLEN;
		if (ipv6_skip_exthdrs(c, inner_l4, &nexthdr) != PARSE_OK || nexthdr != IPPROTO_TCP)
			return -1;
		ip6h = ctx_ptr(c, inner_l3, IPV6_HLEN);
		th = ctx_ptr(c, *inner_l4, ICMP_QUOTED_TCP_LEN);
		if (!ip6h)
			return -1;
		if (!th)
			return -1;
		flow_key_fill(fk, FLOW_FAMILY_IPV6, ip6h->saddr.in6_u.u6_addr32,
			      ip6h->daddr.in6_u.u6_addr32, th->source, th->dest);
	}
	return 0;
}

static __always_inline int ingress_icmp(const struct ctx *c, const struct pkt *pkt)
{
	struct flow_state *st;
	struct flow_key fk;
	bool opening;
	__u32 inner_l3, inner_l4;
	__be32 seq;
	__u8 *type;

	/* The quote lies past what parsing checked; bring it in before taking pointers. */
	ctx_pull_headers(c);
	type = ctx_ptr(c, pkt->l4_off, 1);
	if (!type || !icmp_is_error(pkt, *type))
		return STAT_PASS_ICMP;
	inner_l3 = icmp_quote_off(c, pkt, *type);
	if (!inner_l3 || icmp_quoted_flow(c, pkt, inner_l3, &fk, &inner_l4))
		return STAT_PASS_ICMP;
	st = flow_lookup(&fk, &opening);
	if (!st)
		return STAT_PASS_ICMP;
	if (ctx_load_be32(c, inner_l4 + TCP_SEQ_OFF, &seq))
		return STAT_PASS_ICMP;
	if (ctx_replace_be32(c, inner_l4 + TCP_SEQ_OFF, pkt->l4_off + ICMP_CSUM_OFF, seq,
			     bpf_htonl(bpf_ntohl(seq) - st->seq_delta)))
		return STAT_DROP_ERROR;
	return STAT_ICMP_TRANSLATED;
}

#endif /* ISNGUARD_BPF_ICMP_H */
