// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <string.h>

#include "pkt.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define IPV4_HLEN 20
#define IPV6_HLEN 40
#define TCP_HLEN 20
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMP 1
#define PROTO_ICMPV6 58

bool pkt_set_addrs(struct pkt_spec *s, const char *src, const char *dst)
{
	int af = strchr(src, ':') ? AF_INET6 : AF_INET;

	memset(s->src, 0, sizeof(s->src));
	memset(s->dst, 0, sizeof(s->dst));
	s->family = af == AF_INET6 ? 6 : 4;
	return inet_pton(af, src, s->src) == 1 && inet_pton(af, dst, s->dst) == 1;
}

bool pkt_tcp_segment(struct pkt_spec *s, const char *src, const char *dst, uint16_t sport,
		     uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack)
{
	memset(s, 0, sizeof(*s));
	s->sport = sport;
	s->dport = dport;
	s->flags = flags;
	s->seq = seq;
	s->ack = ack;
	return pkt_set_addrs(s, src, dst);
}

bool pkt_opt_raw(struct pkt_spec *s, const uint8_t *bytes, size_t len)
{
	if (s->tcp_opts_len + len > PKT_MAX_TCP_OPTS)
		return false;
	memcpy(s->tcp_opts + s->tcp_opts_len, bytes, len);
	s->tcp_opts_len += len;
	return true;
}

bool pkt_opt_nop(struct pkt_spec *s)
{
	const uint8_t o[] = { TCPOPT_NOP };

	return pkt_opt_raw(s, o, sizeof(o));
}

bool pkt_opt_mss(struct pkt_spec *s, uint16_t mss)
{
	uint8_t o[4] = { TCPOPT_MSS, 4 };

	put_be16(o + 2, mss);
	return pkt_opt_raw(s, o, sizeof(o));
}

bool pkt_opt_wscale(struct pkt_spec *s, uint8_t shift)
{
	const uint8_t o[] = { TCPOPT_WSCALE, 3, shift };

	return pkt_opt_raw(s, o, sizeof(o));
}

bool pkt_opt_sack_perm(struct pkt_spec *s)
{
	const uint8_t o[] = { TCPOPT_SACK_PERM, 2 };

	return pkt_opt_raw(s, o, sizeof(o));
}

bool pkt_opt_timestamp(struct pkt_spec *s, uint32_t tsval, uint32_t tsecr)
{
	uint8_t o[10] = { TCPOPT_TIMESTAMP, 10 };

	put_be32(o + 2, tsval);
	put_be32(o + 6, tsecr);
	return pkt_opt_raw(s, o, sizeof(o));
}

bool pkt_opt_sack(struct pkt_spec *s, const uint32_t (*blocks)[2], int nblocks)
{
	uint8_t o[2 + 4 * 8] = { TCPOPT_SACK, (uint8_t)(2 + 8 * nblocks) };

	if (nblocks < 1 || nblocks > 4)
		return false;
	for (int i = 0; i < nblocks; i++) {
		put_be32(o + 2 + 8 * i, blocks[i][0]);
		put_be32(o + 6 + 8 * i, blocks[i][1]);
	}
	return pkt_opt_raw(s, o, (size_t)(2 + 8 * nblocks));
}

bool pkt_opt_linux_ack(struct pkt_spec *s, uint32_t tsval, uint32_t tsecr,
		       const uint32_t (*blocks)[2], int nblocks)
{
	if (!pkt_opt_nop(s) || !pkt_opt_nop(s) || !pkt_opt_timestamp(s, tsval, tsecr))
		return false;
	return !nblocks || (pkt_opt_nop(s) && pkt_opt_nop(s) && pkt_opt_sack(s, blocks, nblocks));
}

