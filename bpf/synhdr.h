/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TCP headers isnguard writes itself, as 32-bit words: the cookie SYN-ACK
 * (bpf/syn_answer.h), and the SYN, ACK and RST of the translating proxy
 * (bpf/proxy.h). Options follow Linux's layout: MSS; SACK-permitted and
 * timestamps (or NOP, NOP, timestamps; or NOP, NOP, SACK-permitted); NOP
 * and window scale. Checksums are RFC 1071 sums over those words.
 */
#ifndef ISNGUARD_BPF_SYNHDR_H
#define ISNGUARD_BPF_SYNHDR_H

#include "csum.h"
#include "synopt.h"

/* The longest header written: 20 bytes, MSS, SACK-permitted + timestamps, window scale. */
#define SYNHDR_MAX_WORDS 10
#define TCPF_ECE 0x40
#define TCPF_CWR 0x80

/* What one header carries; zero fields are options left out. */
struct synhdr {
	__be16 source;
	__be16 dest;
	__u32 seq;
	__u32 ack;
	__u16 window;
	__u16 mss;		/* 0: no MSS option */
	__u8 flags;		/* TCPF_* */
	bool sack_ok;
	bool ts;
	bool wscale_ok;
	__u8 wscale;
	__u32 tsval;
	__u32 tsecr;
};

/* The header's words, checksum 0; returns its length in bytes. */
static __always_inline __u32 synhdr_words(__u32 *w, const struct synhdr *h)
{
	__u8 *b = (__u8 *)w;
	__u32 n = 5;

	__builtin_memcpy(&b[0], &h->source, 2);
	__builtin_memcpy(&b[2], &h->dest, 2);
	w[1] = bpf_htonl(h->seq);
	w[2] = bpf_htonl(h->ack);
	w[4] = 0;
	if (h->mss)
		w[n++] = bpf_htonl(SYNOPT_MSS << 24 | SYNOPT_LEN_MSS << 16 | h->mss);
	if (h->ts) {
		w[n++] = bpf_htonl((h->sack_ok ? (SYNOPT_SACK_PERM << 24 | SYNOPT_LEN_SACK_PERM << 16)
					       : (SYNOPT_NOP << 24 | SYNOPT_NOP << 16)) |
				   SYNOPT_TIMESTAMP << 8 | SYNOPT_LEN_TIMESTAMP);
		w[n++] = bpf_htonl(h->tsval);
		w[n++] = bpf_htonl(h->tsecr);
	} else if (h->sack_ok) {
		w[n++] = bpf_htonl(SYNOPT_NOP << 24 | SYNOPT_NOP << 16 | SYNOPT_SACK_PERM << 8 |
				   SYNOPT_LEN_SACK_PERM);
	}
	if (h->wscale_ok)
		w[n++] = bpf_htonl(SYNOPT_NOP << 24 | SYNOPT_WSCALE << 16 | SYNOPT_LEN_WSCALE << 8 |
				   h->wscale);
	b[12] = (__u8)(n << 4);
	b[13] = h->flags;
	b[14] = (__u8)(h->window >> 8);
	b[15] = (__u8)h->window;
	return n * 4;
}

/* Ones'-complement sum of n 32-bit words, in memory order, added to sum, not folded. */
static __always_inline __u64 csum_words_add(const __u32 *w, __u32 n, __u64 sum)
{
#pragma unroll
	for (__u32 i = 0; i < SYNHDR_MAX_WORDS; i++)
		if (i < n)
			sum += w[i];
	return sum;
}

/* The same folded to 16 bits (RFC 1071). */
static __always_inline __u16 csum_words(const __u32 *w, __u32 n, __u64 sum)
{
	return csum_fold32(csum_fold64(csum_words_add(w, n, sum)));
}

/* The pseudo header's sum (RFC 9293 3.1, RFC 8200 8.1): addresses, protocol, TCP length. */
static __always_inline __u64 synhdr_pseudo_sum(const __u32 *addrs, __u32 addr_words,
					       __u32 tcp_len)
{
	__u64 sum = (__u32)bpf_htons(IPPROTO_TCP) + (__u32)bpf_htons((__u16)tcp_len);

#pragma unroll
	for (__u32 i = 0; i < 8; i++)
		if (i < addr_words)
			sum += addrs[i];
	return sum;
}

/* The TCP checksum of the words over the pseudo header (addrs: IP source, then destination). */
static __always_inline __u16 synhdr_csum(const __u32 *words, __u32 tcp_len,
					 const __u32 *addrs, __u32 addr_words)
{
	return (__u16)~csum_words(words, tcp_len / 4, synhdr_pseudo_sum(addrs, addr_words, tcp_len));
}

/* The TTL (hop limit) of a packet isnguard sends back to where one came from. */
#define SYNHDR_TTL 64

/*
 * The IPv4 header in front of tcp_len bytes of TCP isnguard wrote: its
 * length, and, with turn, the addresses swapped and a fresh TTL (an answer
 * to the packet it was); the checksum computed last. Other fields stay.
 */
static __always_inline void synhdr_ipv4(struct iphdr *ip, __u32 tcp_len, bool turn)
{
	if (turn) {
		__be32 addr = ip->saddr;

		ip->saddr = ip->daddr;
		ip->daddr = addr;
		ip->ttl = SYNHDR_TTL;
	}
	ip->tot_len = bpf_htons((__u16)(IPV4_HLEN_MIN + tcp_len));
	ip->check = 0;
	ip->check = (__u16)~csum_words((const __u32 *)ip, IPV4_HLEN_MIN / 4, 0);
}

/* The same for IPv6 (no header checksum). */
static __always_inline void synhdr_ipv6(struct ipv6hdr *ip6, __u32 tcp_len, bool turn)
{
	if (turn) {
		struct in6_addr addr = ip6->saddr;

		ip6->saddr = ip6->daddr;
		ip6->daddr = addr;
		ip6->hop_limit = SYNHDR_TTL;
	}
	ip6->payload_len = bpf_htons((__u16)tcp_len);
}

/*
 * The IP header of a packet isnguard answers with in place of the one it
 * received (the cookie SYN-ACK): the addresses swapped and the fields of a
 * fresh packet, as the host's stack would send it (no TOS or ECN, IP ID 0
 * and DF, as Linux sends a SYN-ACK; IPv6 with no class or flow label).
 */
#define SYNHDR_IP_DF 0x4000

static __always_inline void synhdr_ipv4_answer(struct iphdr *ip, __u32 tcp_len)
{
	ip->tos = 0;
	ip->id = 0;
	ip->frag_off = bpf_htons(SYNHDR_IP_DF);
	synhdr_ipv4(ip, tcp_len, true);
}

static __always_inline void synhdr_ipv6_answer(struct ipv6hdr *ip6, __u32 tcp_len)
{
	*(__be32 *)ip6 = bpf_htonl(0x60000000);	/* version 6, no class, no label */
	synhdr_ipv6(ip6, tcp_len, true);
}

#endif /* ISNGUARD_BPF_SYNHDR_H */
