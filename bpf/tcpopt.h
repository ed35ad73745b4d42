/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TCP option walk (RFC 9293 section 3.2): finds the SACK option (RFC 2018),
 * whose block edges ingress translates, and the signature options TCP-MD5
 * (RFC 2385, kind 19) and TCP-AO (RFC 5925, kind 29), whose presence means the
 * connection must never be rewritten: any change breaks its signature.
 * A malformed option list stops the walk; what was found before it stands.
 */
#ifndef ISNGUARD_BPF_TCPOPT_H
#define ISNGUARD_BPF_TCPOPT_H

#include "compiler.h"
#include "ctx.h"
#include "parse.h"

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_SACK 5
#define TCPOPT_MD5SIG 19
#define TCPOPT_AO 29
#define TCPOLEN_SACK_BASE 2
#define TCPOLEN_SACK_BLOCK 8
#define MAX_SACK_BLOCKS 4
#define TCPOLEN_TSTAMP_ALIGNED 12
/* NOP, NOP, kind 8, length 10: the aligned timestamp option's first word. */
#define TCPOPT_TSTAMP_HDR 0x0101080a
/* 40 option bytes; a walk step consumes at least one. */
#define MAX_TCP_OPTIONS 40

struct tcp_opts {
	__u32 sack_off;		/* offset of the first SACK block in the frame, 0 if none */
	__u32 sack_blocks;
	bool is_signed;		/* TCP-MD5 or TCP-AO present */
};

struct tcpopt_walk {
	void *ctx;		/* struct xdp_md * or struct __sk_buff * */
	__u32 off;		/* next option */
	__u32 end;		/* end of the TCP header */
	struct tcp_opts *opts;
};

/*
 * One option per step. Bytes come through the load-bytes helpers, so the
 * offset never takes part in pointer arithmetic: the verifier's states of
 * the walk's steps stay alike and prune. Returns 1 to stop.
 */
static __always_inline long tcpopt_step(struct tcpopt_walk *w, __u8 kind, __u8 len)
{
	if (kind == TCPOPT_EOL)
		return 1;
	if (kind == TCPOPT_NOP) {
		w->off++;
		return 0;
	}
	if (len < 2 || w->off + len > w->end)
		return 1;
	if (kind == TCPOPT_MD5SIG || kind == TCPOPT_AO) {
		w->opts->is_signed = true;
	} else if (kind == TCPOPT_SACK && len >= TCPOLEN_SACK_BASE + TCPOLEN_SACK_BLOCK &&
		   (len - TCPOLEN_SACK_BASE) % TCPOLEN_SACK_BLOCK == 0) {
		w->opts->sack_off = w->off + TCPOLEN_SACK_BASE;
		w->opts->sack_blocks = (len - TCPOLEN_SACK_BASE) / TCPOLEN_SACK_BLOCK;
		if (w->opts->sack_blocks > MAX_SACK_BLOCKS)
			w->opts->sack_blocks = MAX_SACK_BLOCKS;
	}
	w->off += len;
	return 0;
}

/* The next option's kind and length, through the context's load-bytes helper. */
static __always_inline long tcpopt_step_load(struct tcpopt_walk *w, bool xdp)
{
	__u8 opt[2] = { 0, 0 };
	/* A lone last byte can only be EOL or NOP; read one byte then. */
	__u32 len = w->off + 1 < w->end ? 2 : 1;
	long err;

	if (w->off >= w->end)
		return 1;
	err = xdp ? bpf_xdp_load_bytes(w->ctx, w->off, opt, len)
		  : bpf_skb_load_bytes(w->ctx, w->off, opt, len);
	if (err < 0)
		return 1;
	return tcpopt_step(w, opt[0], opt[1]);
}

/*
 * The block count when word (host order), the first of the left option
 * bytes, starts NOP, NOP, SACK and the SACK fills them exactly; else 0.
 */
