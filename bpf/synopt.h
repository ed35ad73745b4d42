/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The TCP options a SYN cookie needs (RFC 9293 3.2, RFC 7323, RFC 2018):
 * MSS, window scale, SACK-permitted and timestamps of a client's SYN, and
 * the timestamps of its ACK; TCP-MD5/TCP-AO mark a segment isnguard must not
 * answer for. The layouts real stacks send are matched directly (Linux's SYN,
 * the aligned timestamp of an ACK, no options at all); anything else goes
 * through a bounded walk. A malformed list stops the walk; what was found
 * before it stands.
 */
#ifndef ISNGUARD_BPF_SYNOPT_H
#define ISNGUARD_BPF_SYNOPT_H

#include "compiler.h"
#include "ctx.h"
#include "parse.h"

#define SYNOPT_EOL 0
#define SYNOPT_NOP 1
#define SYNOPT_MSS 2
#define SYNOPT_WSCALE 3
#define SYNOPT_SACK_PERM 4
#define SYNOPT_TIMESTAMP 8
#define SYNOPT_MD5SIG 19
#define SYNOPT_AO 29
#define SYNOPT_LEN_MSS 4
#define SYNOPT_LEN_WSCALE 3
#define SYNOPT_LEN_SACK_PERM 2
#define SYNOPT_LEN_TIMESTAMP 10
/* 40 option bytes; a walk step consumes at least one. */
#define SYNOPT_MAX_STEPS 40

/* Linux's SYN: MSS, SACK-permitted + timestamps, NOP + window scale (40-byte header). */
#define SYNOPT_LINUX_W0 0x0204		/* kind 2, length 4, then the MSS */
#define SYNOPT_LINUX_W1 0x0402080a	/* SACK-permitted, timestamp kind and length */
#define SYNOPT_LINUX_W4 0x010303	/* NOP, window scale kind and length, then the shift */
/* NOP, NOP, timestamp kind 8, length 10: the aligned timestamp of most segments. */
#define SYNOPT_TS_ALIGNED 0x0101080a

struct syn_opts {
	__u32 tsval;
	__u32 tsecr;
	__u32 ts_off;		/* offset of TSval in the frame (has_ts) */
	__u16 mss;
	__u8 wscale;
	bool has_mss;
	bool has_wscale;
	bool sack_ok;
	bool has_ts;
	bool is_signed;		/* TCP-MD5 or TCP-AO */
};

struct synopt_walk {
	void *ctx;		/* struct xdp_md * or struct __sk_buff * */
	__u32 off;		/* next option */
	__u32 end;		/* end of the TCP header */
	bool xdp;
	struct syn_opts *opts;
};

static __always_inline long synopt_load(struct synopt_walk *w, __u32 off, void *to, __u32 len)
{
	if (w->xdp)
		return bpf_xdp_load_bytes(w->ctx, off, to, len);
	return bpf_skb_load_bytes(w->ctx, off, to, len);
}

/* One option per step, through the load-bytes helpers. Returns 1 to stop. */
static __always_inline long synopt_step(struct synopt_walk *w)
{
	__u8 opt[2] = { 0, 0 };
	__u8 val[8];
	__u8 kind, len;

	if (w->off >= w->end)
		return 1;
	if (synopt_load(w, w->off, opt, w->off + 1 < w->end ? 2 : 1) < 0)
		return 1;
	kind = opt[0];
	len = opt[1];
	if (kind == SYNOPT_EOL)
		return 1;
	if (kind == SYNOPT_NOP) {
		w->off++;
		return 0;
	}
	if (len < 2 || w->off + len > w->end)
		return 1;
	if (kind == SYNOPT_MSS && len == SYNOPT_LEN_MSS) {
		if (synopt_load(w, w->off + 2, val, 2) < 0)
			return 1;
		w->opts->mss = (__u16)(val[0] << 8 | val[1]);
		w->opts->has_mss = true;
	} else if (kind == SYNOPT_WSCALE && len == SYNOPT_LEN_WSCALE) {
		if (synopt_load(w, w->off + 2, val, 1) < 0)
			return 1;
		w->opts->wscale = val[0];
		w->opts->has_wscale = true;
	} else if (kind == SYNOPT_SACK_PERM && len == SYNOPT_LEN_SACK_PERM) {
		w->opts->sack_ok = true;
	} else if (kind == SYNOPT_TIMESTAMP && len == SYNOPT_LEN_TIMESTAMP) {
		__be32 ts[2];

		if (synopt_load(w, w->off + 2, ts, sizeof(ts)) < 0)
			return 1;
		w->opts->tsval = bpf_ntohl(ts[0]);
		w->opts->tsecr = bpf_ntohl(ts[1]);
		w->opts->ts_off = w->off + 2;
		w->opts->has_ts = true;
	} else if (kind == SYNOPT_MD5SIG || kind == SYNOPT_AO) {
		w->opts->is_signed = true;
	}
	w->off += len;
	return 0;
}

