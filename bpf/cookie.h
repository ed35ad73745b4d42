/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SYN cookies (RFC 4987 section 3.6): the SYN-ACK's ISN carries the client's
 * options and a MAC over the connection, so the ACK that completes the
 * handshake can be checked without state. The format is in
 * include/isnguard.h; user/ref/cookie_ref.c computes the same on OpenSSL.
 *
 * A random ACK without timestamps is accepted with probability 2^-27
 * (2^-26 for a cookie lifetime after a key rotation, when two keys are
 * valid); with timestamps 2^-54 (its TSecr must also hold 23 more MAC bits).
 */
#ifndef ISNGUARD_BPF_COOKIE_H
#define ISNGUARD_BPF_COOKIE_H

#include "config.h"
#include "isnguard.h"
#include "siphash.h"
#include "tuple.h"

/* What a cookie says about the client, decoded. */
struct cookie_opts {
	__u16 mss;
	__u8 wscale;		/* the client's shift, when wscale_ok */
	bool wscale_ok;
	bool sack_ok;
	bool ecn_ok;
};

static __always_inline __u32 cookie_slot(__u64 now_ns)
{
	return (__u32)(now_ns >> COOKIE_SLOT_SHIFT);
}

/*
 * The MSS tables (include/isnguard.h), a row a family: IPv4, then IPv6.
 * Placed in .rodata (this load's own settings, frozen by libbpf, never
 * pinned) by hand: clang would put them in a mergeable .rodata.cst*
 * section, which bpftool cannot make a skeleton of.
 */
static const __u16 cookie_mss_table[2][COOKIE_MSS_ENTRIES] SEC(".rodata") = {
	COOKIE_MSS4_TABLE, COOKIE_MSS6_TABLE,
};
static const __u16 cookie_nots_mss_table[2][COOKIE_NOTS_MSS_ENTRIES] SEC(".rodata") = {
	COOKIE_NOTS_MSS4_TABLE, COOKIE_NOTS_MSS6_TABLE,
};

/* The row of a table: IPv4's, or IPv6's for any other family. */
static __always_inline __u32 cookie_mss_row(__u8 family)
{
	return family == FLOW_FAMILY_IPV4 ? 0 : 1;
}

/* Entry index of the family's table (COOKIE_MSS*). */
static __always_inline __u16 cookie_mss_value(__u8 family, __u32 index)
{
	return cookie_mss_table[cookie_mss_row(family)][index & COOKIE_MSS_MASK];
}

/* MSS class of a client without timestamps (COOKIE_NOTS_MSS*). */
static __always_inline __u16 cookie_nots_mss_value(__u8 family, __u32 index)
{
	return cookie_nots_mss_table[cookie_mss_row(family)][index & COOKIE_NOTS_MSS_MASK];
}

/*
 * The largest MSS not above limit (the smallest entry if none is) in the
 * table of the case: with timestamps (ts) the fine one, else the coarse one.
 */
static __always_inline __u32 cookie_mss_index(__u8 family, __u32 limit, bool ts)
{
	const __u32 entries = ts ? COOKIE_MSS_ENTRIES : COOKIE_NOTS_MSS_ENTRIES;
	__u32 i, index = 0;

#pragma unroll
	for (i = 1; i < COOKIE_MSS_ENTRIES; i++)
		if (i < entries &&
		    (ts ? cookie_mss_value(family, i) : cookie_nots_mss_value(family, i)) <= limit)
			index = i;
	return index;
}

static __always_inline void cookie_put_le32(__u8 *p, __u32 v)
{
	p[0] = (__u8)v;
	p[1] = (__u8)(v >> 8);
	p[2] = (__u8)(v >> 16);
	p[3] = (__u8)(v >> 24);
}

static __always_inline void cookie_put_be32(__u8 *p, __u32 v)
{
	p[0] = (__u8)(v >> 24);
	p[1] = (__u8)(v >> 16);
	p[2] = (__u8)(v >> 8);
	p[3] = (__u8)v;
}

