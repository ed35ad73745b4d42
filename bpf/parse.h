/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Bounds-checked header walk: Ethernet, one 802.1Q/802.1ad tag, IPv4 (with
 * options) or IPv6 (through its extension headers), then TCP, or
 * ICMP/ICMPv6 for the ingress error path. First fragments hold the TCP
 * header and are parsed like whole packets; later fragments are not.
 * Everything else is classified so the program can pass it untouched and
 * count why. The result is offsets, so XDP and tc can re-derive pointers
 * after helpers that move packet data.
 */
#ifndef ISNGUARD_BPF_PARSE_H
#define ISNGUARD_BPF_PARSE_H

#include <bpf/bpf_endian.h>
#include "ctx.h"
#include "isnguard.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPV4_HLEN_MIN 20
#define IPV6_HLEN 40
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF
#define TCP_HLEN_MIN 20
#define ICMP_HLEN 8
#define IPPROTO_ICMPV6 58	/* a #define in the UAPI, so not in vmlinux.h */

/* IPv6 extension headers (RFC 8200 section 4, IANA "IPv6 Extension Header Types"). */
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_ESP 50
#define NEXTHDR_AUTH 51
#define NEXTHDR_DEST 60
#define NEXTHDR_MOBILITY 135
#define NEXTHDR_HIP 139
#define NEXTHDR_SHIM6 140
#define NEXTHDR_EXP1 253
#define NEXTHDR_EXP2 254
#define IPV6_TLV_JUMBO 0xC2
#define IPV6_FRAG_HLEN 8
#define IPV6_FRAG_OFFSET 0xFFF8	/* of the fragment header's frag_off, network order */
/* Extension headers walked before giving up (pass_ipv6_exthdr). */
#define MAX_IPV6_EXTHDRS 8

/*
 * IPv6 BIG TCP on kernels before 7.0: GSO and GRO skbs over 64 KiB carry
 * payload length 0 and this Hop-by-Hop header, holding only the Jumbo
 * Payload option (RFC 2675) with the length from the end of the fixed
 * header. Kernels from 7.0 leave it out and go by the skb length.
 */
struct ipv6_jumbo_hbh {
	__u8 nexthdr;
	__u8 hdrlen;		/* 0: 8 bytes */
	__u8 tlv_type;		/* IPV6_TLV_JUMBO */
	__u8 tlv_len;		/* 4 */
	__be32 jumbo_payload_len;
};

/* TCP flags in byte 13 of the header. */
#define TCPF_FIN 0x01
#define TCPF_SYN 0x02
#define TCPF_RST 0x04
#define TCPF_ACK 0x10

/*
 * Set by the loader before load for a device without a link-layer header
 * (tun, WireGuard, ipip: IP is the frame's first byte). A constant to the
 * verifier, so each program keeps only its own branch.
 */
const volatile bool l3_device = false;

/* Parsing went through; any other result is the STAT_PASS_* reason to stop. */
#define PARSE_OK STAT_COUNT

struct pkt {
	__u32 l3_off;
	__u32 l4_off;		/* TCP or ICMP header */
	__u32 l4_end;		/* end of the IP payload, clamped to the frame */
	__u32 tcp_hlen;		/* TCP header length with options */
	__u8 family;		/* enum flow_family */
	__u8 proto;		/* IPPROTO_TCP, IPPROTO_ICMP or IPPROTO_ICMPV6 */
	__u8 tcp_flags;
	__u8 pad;
};

static __always_inline bool ipv6_is_exthdr(__u8 nexthdr)
{
	switch (nexthdr) {
	case NEXTHDR_HOP: case NEXTHDR_ROUTING: case NEXTHDR_FRAGMENT:
	case NEXTHDR_ESP: case NEXTHDR_AUTH: case NEXTHDR_DEST:
	case NEXTHDR_MOBILITY: case NEXTHDR_HIP: case NEXTHDR_SHIM6:
	case NEXTHDR_EXP1: case NEXTHDR_EXP2:
		return true;
	}
	return false;
}

