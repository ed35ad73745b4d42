// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The packet builder itself. Expected frames were built independently (a
 * separate Python script with its own checksum code, run once; bytes pasted
 * here), so a builder bug cannot hide behind a matching checker bug.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "pkt.h"

static size_t from_hex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	if (n > cap)
		return 0;
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
	return n;
}

/* A zeroed spec: the MACs every expected frame uses, the addresses given (false: unparsable). */
static bool base_spec(struct pkt_spec *s, const char *src, const char *dst)
{
	static const uint8_t src_mac[6] = { 2, 0, 0, 0, 0, 1 }, dst_mac[6] = { 2, 0, 0, 0, 0, 2 };

	memset(s, 0, sizeof(*s));
	memcpy(s->eth_src, src_mac, 6);
	memcpy(s->eth_dst, dst_mac, 6);
	return pkt_set_addrs(s, src, dst);
}

/* RFC 1071 section 3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2. */
TEST(test_pkt_sum_rfc1071_example)
{
	static const uint8_t bytes[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	ASSERT_EQ(pkt_fold(pkt_sum(bytes, sizeof(bytes), 0)), (uint16_t)~0xddf2, "checksum");
}

TEST(test_pkt_build_ipv4_syn_with_options)
{
	uint8_t frame[PKT_MAX_LEN], expected[PKT_MAX_LEN];
	size_t want = from_hex("02000000000202000000000108004500003c12344000400614860a0000010a0000"
			       "029c4000500102030400000000a002faf098750000020405b40402080a00000001"
			       "0000000001030307", expected, sizeof(expected));
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "10.0.0.1", "10.0.0.2"), "addresses");
	s.ip_id = 0x1234;
	s.frag_off = 0x4000;
	s.sport = 40000;
	s.dport = 80;
	s.seq = 0x01020304;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, 1460);
	pkt_opt_sack_perm(&s);
	pkt_opt_timestamp(&s, 1, 0);
	pkt_opt_nop(&s);
	pkt_opt_wscale(&s, 7);
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_EQ(len, want, "frame length");
	ASSERT_MEMEQ(frame, expected, want, "frame bytes");
	ASSERT_TRUE(pkt_csums_ok(frame, len), "checksums verify");
}

TEST(test_pkt_build_vlan_ipv6_with_payload)
{
	uint8_t frame[PKT_MAX_LEN], expected[PKT_MAX_LEN];
	size_t want = from_hex("0200000000020200000000018100006486dd60000000002d064020010db8000000"
			       "00000000000000000120010db800000000000000000000000201bb15b3deadbeef"
			       "11223344801801f5be7500000101080a000000050000000668656c6c6f2c20776f"
			       "726c6421", expected, sizeof(expected));
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "2001:db8::1", "2001:db8::2"), "addresses");
	s.vlan = true;
	s.vlan_tci = 100;
	s.sport = 443;
	s.dport = 5555;
	s.seq = 0xdeadbeef;
	s.ack = 0x11223344;
	s.flags = TH_PSH | TH_ACK;
	s.window = 501;
	pkt_opt_nop(&s);
	pkt_opt_nop(&s);
	pkt_opt_timestamp(&s, 5, 6);
	s.payload = (const uint8_t *)"hello, world!";
	s.payload_len = 13;
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_EQ(len, want, "frame length");
	ASSERT_MEMEQ(frame, expected, want, "frame bytes");
	ASSERT_TRUE(pkt_csums_ok(frame, len), "checksums verify");
}

/* IP options (router alert), odd-length payload, ttl 1, FIN|ACK near the seq wrap. */
TEST(test_pkt_build_ipv4_options_odd_payload)
{
	static const uint8_t router_alert[] = { 0x94, 0x04, 0x00, 0x00 };
	uint8_t frame[PKT_MAX_LEN], expected[PKT_MAX_LEN];
	size_t want = from_hex("02000000000202000000000108004600002f000000000106270bc0a8010acb0071"
			       "07940400000016c822fffffff0800000005011ffffa5890000616263",
			       expected, sizeof(expected));
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "192.168.1.10", "203.0.113.7"), "addresses");
	memcpy(s.ip_opts, router_alert, sizeof(router_alert));
	s.ip_opts_len = sizeof(router_alert);
	s.ttl = 1;
	s.sport = 22;
	s.dport = 51234;
	s.seq = 0xfffffff0;
	s.ack = 0x80000000;
	s.flags = TH_FIN | TH_ACK;
	s.window = 65535;
	s.payload = (const uint8_t *)"abc";
	s.payload_len = 3;
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_EQ(len, want, "frame length");
	ASSERT_MEMEQ(frame, expected, want, "frame bytes");
	ASSERT_TRUE(pkt_csums_ok(frame, len), "checksums verify");
}

