/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SipHash-2-4 (Aumasson & Bernstein, 2012) for BPF programs: 64-bit output,
 * 128-bit key, 2 compression rounds per 8-byte word and 4 finalization rounds.
 *
 * The kernel offers no SipHash helper to BPF, so it is computed here. When
 * len is a compile-time constant (the ISN path: 12 or 36 bytes) the loops
 * fold away completely; tests also run it with a variable length.
 */
#ifndef ISNGUARD_BPF_SIPHASH_H
#define ISNGUARD_BPF_SIPHASH_H

#include "isnguard.h"
#include "endian.h"

/* Longest message accepted: the published vectors go up to 63 bytes. */
#define SIPHASH_MAX_LEN 63
#define SIPHASH_MAX_WORDS (SIPHASH_MAX_LEN / 8)

#define SIP_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIP_ROUND(v0, v1, v2, v3)					\
	do {								\
		v0 += v1; v1 = SIP_ROTL64(v1, 13); v1 ^= v0;		\
		v0 = SIP_ROTL64(v0, 32);				\
		v2 += v3; v3 = SIP_ROTL64(v3, 16); v3 ^= v2;		\
		v0 += v3; v3 = SIP_ROTL64(v3, 21); v3 ^= v0;		\
		v2 += v1; v1 = SIP_ROTL64(v1, 17); v1 ^= v2;		\
		v2 = SIP_ROTL64(v2, 32);				\
	} while (0)

/*
 * msg must be 8-byte aligned (whole words are loaded; the verifier insists
 * on aligned stack access) and len <= SIPHASH_MAX_LEN.
 */
static __always_inline __u64 siphash_2_4(const struct isn_key *key,
					 const __u8 *msg, __u32 len)
{
	__u64 k0 = load_le64_aligned(&key->bytes[0]);
	__u64 k1 = load_le64_aligned(&key->bytes[8]);
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL;	/* "somepseu" */
	__u64 v1 = k1 ^ 0x646f72616e646f6dULL;	/* "dorandom" */
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL;	/* "lygenera" */
	__u64 v3 = k1 ^ 0x7465646279746573ULL;	/* "tedbytes" */
	__u32 words = len / 8;
	__u32 tail_off = words * 8;
	__u64 last = (__u64)len << 56;
	__u32 i;

#pragma unroll
	for (i = 0; i < SIPHASH_MAX_WORDS; i++) {
		if (i < words) {
			__u64 m = load_le64_aligned(msg + i * 8);

			v3 ^= m;
			SIP_ROUND(v0, v1, v2, v3);
			SIP_ROUND(v0, v1, v2, v3);
			v0 ^= m;
		}
	}

#pragma unroll
	for (i = 0; i < 7; i++) {
		if (tail_off + i < len)
			last |= (__u64)msg[tail_off + i] << (8 * i);
	}

	v3 ^= last;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= last;

	v2 ^= 0xff;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);

	return v0 ^ v1 ^ v2 ^ v3;
}

#endif /* ISNGUARD_BPF_SIPHASH_H */