/* h = SipHash-2-4(key, T || client ISN || slot || options), as in include/isnguard.h. */
/* in: room for the hash input (hash_input_get). */
static __always_inline __u64 cookie_hash(const struct isn_key *key, const struct flow_key *fk,
					 __u32 client_isn, __u32 slot, __u32 opt_input,
					 union isn_input *in)
{
	if (isn_tuple_bytes(fk, in) == ISN_TUPLE4_LEN) {
		cookie_put_be32(&in->bytes[ISN_TUPLE4_LEN], client_isn);
		cookie_put_le32(&in->bytes[ISN_TUPLE4_LEN + 4], slot);
		cookie_put_le32(&in->bytes[ISN_TUPLE4_LEN + 8], opt_input);
		return siphash_2_4(key, in->bytes, COOKIE_INPUT4_LEN);
	}
	cookie_put_be32(&in->bytes[ISN_TUPLE6_LEN], client_isn);
	cookie_put_le32(&in->bytes[ISN_TUPLE6_LEN + 4], slot);
	cookie_put_le32(&in->bytes[ISN_TUPLE6_LEN + 8], opt_input);
	return siphash_2_4(key, in->bytes, COOKIE_INPUT6_LEN);
}

/*
 * The option bits a cookie carries: opts9 with timestamps, opts4 without
 * (window scale only when the client's shift is COOKIE_NOTS_WSCALE, no ECN:
 * the caller offers the client no more than this). mss_index is into the
 * table of the case (cookie_mss_index).
 */
static __always_inline __u32 cookie_opt_bits(__u32 mss_index, const struct cookie_opts *o,
					     bool ts)
{
	__u32 bits;

	if (!ts) {
		bits = mss_index & COOKIE_NOTS_MSS_MASK;
		if (o->sack_ok)
			bits |= COOKIE_NOTS_SACK;
		if (o->wscale_ok && o->wscale == COOKIE_NOTS_WSCALE)
			bits |= COOKIE_NOTS_WSCALE8;
		return bits;
	}
	bits = mss_index & COOKIE_MSS_MASK;
	if (o->wscale_ok)
		bits |= ((__u32)o->wscale + 1) << COOKIE_WSCALE_SHIFT;
	if (o->sack_ok)
		bits |= COOKIE_SACK;
	if (o->ecn_ok)
		bits |= COOKIE_ECN;
	return bits;
}

/* Cookie and TSval from h, the fields in clear and the options. */
static __always_inline __u32 cookie_from_hash(__u64 h, __u32 key_gen, __u32 slot, __u32 opt_bits,
					      bool ts, __u32 *tsval)
{
	__u32 fields = (key_gen & COOKIE_KEY_BIT) |
		       (slot & COOKIE_SLOT_MASK) << COOKIE_SLOT_SHIFT_BITS;

	if (ts) {
		*tsval = ((__u32)h & ~COOKIE_OPT_MASK) | (opt_bits & COOKIE_OPT_MASK);
		return ((__u32)(h >> 32) & ~COOKIE_FIELDS_TS) | fields;
	}
	*tsval = 0;
	fields |= (opt_bits & COOKIE_NOTS_MASK) << COOKIE_NOTS_SHIFT;
	return ((__u32)(h >> 32) & ~COOKIE_FIELDS_NOTS) | fields;
}

/* The cookie of a slot (the SYN-ACK's ISN) and, for a client with timestamps, its TSval. */
static __always_inline __u32 cookie_make_slot(const struct isn_key *key, __u32 key_gen,
					      const struct flow_key *fk, __u32 client_isn,
					      __u32 slot, __u32 opt_bits, bool ts, __u32 *tsval,
					      union isn_input *in)
{
	__u64 h = cookie_hash(key, fk, client_isn, slot,
			      ts ? (opt_bits & COOKIE_OPT_MASK) | COOKIE_TS_INPUT
				 : opt_bits & COOKIE_NOTS_MASK, in);

