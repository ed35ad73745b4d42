/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SYN cookies (RFC 4987 section 3.6): the SYN-ACK's ISN carries the client's
 * options and a MAC over the connection, so the ACK that completes the
 * handshake can be checked without state. The format is in
 * include/isnguard.h; user/ref/cookie_ref.c computes the same on OpenSSL.
 *
 * A random ACK is accepted with probability 2^-22 (2^-21 for a cookie
 * lifetime after a key rotation, when two keys are valid), and when the
 * client sends timestamps its TSecr must also equal 32 more MAC bits.
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
 * Entry index of the family's table. A switch, not an array: a constant
 * array would become a .rodata map of its own, which the loader would have
 * to load and pin beside the state.
 */
static __always_inline __u16 cookie_mss_value(__u8 family, __u32 index)
{
	const bool v4 = family == FLOW_FAMILY_IPV4;

	switch (index & COOKIE_MSS_MASK) {
	case 0: return v4 ? COOKIE_MSS4_0 : COOKIE_MSS6_0;
	case 1: return v4 ? COOKIE_MSS4_1 : COOKIE_MSS6_1;
	case 2: return v4 ? COOKIE_MSS4_2 : COOKIE_MSS6_2;
	case 3: return v4 ? COOKIE_MSS4_3 : COOKIE_MSS6_3;
	case 4: return v4 ? COOKIE_MSS4_4 : COOKIE_MSS6_4;
	case 5: return v4 ? COOKIE_MSS4_5 : COOKIE_MSS6_5;
	case 6: return v4 ? COOKIE_MSS4_6 : COOKIE_MSS6_6;
	default: return v4 ? COOKIE_MSS4_7 : COOKIE_MSS6_7;
	}
}

/* The largest table MSS not above limit (the smallest entry if none is). */
static __always_inline __u32 cookie_mss_index(__u8 family, __u32 limit)
{
	__u32 i, index = 0;

#pragma unroll
	for (i = 1; i < COOKIE_MSS_ENTRIES; i++)
		if (cookie_mss_value(family, i) <= limit)
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
static __always_inline __u64 cookie_hash(const struct isn_key *key, const struct flow_key *fk,
					 __u32 client_isn, __u32 slot, __u32 opt_input)
{
	union isn_input in;

	if (isn_tuple_bytes(fk, &in) == ISN_TUPLE4_LEN) {
		cookie_put_be32(&in.bytes[ISN_TUPLE4_LEN], client_isn);
		cookie_put_le32(&in.bytes[ISN_TUPLE4_LEN + 4], slot);
		cookie_put_le32(&in.bytes[ISN_TUPLE4_LEN + 8], opt_input);
		return siphash_2_4(key, in.bytes, COOKIE_INPUT4_LEN);
	}
	cookie_put_be32(&in.bytes[ISN_TUPLE6_LEN], client_isn);
	cookie_put_le32(&in.bytes[ISN_TUPLE6_LEN + 4], slot);
	cookie_put_le32(&in.bytes[ISN_TUPLE6_LEN + 8], opt_input);
	return siphash_2_4(key, in.bytes, COOKIE_INPUT6_LEN);
}

/* The 9 option bits of a cookie. */
static __always_inline __u32 cookie_opt_bits(__u32 mss_index, const struct cookie_opts *o)
{
	__u32 bits = mss_index & COOKIE_MSS_MASK;

	if (o->wscale_ok)
		bits |= ((__u32)o->wscale + 1) << COOKIE_WSCALE_SHIFT;
	if (o->sack_ok)
		bits |= COOKIE_SACK;
	if (o->ecn_ok)
		bits |= COOKIE_ECN;
	return bits;
}

/* The cookie (the SYN-ACK's ISN) and, for a client with timestamps, the SYN-ACK's TSval. */
static __always_inline __u32 cookie_make(const struct isn_key *key, __u32 key_gen,
					 const struct flow_key *fk, __u32 client_isn,
					 __u64 now_ns, __u32 opt_bits, bool ts, __u32 *tsval)
{
	__u32 slot = cookie_slot(now_ns);
	__u64 h = cookie_hash(key, fk, client_isn, slot,
			      opt_bits | (ts ? COOKIE_TS_INPUT : 0));

	*tsval = (__u32)h;
	return (__u32)(h >> (64 - COOKIE_MAC_BITS)) << COOKIE_MAC_SHIFT |
	       (slot & COOKIE_SLOT_MASK) << COOKIE_SLOT_SHIFT_BITS |
	       (key_gen & 1) << COOKIE_KEY_SHIFT | (opt_bits & COOKIE_OPT_MASK);
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
							struct cookie_opts *o)
{
	__u32 now_slot = cookie_slot(now_ns), slot, key_gen = cfg->key_gen;
	__u32 slot_code = (cookie >> COOKIE_SLOT_SHIFT_BITS) & COOKIE_SLOT_MASK;
	__u32 key_bit = (cookie >> COOKIE_KEY_SHIFT) & 1;
	__u32 opt_bits = cookie & COOKIE_OPT_MASK, wscale_code;
	const struct isn_key *key;
	__u64 h;

	if (slot_code == (now_slot & COOKIE_SLOT_MASK))
		slot = now_slot;
	else if (slot_code == ((now_slot - 1) & COOKIE_SLOT_MASK))
		slot = now_slot - 1;
	else
		return COOKIE_EXPIRED;
	if (key_bit != (key_gen & 1)) {
		if (!key_gen || now_ns - cfg->key_rotated_ns >= COOKIE_LIFETIME_NS)
			return COOKIE_UNKNOWN_KEY;
		key_gen--;
	}
	key = key_get(key_gen);
	if (!key)
		return COOKIE_UNKNOWN_KEY;
	h = cookie_hash(key, fk, client_isn, slot, opt_bits | (ts ? COOKIE_TS_INPUT : 0));
	if ((__u32)(h >> (64 - COOKIE_MAC_BITS)) != cookie >> COOKIE_MAC_SHIFT)
		return COOKIE_BAD_MAC;
	if (ts && (__u32)h != tsecr)
		return COOKIE_BAD_MAC;

	o->mss = cookie_mss_value(fk->family, opt_bits & COOKIE_MSS_MASK);
	wscale_code = (opt_bits >> COOKIE_WSCALE_SHIFT) & COOKIE_WSCALE_MASK;
	o->wscale_ok = wscale_code != 0;
	o->wscale = wscale_code ? (__u8)(wscale_code - 1) : 0;
	o->sack_ok = opt_bits & COOKIE_SACK;
	o->ecn_ok = opt_bits & COOKIE_ECN;
	return COOKIE_OK;
}

#endif /* ISNGUARD_BPF_COOKIE_H */
