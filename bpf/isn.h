/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RFC 6528 initial sequence numbers: ISN = M + F(localip, localport,
 * remoteip, remoteport, secretkey), M a 4-microsecond clock (section 3).
 *
 * T = local address || local port || remote address || remote port in network
 * byte order (12 bytes IPv4, 36 IPv6); K the 128-bit key.
 *   siphash: F = low 32 bits of SipHash-2-4(K, T)
 *   md5:     F = first 4 digest bytes of MD5(T || K), as a little-endian u32
 *   none:    F = 0
 * user/ref/isn_ref.c computes the same with OpenSSL; the tests hold the two
 * equal bit for bit.
 */
#ifndef ISNGUARD_BPF_ISN_H
#define ISNGUARD_BPF_ISN_H

#include "isnguard.h"
#include "md5.h"
#include "siphash.h"
#include "tuple.h"

/* in: room for the hash input (hash_input_get). */
static __always_inline __u32 isn_f_siphash(const struct isn_key *key,
					   const struct flow_key *fk, union isn_input *in)
{
	/* Separate constant-length calls, so each folds to straight-line code. */
	if (isn_tuple_bytes(fk, in) == ISN_TUPLE4_LEN)
		return (__u32)siphash_2_4(key, in->bytes, ISN_TUPLE4_LEN);
	return (__u32)siphash_2_4(key, in->bytes, ISN_TUPLE6_LEN);
}

static __always_inline __u32 isn_f_md5(const struct isn_key *key,
				       const struct flow_key *fk, union isn_input *in)
{
	__u32 digest[4];

	if (isn_tuple_bytes(fk, in) == ISN_TUPLE4_LEN) {
		__builtin_memcpy(&in->bytes[ISN_TUPLE4_LEN], key->bytes, ISN_KEY_LEN);
		md5_digest(in->bytes, ISN_TUPLE4_LEN + ISN_KEY_LEN, digest);
	} else {
		__builtin_memcpy(&in->bytes[ISN_TUPLE6_LEN], key->bytes, ISN_KEY_LEN);
		md5_digest(in->bytes, ISN_TUPLE6_LEN + ISN_KEY_LEN, digest);
	}
	/* The digest's first 4 bytes are word 0 in little-endian order. */
	return digest[0];
}

/* F of RFC 6528. An unknown mode gets SipHash: never fall back to no secret. */
static __always_inline __u32 isn_secret_f(const struct isn_key *key, __u32 hash,
					  const struct flow_key *fk, union isn_input *in)
{
	if (hash == ISN_HASH_NONE)
		return 0;
	if (hash == ISN_HASH_MD5)
		return isn_f_md5(key, fk, in);
	return isn_f_siphash(key, fk, in);
}

/* M of RFC 6528: 4-microsecond ticks of CLOCK_MONOTONIC, mod 2^32. */
static __always_inline __u32 isn_clock_ticks(__u64 now_ns)
{
	return (__u32)(now_ns / ISN_TICK_NS);
}

static __always_inline __u32 isn_compute(const struct isn_key *key, __u32 hash,
					 const struct flow_key *fk, __u64 now_ns, union isn_input *in)
{
	return isn_clock_ticks(now_ns) + isn_secret_f(key, hash, fk, in);
}

#endif /* ISNGUARD_BPF_ISN_H */
