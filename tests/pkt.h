/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Packet builder for datapath tests: Ethernet, an optional 802.1Q tag, IPv4
 * (with options) or IPv6 (with raw extension headers), then TCP with any
 * options, or any other L4 payload. It computes every checksum itself, from
 * RFC 1071 sums, sharing no code with bpf/.
 */
#ifndef ISNGUARD_TEST_PKT_H
#define ISNGUARD_TEST_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PKT_MAX_LEN 2048
#define PKT_MAX_TCP_OPTS 40
#define PKT_MAX_IP_OPTS 40
#define PKT_MAX_IP6_EXT 128
#define PKT_IP6_JUMBO_HLEN 8		/* next header, 0, 0xC2, 4, 32-bit length */

/* TCP flag bits, as in the header's byte 13. */
#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10
#define TH_URG 0x20

/* TCP option kinds (IANA). */
#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_MSS 2
#define TCPOPT_WSCALE 3
#define TCPOPT_SACK_PERM 4
#define TCPOPT_SACK 5
#define TCPOPT_TIMESTAMP 8
#define TCPOPT_MD5SIG 19
#define TCPOPT_AO 29

struct pkt_spec {
	/* Ethernet */
	uint8_t eth_src[6], eth_dst[6];
	bool vlan;
	uint16_t vlan_tci;

	/* IP: family 4 or 6; addresses in network byte order */
	int family;
	uint8_t src[16], dst[16];
	uint8_t ttl;			/* hop limit for IPv6; 0 means 64 */
	uint8_t tos;			/* traffic class for IPv6 */
	uint16_t ip_id;
	uint16_t frag_off;		/* IPv4 flags and offset, host order */
	uint8_t ip_opts[PKT_MAX_IP_OPTS];
	size_t ip_opts_len;		/* padded to 4 bytes with EOL */
	uint8_t ip6_ext[PKT_MAX_IP6_EXT];	/* raw extension headers, their own next-header fields set */
	size_t ip6_ext_len;
	uint8_t ip6_ext_first;		/* next header of the fixed IPv6 header when ip6_ext_len > 0 */
	/*
	 * IPv6 BIG TCP as kernels before 7.0 send it: payload length 0 and a
	 * Hop-by-Hop header first, holding only a Jumbo Payload option (type
	 * 0xC2, RFC 2675) with the real length.
	 */
	bool ip6_jumbo;
	uint8_t l4_proto;		/* 0 means TCP */

	/* TCP, host byte order */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t window;
	uint16_t urg_ptr;
	uint8_t tcp_opts[PKT_MAX_TCP_OPTS];
	size_t tcp_opts_len;		/* padded to 4 bytes with EOL */

	/* Payload after the TCP header (or the whole L4 part when not TCP). */
	const uint8_t *payload;
	size_t payload_len;
};

/* Addresses from text; return false on a bad address. */
bool pkt_set_addrs(struct pkt_spec *s, const char *src, const char *dst);

/* A TCP segment from src:sport to dst:dport, every other field zero; false on a bad address. */
bool pkt_tcp_segment(struct pkt_spec *s, const char *src, const char *dst, uint16_t sport,
		     uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack);

/* Appending TCP options; each returns false when the 40 bytes are full. */
bool pkt_opt_nop(struct pkt_spec *s);
bool pkt_opt_mss(struct pkt_spec *s, uint16_t mss);
bool pkt_opt_wscale(struct pkt_spec *s, uint8_t shift);
bool pkt_opt_sack_perm(struct pkt_spec *s);
bool pkt_opt_timestamp(struct pkt_spec *s, uint32_t tsval, uint32_t tsecr);
bool pkt_opt_sack(struct pkt_spec *s, const uint32_t (*blocks)[2], int nblocks);
bool pkt_opt_raw(struct pkt_spec *s, const uint8_t *bytes, size_t len);
/* Linux's ACK options: NOP, NOP, timestamps, then NOP, NOP, SACK when nblocks > 0. */
bool pkt_opt_linux_ack(struct pkt_spec *s, uint32_t tsval, uint32_t tsecr,
		       const uint32_t (*blocks)[2], int nblocks);

/* Writes the frame into buf; returns its length, 0 if it does not fit. */
size_t pkt_build(const struct pkt_spec *s, uint8_t *buf, size_t cap);

/* Where the headers of a built frame are, as found by an independent parse. */
struct pkt_layout {
	int family;		/* 0 when not IP */
	size_t l3_off;
	size_t l4_off;
	uint8_t l4_proto;	/* after extension headers */
	size_t l4_len;
};

bool pkt_parse(const uint8_t *frame, size_t len, struct pkt_layout *lay);

/* RFC 1071 ones'-complement sum of data, added to an initial 32-bit sum, not folded. */
uint32_t pkt_sum(const void *data, size_t len, uint32_t sum);
uint16_t pkt_fold(uint32_t sum);	/* folded and complemented */

/* Checksums recomputed from scratch for a frame (pkt_parse layout). */
uint16_t pkt_ipv4_csum(const uint8_t *frame, const struct pkt_layout *lay);
uint16_t pkt_l4_csum(const uint8_t *frame, const struct pkt_layout *lay);
/* True when every checksum in the frame verifies. */
bool pkt_csums_ok(const uint8_t *frame, size_t len);

/* Big-endian field access for asserting on output bytes. */
static inline uint16_t get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void put_be16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

#endif /* ISNGUARD_TEST_PKT_H */
