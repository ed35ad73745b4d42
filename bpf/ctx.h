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

/*
 * tc verdicts. Passing is TC_ACT_UNSPEC, not TC_ACT_OK: in direct-action
 * mode OK ends classification, and filters after ours would never run.
 */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7	/* what bpf_redirect() returns: the skb goes where it said */

/* Bound on header offsets, so the verifier can check packet arithmetic. */
#define CTX_MAX_OFF 512

/*
 * How many bytes parsing may need linear: an NDISC redirect takes Ethernet
 * + VLAN + IPv6 + the redirect's fixed part + a target link-layer option
 * (up to 16) + the Redirected Header option's 8 + quoted IPv6 + 8 quoted
 * TCP bytes (170), an ICMPv4 error 14 + 4 + 60 + 8 + 60 + 8, TCP 14 + 4 +
 * 60 + 60. IPv6 extension headers come on top: this leaves them 96 bytes
 * before a full TCP header, which covers the usual chains (a segment
 * routing header of up to 4 segments, or Hop-by-Hop, destination options
 * and a fragment header); longer ones pass when the skb holds them paged.
 */
#define CTX_PULL_LEN (14 + 4 + 40 + 96 + 60)

struct ctx {
	void *ctx;		/* struct xdp_md * or struct __sk_buff * */
	enum ctx_kind kind;
};

/*
 * The verifier allows only a fixed offset into the context, and clang may
 * sink the data and data_end loads of two paths into one load from a
 * computed offset. An asm load with an immediate offset cannot be merged.
 */
#define CTX_LOAD_PTR(ctx, type, field)						\
	({									\
		__u64 __v;	/* ldxw zero-extends: no shifts */	\
		asm volatile("%0 = *(u32 *)(%1 + %2)"				\
			     : "=r"(__v)					\
			     : "r"(ctx), "i"(__builtin_offsetof(type, field)));	\
		__v;								\
	})

static __always_inline void *ctx_data(const struct ctx *c)
{
	if (c->kind == CTX_XDP)
		return (void *)CTX_LOAD_PTR(c->ctx, struct xdp_md, data);
	return (void *)CTX_LOAD_PTR(c->ctx, struct __sk_buff, data);
}

static __always_inline void *ctx_data_end(const struct ctx *c)
{
	if (c->kind == CTX_XDP)
		return (void *)CTX_LOAD_PTR(c->ctx, struct xdp_md, data_end);
	return (void *)CTX_LOAD_PTR(c->ctx, struct __sk_buff, data_end);
}

/* The interface the packet came in on (XDP, tc ingress) or goes out of (tc egress). */
static __always_inline __u32 ctx_ifindex(const struct ctx *c)
{
	if (c->kind == CTX_XDP)
		return ((struct xdp_md *)c->ctx)->ingress_ifindex;
	return ((struct __sk_buff *)c->ctx)->ifindex;
}

/*
 * The skb's length from its MAC header: IP length fields read 0 on GSO/GRO
 * skbs over 64 KiB (BIG TCP), where the kernel takes the length from here.
 */
static __always_inline __u32 ctx_skb_len(const struct ctx *c)
{
	return ((struct __sk_buff *)c->ctx)->len;
}

/*
 * Makes up to CTX_PULL_LEN bytes linear in an skb; true when that brought
 * in more. The stack's TCP skbs carry their headers linear, and are clones
 * whose pull would copy the head, so callers pull only after a parse found
 * the headers short. XDP frames are linear already. Invalidates pointers.
 */
static __always_inline bool ctx_pull_headers(const struct ctx *c)
{
	struct __sk_buff *skb = c->ctx;
	__u32 len, linear;

	if (c->kind == CTX_XDP)
		return false;
	len = skb->len < CTX_PULL_LEN ? skb->len : CTX_PULL_LEN;
	linear = (__u32)((long)ctx_data_end(c) - (long)ctx_data(c));
	if (linear >= len)
		return false;
	return bpf_skb_pull_data(skb, len) == 0;
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

/* Copies len bytes at off out of the packet, past its linear part or first buffer too. */
static __always_inline long ctx_load_bytes(const struct ctx *c, __u32 off, void *to, __u32 len)
{
	if (c->kind == CTX_XDP)
		return bpf_xdp_load_bytes(c->ctx, off, to, len);
	return bpf_skb_load_bytes(c->ctx, off, to, len);
}

/* Writes the 32-bit field at off, the checksum left as it is (ctx_csum_apply follows). */
static __always_inline int ctx_store_be32(const struct ctx *c, __u64 off, __be32 to)
{
	if (c->kind == CTX_XDP) {
		__be32 *field = ctx_ptr(c, off, sizeof(*field));

		if (!field)
			return -1;
		*field = to;
		return 0;
	}
	return bpf_skb_store_bytes(c->ctx, off, &to, sizeof(to), 0) ? -1 : 0;
}

/*
 * Adds diff (csum_diff4 of the fields changed, summed) to the L4 checksum at
 * csum_off. tc hands the kernel the folded difference (size 0: by diff),
 * which it applies as it would a field change, CHECKSUM_PARTIAL skbs left
 * alone.
 */
static __always_inline int ctx_csum_apply(const struct ctx *c, __u64 csum_off, __u16 diff)
{
	if (c->kind == CTX_XDP) {
		__sum16 *csum = ctx_ptr(c, csum_off, sizeof(*csum));

		if (!csum)
			return -1;
		csum_apply_diff(csum, diff);
		return 0;
	}
	return bpf_l4_csum_replace(c->ctx, csum_off, 0, diff, 0) ? -1 : 0;
}

/*
 * Replaces the 32-bit field at off, from -> to, and fixes the checksum at
 * csum_off (an L4 checksum: TCP, or ICMP for a quoted header) to match. The
 * checksum sits at an even offset from its data's start, so the field's
 * alignment within the 16-bit words is the parity of off - csum_off.
 */
static __always_inline int ctx_replace_be32(const struct ctx *c, __u64 off, __u64 csum_off,
					    __be32 from, __be32 to)
{
	if (ctx_store_be32(c, off, to))
		return -1;
	return ctx_csum_apply(c, csum_off, csum_diff4(from, to, (off - csum_off) & 1));
}

#endif /* ISNGUARD_BPF_CTX_H */