uint32_t pkt_sum(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	for (size_t i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	while (acc >> 32)
		acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t pkt_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t round4(size_t n) { return (n + 3) & ~(size_t)3; }

/* Pseudo-header sum (RFC 793 section 3.1, RFC 8200 section 8.1). */
static uint32_t pseudo_sum(int family, const uint8_t *src, const uint8_t *dst,
			   uint8_t proto, size_t l4_len)
{
	size_t alen = family == 6 ? 16 : 4;
	uint32_t sum = pkt_sum(src, alen, 0);

	sum = pkt_sum(dst, alen, sum);
	sum += proto;
	sum += (uint32_t)(l4_len & 0xffff) + (uint32_t)(l4_len >> 16);
	return sum;
}

size_t pkt_build(const struct pkt_spec *s, uint8_t *buf, size_t cap)
{
	uint8_t proto = s->l4_proto ? s->l4_proto : PROTO_TCP;
	size_t ip_opts = round4(s->ip_opts_len), tcp_opts = round4(s->tcp_opts_len);
	size_t l2 = ETH_HLEN + (s->vlan ? VLAN_HLEN : 0);
	size_t jumbo = s->family == 6 && s->ip6_jumbo ? PKT_IP6_JUMBO_HLEN : 0;
	size_t l3 = s->family == 6 ? IPV6_HLEN + jumbo + s->ip6_ext_len : IPV4_HLEN + ip_opts;
	size_t l4 = (proto == PROTO_TCP ? TCP_HLEN + tcp_opts : 0) + s->payload_len;
	size_t total = l2 + l3 + l4;
	uint8_t *p = buf, *ip, *th;

	if (total > cap || ip_opts > PKT_MAX_IP_OPTS || tcp_opts > PKT_MAX_TCP_OPTS ||
	    (s->family != 4 && s->family != 6))
		return 0;
	memset(buf, 0, total);

	memcpy(p, s->eth_dst, 6);
	memcpy(p + 6, s->eth_src, 6);
	p += 12;
	if (s->vlan) {
		put_be16(p, ETHERTYPE_VLAN);
		put_be16(p + 2, s->vlan_tci);
		p += 4;
	}
	put_be16(p, s->family == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
	p += 2;

	ip = p;
	if (s->family == 4) {
		ip[0] = (uint8_t)(0x40 | (IPV4_HLEN + ip_opts) / 4);
		ip[1] = s->tos;
		put_be16(ip + 2, (uint16_t)(l3 + l4));
		put_be16(ip + 4, s->ip_id);
		put_be16(ip + 6, s->frag_off);
		ip[8] = s->ttl ? s->ttl : 64;
		ip[9] = proto;
		memcpy(ip + 12, s->src, 4);
		memcpy(ip + 16, s->dst, 4);
		memcpy(ip + IPV4_HLEN, s->ip_opts, s->ip_opts_len);
		put_be16(ip + 10, pkt_fold(pkt_sum(ip, IPV4_HLEN + ip_opts, 0)));
	} else {
		ip[0] = (uint8_t)(0x60 | s->tos >> 4);
		ip[1] = (uint8_t)(s->tos << 4);
		put_be16(ip + 4, jumbo ? 0 : (uint16_t)(s->ip6_ext_len + l4));
		ip[6] = s->ip6_ext_len ? s->ip6_ext_first : proto;
		ip[7] = s->ttl ? s->ttl : 64;
		memcpy(ip + 8, s->src, 16);
		memcpy(ip + 24, s->dst, 16);
		if (jumbo) {
			uint8_t *hbh = ip + IPV6_HLEN;

			hbh[0] = ip[6];
			hbh[1] = 0;
			hbh[2] = 0xc2;
			hbh[3] = 4;
			put_be32(hbh + 4, (uint32_t)(jumbo + s->ip6_ext_len + l4));
			ip[6] = 0;
		}
		memcpy(ip + IPV6_HLEN + jumbo, s->ip6_ext, s->ip6_ext_len);
	}

	th = ip + l3;
	if (proto == PROTO_TCP) {
		put_be16(th, s->sport);
		put_be16(th + 2, s->dport);
		put_be32(th + 4, s->seq);
		put_be32(th + 8, s->ack);
		th[12] = (uint8_t)(((TCP_HLEN + tcp_opts) / 4) << 4);
		th[13] = s->flags;
		put_be16(th + 14, s->window);
		put_be16(th + 18, s->urg_ptr);
		memcpy(th + TCP_HLEN, s->tcp_opts, s->tcp_opts_len);
		if (s->payload_len)
			memcpy(th + TCP_HLEN + tcp_opts, s->payload, s->payload_len);
	} else if (s->payload_len) {
		memcpy(th, s->payload, s->payload_len);
	}

	if (proto == PROTO_TCP || proto == PROTO_UDP || proto == PROTO_ICMPV6 ||
	    proto == PROTO_ICMP) {
		struct pkt_layout lay = {
			.family = s->family, .l3_off = (size_t)(ip - buf),
			.l4_off = (size_t)(th - buf), .l4_proto = proto, .l4_len = l4,
		};
		size_t csum_off = proto == PROTO_TCP ? 16 : proto == PROTO_UDP ? 6 : 2;

		if (l4 >= csum_off + 2) {
			put_be16(th + csum_off, 0);
			put_be16(th + csum_off, pkt_l4_csum(buf, &lay));
		}
	}
	return total;
}

/* The Jumbo Payload length (RFC 2675) in the Hop-by-Hop header at hbh, 0 if none. */
static size_t ip6_jumbo_len(const uint8_t *hbh, size_t hlen)
{
	for (size_t i = 2; i + 1 < hlen;) {
		if (hbh[i] == 0) {		/* Pad1 */
			i++;
			continue;
		}
		if (hbh[i] == 0xc2 && hbh[i + 1] == 4 && i + 6 <= hlen)
			return get_be32(hbh + i + 2);
		i += 2 + (size_t)hbh[i + 1];
	}
	return 0;
}

/* True for the IPv6 extension headers this parser walks (RFC 8200 section 4). */
static bool ip6_is_ext(uint8_t nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 60 || nh == 51;
}

bool pkt_parse(const uint8_t *frame, size_t len, struct pkt_layout *lay)
{
	size_t off = 12;
	uint16_t type;

	memset(lay, 0, sizeof(*lay));
	if (len < ETH_HLEN)
		return false;
	type = get_be16(frame + off);
	off += 2;
	if (type == ETHERTYPE_VLAN) {
		if (len < off + 4)
			return false;
		type = get_be16(frame + off + 2);
		off += 4;
	}
	lay->l3_off = off;
	if (type == ETHERTYPE_IPV4) {
		size_t ihl, tot;

		if (len < off + IPV4_HLEN)
			return false;
		ihl = (size_t)(frame[off] & 0xf) * 4;
		tot = get_be16(frame + off + 2);
		if (ihl < IPV4_HLEN || off + tot > len || tot < ihl)
			return false;
		lay->family = 4;
		lay->l4_proto = frame[off + 9];
		lay->l4_off = off + ihl;
		lay->l4_len = tot - ihl;
		return true;
	}
	if (type == ETHERTYPE_IPV6) {
		size_t plen, l4;
		uint8_t nh;

		if (len < off + IPV6_HLEN)
			return false;
		plen = get_be16(frame + off + 4);
		nh = frame[off + 6];
		l4 = off + IPV6_HLEN;
		if (plen == 0 && nh == 0 && len >= l4 + 8)
			plen = ip6_jumbo_len(frame + l4, ((size_t)frame[l4 + 1] + 1) * 8 < len - l4 ?
							 ((size_t)frame[l4 + 1] + 1) * 8 : len - l4);
		if (off + IPV6_HLEN + plen > len)
			return false;
		while (ip6_is_ext(nh)) {
			size_t hlen;

			if (l4 + 8 > len)
				return false;
			hlen = nh == 44 ? 8 : nh == 51 ? ((size_t)frame[l4 + 1] + 2) * 4 :
							((size_t)frame[l4 + 1] + 1) * 8;
			nh = frame[l4];
			l4 += hlen;
		}
		lay->family = 6;
		lay->l4_proto = nh;
		lay->l4_off = l4;
		lay->l4_len = off + IPV6_HLEN + plen - l4;
		return true;
	}
	return false;
}

uint16_t pkt_ipv4_csum(const uint8_t *frame, const struct pkt_layout *lay)
{
	uint8_t hdr[60];
	size_t ihl = (size_t)(frame[lay->l3_off] & 0xf) * 4;

	memcpy(hdr, frame + lay->l3_off, ihl);
	hdr[10] = hdr[11] = 0;
	return pkt_fold(pkt_sum(hdr, ihl, 0));
}

uint16_t pkt_l4_csum(const uint8_t *frame, const struct pkt_layout *lay)
{
	const uint8_t *ip = frame + lay->l3_off;
	const uint8_t *l4 = frame + lay->l4_off;
	size_t csum_off = lay->l4_proto == PROTO_TCP ? 16 : lay->l4_proto == PROTO_UDP ? 6 : 2;
	uint32_t sum;
	uint16_t csum;

	/* ICMPv4 has no pseudo-header (RFC 792). */
	if (lay->l4_proto == PROTO_ICMP)
		sum = 0;
	else if (lay->family == 4)
		sum = pseudo_sum(4, ip + 12, ip + 16, lay->l4_proto, lay->l4_len);
	else
		sum = pseudo_sum(6, ip + 8, ip + 24, lay->l4_proto, lay->l4_len);
	sum = pkt_sum(l4, csum_off, sum);
	sum = pkt_sum(l4 + csum_off + 2, lay->l4_len - csum_off - 2, sum);
	csum = pkt_fold(sum);
	/* UDP sends an all-zero result as all ones (RFC 768). */
	if (lay->l4_proto == PROTO_UDP && csum == 0)
		csum = 0xffff;
	return csum;
}

bool pkt_csums_ok(const uint8_t *frame, size_t len)
{
	struct pkt_layout lay;
	size_t csum_off;

	if (!pkt_parse(frame, len, &lay))
		return false;
	if (lay.family == 4 && pkt_ipv4_csum(frame, &lay) != get_be16(frame + lay.l3_off + 10))
		return false;
	switch (lay.l4_proto) {
	case PROTO_TCP: csum_off = 16; break;
	case PROTO_UDP: csum_off = 6; break;
	case PROTO_ICMP: case PROTO_ICMPV6: csum_off = 2; break;
	default: return true;
	}
	/* A fragment's L4 checksum covers bytes not in this frame. */
	if (lay.family == 4 && (get_be16(frame + lay.l3_off + 6) & 0x3fff))
		return true;
	if (lay.l4_len < csum_off + 2)
		return false;
	return pkt_l4_csum(frame, &lay) == get_be16(frame + lay.l4_off + csum_off);
}
