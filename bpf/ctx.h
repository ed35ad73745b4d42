/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One datapath for XDP and tc: the parse, translate and checksum code takes
 * a struct ctx and asks these helpers for packet bytes. Each program passes a
 * compile-time constant kind, so after inlining only its own branch is left.
 *
 * Writes differ on purpose. XDP writes the packet directly and fixes the
 * checksum itself (RFC 1624). tc goes through bpf_skb_store_bytes() and
 * bpf_l4_csum_replace(): the kernel knows whether the skb's checksum is
 * CHECKSUM_PARTIAL (egress with offload: the field holds only the pseudo
 * header sum and must not be touched for a seq change) or complete.
 */
#ifndef ISNGUARD_BPF_CTX_H
#define ISNGUARD_BPF_CTX_H

#include <bpf/bpf_helpers.h>
#include "csum.h"

enum ctx_kind {
	CTX_XDP,
	CTX_SKB,
};

/* Verdicts. */
#define CTX_PASS 1
#define CTX_DROP 0
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2

/* Bound on header offsets, so the verifier can check packet arithmetic. */
#define CTX_MAX_OFF 512

/*
 * How many bytes parsing may need linear: Ethernet + VLAN + IPv4 with options
 * + TCP with options; an ICMP error quoting such a header is shorter than this.
 */
#define CTX_PULL_LEN (14 + 4 + 60 + 60)

struct ctx {
	void *ctx;		/* struct xdp_md * or struct __sk_buff * */
	enum ctx_kind kind;
};

static __always_inline void *ctx_data(const struct ctx *c)
{
	if (c->kind == CTX_XDP)
		return (void *)(long)((struct xdp_md *)c->ctx)->data;
	return (void *)(long)((struct __sk_buff *)c->ctx)->data;
}

static __always_inline void *ctx_data_end(const struct ctx *c)
{
	if (c->kind == CTX_XDP)
		return (void *)(long)((struct xdp_md *)c->ctx)->data_end;
	return (void *)(long)((struct __sk_buff *)c->ctx)->data_end;
}

/* Makes the headers linear in an skb (they usually are); XDP has them already. */
static __always_inline void ctx_pull_headers(const struct ctx *c)
{
	struct __sk_buff *skb = c->ctx;
	__u32 len;

	if (c->kind == CTX_XDP)
		return;
	len = skb->len < CTX_PULL_LEN ? skb->len : CTX_PULL_LEN;
	if ((long)skb->data + len > (long)skb->data_end)
		bpf_skb_pull_data(skb, len);
}

/*
 * The bound check must be on the very register added to the packet pointer;
 * barrier_var() keeps clang from checking one copy and using another.
 */
static __always_inline bool ctx_off_ok(__u64 *off)
{
	__u64 v = *off;

	barrier_var(v);
	if (v > CTX_MAX_OFF)
		return false;
	*off = v;
	return true;
}

/* Pointer to len bytes at off, or NULL when they are not in the packet. */
static __always_inline void *ctx_ptr(const struct ctx *c, __u64 off, __u32 len)
{
	void *p;

	if (!ctx_off_ok(&off))
		return NULL;
	p = ctx_data(c) + off;
	if (p + len > ctx_data_end(c))
		return NULL;
	return p;
}

static __always_inline int ctx_load_be32(const struct ctx *c, __u64 off, __be32 *val)
{
	__be32 *p = ctx_ptr(c, off, sizeof(*p));

	if (!p)
		return -1;
	*val = *p;
	return 0;
}

/*
 * Replaces the 32-bit field at off, from -> to, and fixes the checksum at
 * csum_off (an L4 checksum: TCP, or ICMP for a quoted header) to match.
 */
static __always_inline int ctx_replace_be32(const struct ctx *c, __u64 off, __u64 csum_off,
					    __be32 from, __be32 to)
{
	if (c->kind == CTX_XDP) {
		__be32 *field = ctx_ptr(c, off, sizeof(*field));
		__sum16 *csum = ctx_ptr(c, csum_off, sizeof(*csum));

		if (!field || !csum)
			return -1;
		*field = to;
		csum_replace4(csum, from, to);
		return 0;
	}
	if (bpf_skb_store_bytes(c->ctx, off, &to, sizeof(to), 0))
		return -1;
	if (bpf_l4_csum_replace(c->ctx, csum_off, from, to, sizeof(to)))
		return -1;
	return 0;
}

#endif /* ISNGUARD_BPF_CTX_H */
