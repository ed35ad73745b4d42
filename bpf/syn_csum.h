/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The checksums of a SYN about to be answered (bpf/syn_answer.h): the IP
 * header's and the TCP segment's, data included (Fast Open), from the frame
 * at XDP or the skb at tc ingress. Every other SYN goes to the host's
 * stack, which checks them itself.
 */
#ifndef ISNGUARD_BPF_SYN_CSUM_H
#define ISNGUARD_BPF_SYN_CSUM_H

#include "ctx.h"
#include "csum.h"
#include "parse.h"
#include "stats.h"
#include "synproxy.h"

/* Data on a SYN (Fast Open) is summed in chunks of this many bytes, copied out of the frame. */
#define SYN_CSUM_CHUNK 64
/*
 * The longest data checked: a frame of native XDP is at most a page. A
 * SYN with more (generic XDP's linearised skb) goes to the host, which
 * checks it itself, as a multi-buffer one does.
 */
#define SYN_CSUM_MAX_CHUNKS 64

/*
 * Adds the bytes [off, end) of the frame to *sum: whole chunks, then the
 * last one zero-padded (RFC 1071 pads an odd end so), which ends the loop,
 * so that the verifier walks each length once, not every way to go on.
 * The load-bytes helpers take any offset, where a packet pointer's is
 * bounded, and follow an skb's pages. 0, or -1 when the frame ends early.
 */
static __always_inline int synproxy_csum_data_ctx(const struct ctx *c, __u32 off, __u32 end,
						  __u64 *sum)
{
	__u8 chunk[SYN_CSUM_CHUNK];
	__u32 i, len;

	for (i = 0; i < SYN_CSUM_MAX_CHUNKS; i++) {
		len = end - off;
		if ((__s32)len <= 0)	/* signed: the verifier then knows len is not 0 */
			return 0;
		if (len < SYN_CSUM_CHUNK) {
			__builtin_memset(chunk, 0, sizeof(chunk));
			if (ctx_load_bytes(c, off, chunk, len))
				return -1;
			*sum += (__u32)bpf_csum_diff(NULL, 0, (__be32 *)chunk, sizeof(chunk), 0);
			return 0;
		}
		if (ctx_load_bytes(c, off, chunk, SYN_CSUM_CHUNK))
			return -1;
		*sum += (__u32)bpf_csum_diff(NULL, 0, (__be32 *)chunk, sizeof(chunk), 0);
		off += SYN_CSUM_CHUNK;
	}
	return end == off ? 0 : -1;
}

/* synproxy_csum_data_ctx as global functions, one per context, each verified once. */
__noinline int synproxy_csum_data(struct xdp_md *xdp, __u32 off, __u32 end, __u64 *sum)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };

	return sum ? synproxy_csum_data_ctx(&c, off, end, sum) : -1;
}

__noinline int synproxy_csum_data_skb(struct __sk_buff *skb, __u32 off, __u32 end, __u64 *sum)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };

	return sum ? synproxy_csum_data_ctx(&c, off, end, sum) : -1;
}

/*
 * The sum of the TCP header at off, words 32-bit words long (the parse
 * found them in the frame): one bpf_csum_diff of a constant length per
 * header length, where a word at a time cost 20-40 ns more a SYN.
 */
#define SYN_CSUM_HDR(n)								\
	case (n): {								\
		void *h = ctx_ptr(c, off, (n) * 4);				\
									\
		return h ? (__u32)bpf_csum_diff(NULL, 0, h, (n) * 4, 0) : 0;	\
	}
static __always_inline __u32 synproxy_csum_header(const struct ctx *c, __u32 off, __u32 words)
{
	switch (words) {
	SYN_CSUM_HDR(5) SYN_CSUM_HDR(6) SYN_CSUM_HDR(7) SYN_CSUM_HDR(8) SYN_CSUM_HDR(9)
	SYN_CSUM_HDR(10) SYN_CSUM_HDR(11) SYN_CSUM_HDR(12) SYN_CSUM_HDR(13) SYN_CSUM_HDR(14)
	SYN_CSUM_HDR(15)
	}
	return 0;
}

