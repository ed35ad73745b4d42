/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Little-endian word loads and stores for the hash functions (SipHash and MD5 are LE). */
#ifndef ISNGUARD_BPF_ENDIAN_H
#define ISNGUARD_BPF_ENDIAN_H

#include <bpf/bpf_endian.h>

/* p must be 8-byte aligned. */
static __always_inline __u64 load_le64_aligned(const void *p)
{
	__u64 v = *(const __u64 *)__builtin_assume_aligned(p, 8);

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* p must be 4-byte aligned. */
static __always_inline __u32 load_le32_aligned(const void *p)
{
	__u32 v = *(const __u32 *)__builtin_assume_aligned(p, 4);

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

/* p must be 8-byte aligned; load_le64_aligned reads v back. */
static __always_inline void store_le64_aligned(void *p, __u64 v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	*(__u64 *)__builtin_assume_aligned(p, 8) = v;
}

#endif /* ISNGUARD_BPF_ENDIAN_H */
