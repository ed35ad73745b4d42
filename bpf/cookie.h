/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SYN cookies (RFC 4987 section 3.6): the SYN-ACK's ISN carries the client's
 * options and a MAC over the connection, so the ACK that completes the
 * handshake can be checked without state. The format is in
 * include/isnguard.h; user/ref/cookie_ref.c computes the same on OpenSSL.
 *
 * An ACK an attacker chooses, having read all he can from SYN-ACKs of his
 * own, passes one check with probability 2^-30 without timestamps and
 * 2^-54 with them (its TSecr must also hold 23 more MAC bits), a key
 * rotation included: nothing in the cookie says its slot or key, and the
 * check tries the two slots, each with the one key its cookies are made
 * with. On the translate path a pure ACK that fails is checked once more,
 * as a zero-window probe whose seq is the client's ISN (bpf/cookie_ack.h,
 * synproxy_ack_req): a second, independent MAC input, so such an ACK is
 * accepted with probability 2^-29 without timestamps and 2^-53 with them
 * (docs/security.md).
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

/*
 * A 4-byte piece of an address or a port as SipHash reads it: the bytes as
 * they stand in memory (network order), taken as a little-endian number.
 */
static __always_inline __u64 cookie_le32_at(const __u8 *p)
{
	__u32 v;

	__builtin_memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

/* A port's two bytes (network order) as SipHash reads them. */
static __always_inline __u64 cookie_le16_of(__be16 port)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap16(port);
#else
	return port;
#endif
}

/*
 * h = SipHash-2-4(key, T || client ISN || slot || options), as in
 * include/isnguard.h: T as isn_tuple_bytes lays it out, the ISN big-endian,
 * slot and options little-endian. Built straight as the little-endian
 * 64-bit words SipHash loads, the flow key's addresses 4 bytes at a time:
 * put a byte at a time, each byte cost a load, a shift and an or, and the
 * word loads waited on the byte stores. in: room for the hash input
 * (hash_input_get).
 */
static __always_inline __u64 cookie_hash(const struct isn_key *key, const struct flow_key *fk,
					 __u32 client_isn, __u32 slot, __u32 opt_input,
					 union isn_input *in)
{
	__u64 isn_le = __builtin_bswap32(client_isn);	/* its bytes big-endian */
	__u64 lport = cookie_le16_of(fk->local_port), rport = cookie_le16_of(fk->remote_port);
	__u64 tail = slot | (__u64)opt_input << 32;
	__u64 r0, r1, r2, r3;

	r0 = cookie_le32_at(&fk->remote_addr[0]);
	if (fk->family == FLOW_FAMILY_IPV4) {
		/* local 0-3, port 4-5, remote 6-9, port 10-11, ISN 12-15, then the tail */
		store_le64_aligned(&in->words[0],
				   cookie_le32_at(&fk->local_addr[0]) | lport << 32 | r0 << 48);
		store_le64_aligned(&in->words[1], r0 >> 16 | rport << 16 | isn_le << 32);
		store_le64_aligned(&in->words[2], tail);
		return siphash_2_4(key, in->bytes, COOKIE_INPUT4_LEN);
	}
	/* local 0-15, port 16-17, remote 18-33, port 34-35, ISN 36-39, then the tail */
	r1 = cookie_le32_at(&fk->remote_addr[4]);
	r2 = cookie_le32_at(&fk->remote_addr[8]);
	r3 = cookie_le32_at(&fk->remote_addr[12]);
	store_le64_aligned(&in->words[0], cookie_le32_at(&fk->local_addr[0]) |
						  cookie_le32_at(&fk->local_addr[4]) << 32);
	store_le64_aligned(&in->words[1], cookie_le32_at(&fk->local_addr[8]) |
						  cookie_le32_at(&fk->local_addr[12]) << 32);
	store_le64_aligned(&in->words[2], lport | r0 << 16 | r1 << 48);
	store_le64_aligned(&in->words[3], r1 >> 16 | r2 << 16 | r3 << 48);
	store_le64_aligned(&in->words[4], r3 >> 16 | rport << 16 | isn_le << 32);
	store_le64_aligned(&in->words[5], tail);
	return siphash_2_4(key, in->bytes, COOKIE_INPUT6_LEN);
}

/*
 * The option bits a cookie carries: opts9 with timestamps, opts1 without
 * (COOKIE_NOTS_FULL for MSS class 1 with SACK and window scale 8, else
 * nothing: the caller offers the client no more than the bits say, see
 * cookie_decode). mss_index is into the table of the case (cookie_mss_index).
 */