static __always_inline __u32 tcpopt_sack_word(__u32 word, __u32 left)
{
	__u32 len = word & 0xff;

	if (left < 4 + TCPOLEN_SACK_BLOCK ||
	    word >> 8 != (TCPOPT_NOP << 16 | TCPOPT_NOP << 8 | TCPOPT_SACK) || 2 + len != left ||
	    (len - TCPOLEN_SACK_BASE) % TCPOLEN_SACK_BLOCK ||
	    len > TCPOLEN_SACK_BASE + MAX_SACK_BLOCKS * TCPOLEN_SACK_BLOCK)
		return 0;
	return (len - TCPOLEN_SACK_BASE) / TCPOLEN_SACK_BLOCK;
}

/* NOP, NOP, SACK filling the left option bytes at off exactly: its block count, or 0. */
static __always_inline __u32 tcpopt_sack_at(const struct ctx *c, __u64 off, __u32 left)
{
	__be32 w;

	if (left < 4 + TCPOLEN_SACK_BLOCK || ctx_load_be32(c, off, &w))
		return 0;
	return tcpopt_sack_word(bpf_ntohl(w), left);
}

/*
 * The SACK layouts real stacks send, read directly: NOP, NOP, timestamps,
 * then NOP, NOP, SACK (Linux, FreeBSD); or NOP, NOP, SACK alone (no
 * timestamps: Windows). False for anything else, which the walk handles.
 */
static __always_inline bool tcpopt_sack_fast(const struct ctx *c, const struct pkt *pkt,
					     struct tcp_opts *opts)
{
	__u64 base = pkt->l4_off + TCP_HLEN_MIN;
	__u32 optlen = pkt->tcp_hlen - TCP_HLEN_MIN, blocks, skip = 0;
	__be32 first;

	if (ctx_load_be32(c, base, &first))
		return false;
	if (first == bpf_htonl(TCPOPT_TSTAMP_HDR)) {
		if (optlen <= TCPOLEN_TSTAMP_ALIGNED)
			return false;
		skip = TCPOLEN_TSTAMP_ALIGNED;
	}
	blocks = tcpopt_sack_at(c, base + skip, optlen - skip);
	if (!blocks)
		return false;
	opts->sack_off = base + skip + 4;
	opts->sack_blocks = blocks;
	opts->is_signed = false;
	return true;
}

/* The walk as a global function per context type, verified once (see synopt_walk). */
static __always_inline int tcpopt_walk_from(void *ctx, bool xdp, __u32 off, __u32 end,
					    struct tcp_opts *opts)
{
	struct tcpopt_walk w = { .ctx = ctx, .off = off, .end = end, .opts = opts };

	if (!opts)
		return -1;
	for (__u32 i = 0; i < MAX_TCP_OPTIONS; i++)
		if (tcpopt_step_load(&w, xdp))
			break;
	return 0;
}

__noinline int tcpopt_walk_xdp(struct xdp_md *xdp, __u32 off, __u32 end, struct tcp_opts *opts)
{
	return tcpopt_walk_from(xdp, true, off, end, opts);
}

__noinline int tcpopt_walk_skb(struct __sk_buff *skb, __u32 off, __u32 end,
			       struct tcp_opts *opts)
{
	return tcpopt_walk_from(skb, false, off, end, opts);
}

static __always_inline void tcpopt_walk(const struct ctx *c, const struct pkt *pkt,
					struct tcp_opts *opts)
{
	__u32 off = pkt->l4_off + TCP_HLEN_MIN, end = pkt->l4_off + pkt->tcp_hlen;

	__builtin_memset(opts, 0, sizeof(*opts));	/* padding too: the callee reads it all */
	if (off >= end)
		return;
	if (c->kind == CTX_XDP)
		tcpopt_walk_xdp(c->ctx, off, end, opts);
	else
		tcpopt_walk_skb(c->ctx, off, end, opts);
}

#endif /* ISNGUARD_BPF_TCPOPT_H */