/* The checker must notice a single flipped bit anywhere a checksum covers. */
TEST(test_pkt_csums_detect_corruption)
{
	uint8_t frame[PKT_MAX_LEN];
	struct pkt_layout lay;
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "10.1.2.3", "10.3.2.1"), "addresses");
	s.sport = 1;
	s.dport = 2;
	s.flags = TH_ACK;
	pkt_opt_timestamp(&s, 7, 8);
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_TRUE(pkt_parse(frame, len, &lay), "parse");
	for (size_t off = lay.l3_off; off < len; off++) {
		frame[off] ^= 0x10;
		if (pkt_csums_ok(frame, len)) {
			FAIL("flipping a bit at offset %zu went unnoticed", off);
			return;
		}
		frame[off] ^= 0x10;
	}
	ASSERT_TRUE(pkt_csums_ok(frame, len), "restored frame verifies");
}

TEST(test_pkt_parse_ipv6_extension_headers)
{
	/* Hop-by-hop (8 bytes, PadN) then a destination options header, then TCP. */
	static const uint8_t ext[] = { 60, 0, 1, 4, 0, 0, 0, 0,  6, 0, 1, 4, 0, 0, 0, 0 };
	uint8_t frame[PKT_MAX_LEN];
	struct pkt_layout lay;
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "fd00::1", "fd00::2"), "addresses");
	memcpy(s.ip6_ext, ext, sizeof(ext));
	s.ip6_ext_len = sizeof(ext);
	s.ip6_ext_first = 0;
	s.sport = 1000;
	s.dport = 2000;
	s.flags = TH_SYN;
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_TRUE(pkt_parse(frame, len, &lay), "parse");
	ASSERT_EQ(lay.l4_proto, 6, "L4 protocol after the chain");
	ASSERT_EQ(lay.l4_off, 14 + 40 + sizeof(ext), "L4 offset");
	ASSERT_EQ(get_be16(frame + lay.l4_off), 1000, "source port");
	ASSERT_TRUE(pkt_csums_ok(frame, len), "checksums verify");
}

/* IPv6 BIG TCP before 7.0: payload length 0, a Hop-by-Hop Jumbo option holding the length. */
TEST(test_pkt_build_ipv6_big_tcp_jumbo_hop_by_hop)
{
	static const uint8_t payload[300] = { 1, 2, 3 };
	uint8_t frame[PKT_MAX_LEN];
	struct pkt_layout lay;
	struct pkt_spec s;
	size_t len;

	ASSERT_TRUE(base_spec(&s, "fd00::1", "fd00::2"), "addresses");
	s.ip6_jumbo = true;
	s.flags = TH_ACK;
	s.payload = payload;
	s.payload_len = sizeof(payload);
	len = pkt_build(&s, frame, sizeof(frame));
	ASSERT_EQ(len, 14 + 40 + 8 + 20 + sizeof(payload), "frame length");
	ASSERT_EQ(get_be16(frame + 14 + 4), 0, "payload length field");
	ASSERT_EQ(frame[14 + 6], 0, "next header: Hop-by-Hop");
	ASSERT_EQ(frame[54], 6, "Hop-by-Hop next header: TCP");
	ASSERT_EQ(frame[55], 0, "Hop-by-Hop length: 8 bytes");
	ASSERT_EQ(get_be16(frame + 56), 0xc204, "Jumbo Payload option, length 4");
	ASSERT_EQ(get_be32(frame + 58), 8 + 20 + sizeof(payload), "jumbo payload length");
	ASSERT_TRUE(pkt_parse(frame, len, &lay), "parse");
	ASSERT_EQ(lay.l4_off, 14 + 40 + 8, "L4 offset");
	ASSERT_EQ(lay.l4_len, 20 + sizeof(payload), "L4 length from the jumbo option");
	ASSERT_TRUE(pkt_csums_ok(frame, len), "checksums verify");
}