/*
 * Whether a SYN about to be answered has the checksums the host's stack
 * would check (RFC 1122 4.2.2.7: the receiver MUST check the TCP
 * checksum; 3.2.1.2, the IPv4 header's): 0 when they hold, else the
 * decision. A corrupted SYN would otherwise get a SYN-ACK the host would
 * never send. Neither XDP nor tc sees the device's verdict, so both are
 * summed here: the IPv4 header, the pseudo header, the TCP header in place
 * (synproxy_csum_header), and any data (a Fast Open SYN's) through
 * synproxy_csum_data.
 * A frame whose checksum field holds exactly the pseudo header's sum is a
 * CHECKSUM_PARTIAL skb of a local sender (a veth peer, generic XDP), which
 * the stack takes unchecked: so does this. A corrupted SYN hits that value
 * as rarely as a valid checksum (2^-16). Called through a global function
 * per context (synproxy_syn_check, synproxy_syn_check_skb), verified once.
 */
static __always_inline int synproxy_syn_csum_ctx(const struct ctx *c, const struct pkt *pkt_arg)
{
	__u32 off, end, words, have;
	struct tcphdr *th;
	__u64 pseudo, sum;
	struct pkt p;
	int err;

	if (!pkt_arg)
		return STAT_DROP_ERROR;
	p = *pkt_arg;
	off = p.l4_off;
	end = p.l4_end;
	words = p.tcp_hlen / 4;
	/* What the frame holds; an skb's data may go on past its linear part. */
	have = c->kind == CTX_XDP ? (__u32)(ctx_data_end(c) - ctx_data(c)) : ctx_skb_len(c);
	/* The IP length says more than the frame holds: the stack drops it as truncated. */
	if (end > have || end < off + p.tcp_hlen ||
	    end - off - p.tcp_hlen > SYN_CSUM_CHUNK * SYN_CSUM_MAX_CHUNKS)
		return STAT_SYN_UNANSWERABLE;
	th = ctx_ptr(c, off, TCP_HLEN_MIN);
	if (!th)
		return STAT_PASS_TRUNCATED;
	pseudo = (__u32)bpf_htonl(end - off + IPPROTO_TCP);	/* length and protocol, as words */
	if (p.family == FLOW_FAMILY_IPV4) {
		struct iphdr *ip = ctx_ptr(c, p.l3_off, IPV4_HLEN_MIN);

		if (!ip)
			return STAT_PASS_TRUNCATED;
		if (csum_words((const __u32 *)ip, IPV4_HLEN_MIN / 4, 0) != 0xffff)
			return STAT_SYN_BAD_CHECKSUM;
		pseudo = csum_words_add((const __u32 *)&ip->saddr, 2, pseudo);
	} else {
		struct ipv6hdr *ip6 = ctx_ptr(c, p.l3_off, IPV6_HLEN);

		if (!ip6)
			return STAT_PASS_TRUNCATED;
		pseudo = csum_words_add((const __u32 *)&ip6->saddr, 8, pseudo);
	}
	if (th->check == csum_fold32(csum_fold64(pseudo)))
		return 0;	/* CHECKSUM_PARTIAL */

	sum = pseudo + synproxy_csum_header(c, off, words);
	if (end > off + p.tcp_hlen) {
		err = c->kind == CTX_XDP
			      ? synproxy_csum_data(c->ctx, off + p.tcp_hlen, end, &sum)
			      : synproxy_csum_data_skb(c->ctx, off + p.tcp_hlen, end, &sum);
		if (err)
			return STAT_PASS_TRUNCATED;
	}
	return csum_fold32(csum_fold64(sum)) == 0xffff ? 0 : STAT_SYN_BAD_CHECKSUM;
}

#endif /* ISNGUARD_BPF_SYN_CSUM_H */