static __always_inline __u32 cookie_opt_bits(__u32 mss_index, const struct cookie_opts *o,
					     bool ts)
{
	__u32 bits;

	if (!ts)
		return (mss_index & COOKIE_NOTS_MSS_MASK) && o->sack_ok && o->wscale_ok &&
				       o->wscale == COOKIE_NOTS_WSCALE
			       ? COOKIE_NOTS_FULL
			       : 0;
	bits = mss_index & COOKIE_MSS_MASK;
	if (o->wscale_ok)
		bits |= ((__u32)o->wscale + 1) << COOKIE_WSCALE_SHIFT;
	if (o->sack_ok)
		bits |= COOKIE_SACK;
	if (o->ecn_ok)
		bits |= COOKIE_ECN;
	return bits;
}

/*
 * The key generation a slot's cookies are made with: the previous one for
 * the slot the latest rotation was stamped in and those before it, so a
 * rotation takes effect at a slot's start and the check never has two keys
 * to try for one slot. The difference of slots, signed: slot 0's previous
 * one is 0xffffffff (the first 68 s after boot).
 */
static __always_inline __u32 cookie_key_gen(const struct isn_config *cfg, __u32 slot)
{
	__u32 rotated = cookie_slot(cfg->key_rotated_ns);

	if (cfg->key_gen && (__s32)(slot - rotated) <= 0)
		return cfg->key_gen - 1;
	return cfg->key_gen;
}

/* The cookie of a slot (the SYN-ACK's ISN) and, for a client with timestamps, its TSval. */
static __always_inline __u32 cookie_make_slot(const struct isn_key *key,
					      const struct flow_key *fk, __u32 client_isn,
					      __u32 slot, __u32 opt_bits, bool ts, __u32 *tsval,
					      union isn_input *in)
{
	__u64 h = cookie_hash(key, fk, client_isn, slot,
			      ts ? (opt_bits & COOKIE_OPT_MASK) | COOKIE_TS_INPUT
				 : opt_bits & COOKIE_NOTS_MASK, in);

	if (ts) {
		*tsval = ((__u32)h & ~COOKIE_OPT_MASK) | (opt_bits & COOKIE_OPT_MASK);
		return (__u32)(h >> 32);
	}
	*tsval = 0;
	return ((__u32)(h >> 32) & ~COOKIE_NOTS_MASK) | (opt_bits & COOKIE_NOTS_MASK);
}

/* The cookie made now, with the slot's key; -1 if that key is missing. */
static __always_inline int cookie_make(const struct isn_config *cfg, const struct flow_key *fk,
				       __u32 client_isn, __u64 now_ns, __u32 opt_bits, bool ts,
				       __u32 *cookie, __u32 *tsval, union isn_input *in)
{
	__u32 slot = cookie_slot(now_ns);
	const struct isn_key *key = key_get(cookie_key_gen(cfg, slot));

	if (!key)
		return -1;
	*cookie = cookie_make_slot(key, fk, client_isn, slot, opt_bits, ts, tsval, in);
	return 0;
}

static __always_inline void cookie_decode(__u8 family, __u32 opt_bits, bool ts,
					  struct cookie_opts *o)
{
	__u32 wscale_code;

	if (!ts) {
		bool full = opt_bits & COOKIE_NOTS_FULL;

		o->mss = cookie_nots_mss_value(family, full ? 1 : 0);
		o->wscale_ok = full;
		o->wscale = full ? COOKIE_NOTS_WSCALE : 0;
		o->sack_ok = full;
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
 * options: it must be the cookie of now's slot or of the one before, each
 * made with its own key (cookie_key_gen), for the options it says (its
 * option bit, or TSecr's opts9). By slot, not by a time made of it: slot
 * 0's previous one is 0xffffffff, whose time would not fit 64 bits.
 */
static __always_inline enum cookie_verdict cookie_check(const struct isn_config *cfg,
							const struct flow_key *fk,
							__u32 client_isn, __u32 cookie,
							__u64 now_ns, bool ts, __u32 tsecr,
							struct cookie_opts *o, union isn_input *in)
{
	__u32 now_slot = cookie_slot(now_ns), i;
	__u32 opt_bits = ts ? tsecr & COOKIE_OPT_MASK : cookie & COOKIE_NOTS_MASK;

	for (i = 0; i < COOKIE_SLOTS_ACCEPTED; i++) {
		__u32 slot = now_slot - i, tsval;
		const struct isn_key *key = key_get(cookie_key_gen(cfg, slot));

		if (key && cookie_make_slot(key, fk, client_isn, slot, opt_bits, ts, &tsval, in) ==
				   cookie &&
		    (!ts || tsval == tsecr)) {
			cookie_decode(fk->family, opt_bits, ts, o);
			return COOKIE_OK;
		}
	}
	return COOKIE_BAD_MAC;
}

#endif /* ISNGUARD_BPF_COOKIE_H */
