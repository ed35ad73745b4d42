/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MD5 (RFC 1321) for BPF programs, for messages of up to MD5_MAX_BLOCKS
 * blocks after padding. It is here as RFC 1948/6528's reference F and as the
 * yardstick of the 2011 choice, not for new security: SipHash is the default.
 *
 * With a compile-time constant len (the ISN path: T || K is 28 or 52 bytes,
 * one block) padding and block count fold away. With a variable len (tests)
 * msg must be readable for MD5_MAX_BLOCKS * 64 bytes.
 */
#ifndef ISNGUARD_BPF_MD5_H
#define ISNGUARD_BPF_MD5_H

#include "endian.h"

#define MD5_BLOCK_LEN 64
#define MD5_MAX_BLOCKS 2
/* Padding needs one 0x80 byte and an 8-byte bit length. */
#define MD5_MAX_LEN (MD5_MAX_BLOCKS * MD5_BLOCK_LEN - 9)
#define MD5_ROUNDS 64

/* RFC 1321 section 3.4: T[i] = floor(2^32 * abs(sin(i + 1))). */
static const __u32 md5_sine[MD5_ROUNDS] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
	0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
	0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
	0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
	0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
	0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
	0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
	0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* Per-round rotation amounts, RFC 1321 section 3.4, four per round. */
static const __u8 md5_shift[4][4] = {
	{ 7, 12, 17, 22 }, { 5, 9, 14, 20 }, { 4, 11, 16, 23 }, { 6, 10, 15, 21 },
};

static __always_inline __u32 md5_rotl(__u32 x, __u32 n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-step compression of a 16-word block into state. */
static __always_inline void md5_transform(__u32 state[4], const __u32 block[16])
{
	__u32 a = state[0], b = state[1], c = state[2], d = state[3];
	int i;

#pragma unroll
	for (i = 0; i < MD5_ROUNDS; i++) {
		__u32 mix, word;

		if (i < 16) {
			mix = d ^ (b & (c ^ d));
			word = i;
		} else if (i < 32) {
			mix = c ^ (d & (b ^ c));
			word = (5 * i + 1) & 15;
		} else if (i < 48) {
			mix = b ^ c ^ d;
			word = (3 * i + 5) & 15;
		} else {
			mix = c ^ (b | ~d);
			word = (7 * i) & 15;
		}
		mix += a + md5_sine[i] + block[word];
		a = d;
		d = c;
		c = b;
		b += md5_rotl(mix, md5_shift[i / 16][i & 3]);
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
}

/* Word at byte offset pos of the padded message (RFC 1321 sections 3.1-3.2). */
static __always_inline __u32 md5_padded_word(const __u8 *msg, __u32 len,
					     __u32 pos)
{
	__u32 word = 0;
	int i;

	if (pos + 4 <= len)
		return load_le32_aligned(msg + pos);
#pragma unroll
	for (i = 0; i < 4; i++) {
		__u32 byte = 0;

		if (pos + i < len)
			byte = msg[pos + i];
		else if (pos + i == len)
			byte = 0x80;
		word |= byte << (8 * i);
	}
	return word;
}

/* RFC 1321 section 3.3: the initial state. */
static __always_inline void md5_init(__u32 state[4])
{
	state[0] = 0x67452301;
	state[1] = 0xefcdab89;
	state[2] = 0x98badcfe;
	state[3] = 0x10325476;
}

/*
 * state receives the digest as four words; the digest bytes are their
 * little-endian encodings in order. msg must be 4-byte aligned and
 * len <= MD5_MAX_LEN.
 */
static __always_inline void md5_digest(const __u8 *msg, __u32 len, __u32 state[4])
{
	__u32 blocks = (len + 8) / MD5_BLOCK_LEN + 1;
	__u32 blk;

	md5_init(state);
#pragma unroll
	for (blk = 0; blk < MD5_MAX_BLOCKS; blk++) {
		__u32 block[16];
		int w;

		if (blk < blocks) {
#pragma unroll
			for (w = 0; w < 16; w++)
				block[w] = md5_padded_word(msg, len,
							   blk * MD5_BLOCK_LEN + w * 4);
			if (blk == blocks - 1) {
				/* The bit length, little-endian, in the last two words. */
				block[14] = len << 3;
				block[15] = len >> 29;
			}
			md5_transform(state, block);
		}
	}
}

#endif /* ISNGUARD_BPF_MD5_H */