/*
 * Steps over the extension headers from *off (the first one's type in
 * *nexthdr) to the upper-layer header, leaving its offset and type there.
 * PARSE_OK, or the STAT_PASS_* reason to stop:
 * - Hop-by-Hop, routing (segment routing included) and destination options
 *   only carry options for the path and the receiver: stepped over.
 * - A fragment header with offset 0 starts the first fragment, which holds
 *   the TCP header (RFC 8200 section 4.5): stepped over. A later one holds
 *   none: pass_fragment.
 * - AH (RFC 4302) authenticates the TCP header with the rest, so any
 *   rewrite makes the receiver drop the packet: pass_ipv6_ah, never
 *   rewritten. A connection under AH has it on its SYN too, so it is never
 *   tracked and nothing of it is translated.
 * - ESP hides TCP; the others (mobility, HIP, shim6, experiments) are not
 *   looked into, nor a chain longer than MAX_IPV6_EXTHDRS: pass_ipv6_exthdr.
 */
static __always_inline int ipv6_skip_exthdrs(const struct ctx *c, __u32 *off, __u8 *nexthdr)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < MAX_IPV6_EXTHDRS; i++) {
		__u8 *hdr;

		switch (*nexthdr) {
		case NEXTHDR_HOP: case NEXTHDR_ROUTING: case NEXTHDR_DEST:
			hdr = ctx_ptr(c, *off, 2);
			if (!hdr)
				return STAT_PASS_TRUNCATED;
			*nexthdr = hdr[0];
			*off += ((__u32)hdr[1] + 1) * 8;
			break;
		case NEXTHDR_FRAGMENT:
			hdr = ctx_ptr(c, *off, IPV6_FRAG_HLEN);
			if (!hdr)
				return STAT_PASS_TRUNCATED;
			if (*(__be16 *)(hdr + 2) & bpf_htons(IPV6_FRAG_OFFSET))
				return STAT_PASS_FRAGMENT;
			*nexthdr = hdr[0];
			*off += IPV6_FRAG_HLEN;
			break;
		case NEXTHDR_AUTH:
			return STAT_PASS_IPV6_AH;
		default:
			return ipv6_is_exthdr(*nexthdr) ? STAT_PASS_IPV6_EXTHDR : PARSE_OK;
		}
	}
	return ipv6_is_exthdr(*nexthdr) ? STAT_PASS_IPV6_EXTHDR : PARSE_OK;
}

/* PARSE_OK with *pkt filled for TCP (and ICMP when want_icmp), else the STAT_PASS_* reason. */
static __always_inline int parse_ip(const struct ctx *c, __u32 off, __u16 eth_proto,
				    struct pkt *pkt, bool want_icmp)
{
	__u32 ip_end;
	int err;

	pkt->l3_off = off;
	if (eth_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = ctx_ptr(c, off, IPV4_HLEN_MIN);
		__u32 ihl;

		if (!iph)
			return STAT_PASS_TRUNCATED;
		if (iph->version != 4 || iph->ihl < 5)
			return STAT_PASS_TRUNCATED;
		ihl = iph->ihl * 4;
		/* A first fragment (MF, offset 0) holds the TCP header: parsed like a whole packet. */
		if (iph->frag_off & bpf_htons(IP_OFFSET))
			return STAT_PASS_FRAGMENT;
		pkt->family = FLOW_FAMILY_IPV4;
		pkt->proto = iph->protocol;
		pkt->l4_off = off + ihl;
		ip_end = off + bpf_ntohs(iph->tot_len);
		if (!iph->tot_len && c->kind == CTX_SKB)
			ip_end = ctx_skb_len(c);	/* BIG TCP: the skb, not the field, has the length */
		else if (bpf_ntohs(iph->tot_len) < ihl)
			return STAT_PASS_TRUNCATED;
	} else if (eth_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = ctx_ptr(c, off, IPV6_HLEN);
		__u8 nexthdr;

		if (!ip6h)
			return STAT_PASS_TRUNCATED;
		if (ip6h->version != 6)
			return STAT_PASS_TRUNCATED;
		nexthdr = ip6h->nexthdr;
		pkt->l4_off = off + IPV6_HLEN;
		ip_end = pkt->l4_off + bpf_ntohs(ip6h->payload_len);
		if (!ip6h->payload_len && c->kind == CTX_SKB)
			ip_end = ctx_skb_len(c);	/* BIG TCP over IPv6, as over IPv4 */
		if (!ip6h->payload_len && nexthdr == NEXTHDR_HOP) {
			struct ipv6_jumbo_hbh *jumbo = ctx_ptr(c, pkt->l4_off, sizeof(*jumbo));

			if (!jumbo)
				return STAT_PASS_TRUNCATED;
			if (jumbo->hdrlen == 0 && jumbo->tlv_type == IPV6_TLV_JUMBO &&
			    jumbo->tlv_len == 4) {
				ip_end = pkt->l4_off + bpf_ntohl(jumbo->jumbo_payload_len);
				nexthdr = jumbo->nexthdr;
				pkt->l4_off += sizeof(*jumbo);
			}
		}
		err = ipv6_skip_exthdrs(c, &pkt->l4_off, &nexthdr);
		if (err != PARSE_OK)
			return err;
		pkt->family = FLOW_FAMILY_IPV6;
		pkt->proto = nexthdr;
	} else {
		return STAT_PASS_NOT_IP;
	}