	return cookie_from_hash(h, key_gen, slot, opt_bits, ts, tsval);
}

/* The cookie made now. */
static __always_inline __u32 cookie_make(const struct isn_key *key, __u32 key_gen,
					 const struct flow_key *fk, __u32 client_isn,
					 __u64 now_ns, __u32 opt_bits, bool ts, __u32 *tsval,
					 union isn_input *in)
{
	return cookie_make_slot(key, key_gen, fk, client_isn, cookie_slot(now_ns), opt_bits, ts,
				tsval, in);
}

static __always_inline void cookie_decode(__u8 family, __u32 opt_bits, bool ts,
					  struct cookie_opts *o)
{
	__u32 wscale_code;

	if (!ts) {
		o->mss = cookie_nots_mss_value(family, opt_bits & COOKIE_NOTS_MSS_MASK);
		o->wscale_ok = opt_bits & COOKIE_NOTS_WSCALE8;
		o->wscale = o->wscale_ok ? COOKIE_NOTS_WSCALE : 0;
		o->sack_ok = opt_bits & COOKIE_NOTS_SACK;
		o->ecn_ok = false;
		return;
	}
	o->mss = cookie_mss_value(family, opt_bits & COOKIE_MSS_MASK);
	wscale_code = (opt_bits >> COOKIE_WSCALE_SHIFT) & COOKIE_WSCALE_MASK;
	o->wscale_ok = wscale_code != 0;
	o->wscale = wscale_code ? (__u8)(wscale_code - 1) : 0;
	o->sack_ok = opt_bits & COOKIE_SACK;
	o->ecn_ok = opt_bits & COOKIE_ECN;
}

/*
 * Checks the cookie an ACK returns (its ack - 1) and decodes the client's
 * options. The slot must be the current or the previous one; the key the
 * current one, or the previous one for a cookie lifetime after a rotation.
 */
static __always_inline enum cookie_verdict cookie_check(const struct isn_config *cfg,
							const struct flow_key *fk,
							__u32 client_isn, __u32 cookie,
							__u64 now_ns, bool ts, __u32 tsecr,
							struct cookie_opts *o, union isn_input *in)
{
	__u32 now_slot = cookie_slot(now_ns), slot, key_gen = cfg->key_gen, tsval;
	__u32 slot_code = (cookie >> COOKIE_SLOT_SHIFT_BITS) & COOKIE_SLOT_MASK;
	__u32 opt_bits = ts ? tsecr & COOKIE_OPT_MASK
			    : (cookie >> COOKIE_NOTS_SHIFT) & COOKIE_NOTS_MASK;
	const struct isn_key *key;

	if (slot_code == (now_slot & COOKIE_SLOT_MASK))
		slot = now_slot;
	else if (slot_code == ((now_slot - 1) & COOKIE_SLOT_MASK))
		slot = now_slot - 1;
	else
		return COOKIE_EXPIRED;
	if ((cookie & COOKIE_KEY_BIT) != (key_gen & COOKIE_KEY_BIT)) {
		/* A stamp ahead of now (a finer clock than the coarse one) is a rotation just made. */
		if (!key_gen || now_ns >= cfg->key_rotated_ns + COOKIE_LIFETIME_NS)
			return COOKIE_UNKNOWN_KEY;
		key_gen--;
	}
	key = key_get(key_gen);
	if (!key)
		return COOKIE_UNKNOWN_KEY;
	/*
	 * By slot, not by a time made of it: slot 0's previous one is
	 * 0xffffffff (the first 68 s after boot, as the reference has it),
	 * whose time would not fit 64 bits.
	 */
	if (cookie_make_slot(key, key_gen, fk, client_isn, slot, opt_bits, ts, &tsval, in) !=
		    cookie ||
	    (ts && tsval != tsecr))
		return COOKIE_BAD_MAC;
	cookie_decode(fk->family, opt_bits, ts, o);
	return COOKIE_OK;
}

#endif /* ISNGUARD_BPF_COOKIE_H */