/* Linux's SYN layout, read in place; false when the header is anything else. */
static __always_inline bool synopt_linux_syn(const struct ctx *c, const struct pkt *pkt,
					     struct syn_opts *opts)
{
	__be32 *w;

	if (pkt->tcp_hlen != TCP_HLEN_MIN + 20)
		return false;
	w = ctx_ptr(c, pkt->l4_off + TCP_HLEN_MIN, 20);
	if (!w)
		return false;
	if (bpf_ntohl(w[0]) >> 16 != SYNOPT_LINUX_W0 || bpf_ntohl(w[1]) != SYNOPT_LINUX_W1 ||
	    bpf_ntohl(w[4]) >> 8 != SYNOPT_LINUX_W4)
		return false;
	opts->mss = (__u16)bpf_ntohl(w[0]);
	opts->has_mss = true;
	opts->sack_ok = true;
	opts->tsval = bpf_ntohl(w[2]);
	opts->tsecr = bpf_ntohl(w[3]);
	opts->ts_off = pkt->l4_off + TCP_HLEN_MIN + 8;
	opts->has_ts = true;
	opts->wscale = (__u8)bpf_ntohl(w[4]);
	opts->has_wscale = true;
	return true;
}

/* The aligned timestamp right after the fixed header (most ACKs); false otherwise. */
static __always_inline bool synopt_aligned_ts(const struct ctx *c, const struct pkt *pkt,
					      struct syn_opts *opts)
{
	__be32 *w;

	if (pkt->tcp_hlen != TCP_HLEN_MIN + 12)
		return false;
	w = ctx_ptr(c, pkt->l4_off + TCP_HLEN_MIN, 12);
	if (!w || bpf_ntohl(w[0]) != SYNOPT_TS_ALIGNED)
		return false;
	opts->tsval = bpf_ntohl(w[1]);
	opts->tsecr = bpf_ntohl(w[2]);
	opts->ts_off = pkt->l4_off + TCP_HLEN_MIN + 4;
	opts->has_ts = true;
	return true;
}

/*
 * The walk, as a global function per context type: the verifier checks it
 * once per program. Inlined (with a bpf_loop callback, which kernels from
 * 6.7 check until its state converges at each call site), it was checked
 * again on every path of every caller: most of the instructions the
 * verifier processed (make check-verifier). A plain bounded loop, not
 * bpf_loop: a callback's frame would sit on top of this one, and these
 * walks end the programs' deepest call chains.
 */
static __always_inline int synopt_walk_from(void *ctx, bool xdp, __u32 off, __u32 end,
					    struct syn_opts *opts)
{
	struct synopt_walk w = { .ctx = ctx, .off = off, .end = end, .xdp = xdp, .opts = opts };

	if (!opts)
		return -1;
	__builtin_memset(opts, 0, sizeof(*opts));
	for (__u32 i = 0; i < SYNOPT_MAX_STEPS; i++)
		if (synopt_step(&w))
			break;
	return 0;
}

__noinline int synopt_walk_xdp(struct xdp_md *xdp, __u32 off, __u32 end, struct syn_opts *opts)
{
	return synopt_walk_from(xdp, true, off, end, opts);
}

__noinline int synopt_walk_skb(struct __sk_buff *skb, __u32 off, __u32 end,
			       struct syn_opts *opts)
{
	return synopt_walk_from(skb, false, off, end, opts);
}

/* The walk alone, for layouts the callers have ruled out as the usual ones. */
static __always_inline void synopt_walk(const struct ctx *c, const struct pkt *pkt,
					struct syn_opts *opts)
{
	__u32 off = pkt->l4_off + TCP_HLEN_MIN, end = pkt->l4_off + pkt->tcp_hlen;

	__builtin_memset(opts, 0, sizeof(*opts));
	if (c->kind == CTX_XDP)
		synopt_walk_xdp(c->ctx, off, end, opts);
	else
		synopt_walk_skb(c->ctx, off, end, opts);
}

static __always_inline void synopt_parse(const struct ctx *c, const struct pkt *pkt,
					 struct syn_opts *opts)
{
	__builtin_memset(opts, 0, sizeof(*opts));
	if (pkt->tcp_hlen <= TCP_HLEN_MIN)
		return;
	if (synopt_linux_syn(c, pkt, opts) || synopt_aligned_ts(c, pkt, opts))
		return;
	synopt_walk(c, pkt, opts);
}

#endif /* ISNGUARD_BPF_SYNOPT_H */