	if (pkt->proto == IPPROTO_TCP) {
		struct tcphdr *th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);

		if (!th || th->doff < 5)
			return STAT_PASS_TRUNCATED;
		pkt->tcp_hlen = th->doff * 4;
		/* The whole header, options included, must be in the frame and the IP payload. */
		if (!ctx_ptr(c, pkt->l4_off, pkt->tcp_hlen) || pkt->l4_off + pkt->tcp_hlen > ip_end)
			return STAT_PASS_TRUNCATED;
		pkt->tcp_flags = ((__u8 *)th)[13];
	} else if (want_icmp && (pkt->proto == IPPROTO_ICMP || pkt->proto == IPPROTO_ICMPV6)) {
		if ((pkt->proto == IPPROTO_ICMP) != (pkt->family == FLOW_FAMILY_IPV4))
			return STAT_PASS_NOT_TCP;
		if (!ctx_ptr(c, pkt->l4_off, ICMP_HLEN) || pkt->l4_off + ICMP_HLEN > ip_end)
			return STAT_PASS_TRUNCATED;
	} else {
		return STAT_PASS_NOT_TCP;
	}
	pkt->l4_end = ip_end;
	return PARSE_OK;
}

static __always_inline int parse_frame(const struct ctx *c, struct pkt *pkt, bool want_icmp)
{
	struct ethhdr *eth;
	__u32 off = ETH_HLEN;
	__u16 proto;
	__u8 *first;

	if (l3_device) {
		first = ctx_ptr(c, 0, 1);
		if (!first)
			return STAT_PASS_TRUNCATED;
		proto = (*first >> 4) == 4 ? bpf_htons(ETH_P_IP)
		      : (*first >> 4) == 6 ? bpf_htons(ETH_P_IPV6) : 0;
		return parse_ip(c, 0, proto, pkt, want_icmp);
	}
	eth = ctx_ptr(c, 0, ETH_HLEN);
	if (!eth)
		return STAT_PASS_TRUNCATED;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vh = ctx_ptr(c, ETH_HLEN, VLAN_HLEN);

		if (!vh)
			return STAT_PASS_TRUNCATED;
		proto = vh->h_vlan_encapsulated_proto;
		off += VLAN_HLEN;
	}
	return parse_ip(c, off, proto, pkt, want_icmp);
}

static __always_inline int parse_packet(const struct ctx *c, struct pkt *pkt, bool want_icmp)
{
	int err = parse_frame(c, pkt, want_icmp);

	/* Headers short in a non-linear skb: pull them in (see ctx_pull_headers) and look again. */
	if (err == STAT_PASS_TRUNCATED && ctx_pull_headers(c))
		err = parse_frame(c, pkt, want_icmp);
	return err;
}

/*
 * The IP header alone before TCP: no IPv4 options, no IPv6 extension
 * headers, not a fragment (a first fragment parses, but only the whole
 * segment is the sender's). The SYN proxy builds its answers only from
 * such segments: the SYN-ACK, the SYN and ACK of the translating proxy.
 */
static __always_inline bool parse_plain_ip(const struct ctx *c, const struct pkt *pkt)
{
	struct iphdr *ip;

	if (pkt->family == FLOW_FAMILY_IPV6)
		return pkt->l4_off == pkt->l3_off + IPV6_HLEN;
	ip = ctx_ptr(c, pkt->l3_off, IPV4_HLEN_MIN);
	return ip && pkt->l4_off == pkt->l3_off + IPV4_HLEN_MIN &&
	       !(ip->frag_off & bpf_htons(IP_MF | IP_OFFSET));
}

#endif /* ISNGUARD_BPF_PARSE_H */
