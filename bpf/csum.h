/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Incremental Internet checksum update, RFC 1624 eqn. 3:
 *   HC' = ~(~HC + ~m + m')
 * in 32-bit ones'-complement arithmetic folded to 16 bits. Byte order does
 * not matter as long as field and checksum are taken the same way (RFC 1071
 * section 2(B)), so values stay as they are in the packet.
 */
#ifndef ISNGUARD_BPF_CSUM_H
#define ISNGUARD_BPF_CSUM_H

static __always_inline __u32 csum_add32(__u32 sum, __u32 addend)
{
	sum += addend;
	return sum + (sum < addend);	/* end-around carry */
}

static __always_inline __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* A 64-bit sum of 32-bit words folded to 32 bits, end-around carries kept. */
static __always_inline __u32 csum_fold64(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return (__u32)sum;
}

/*
 * What replacing the 32-bit field from -> to adds to the sum, folded. A field
 * at an odd offset from the checksummed data's start (an option after a lone
 * NOP: `NOP, SACK`) straddles three 16-bit words, so each of its bytes counts
 * in the other half of a word: its contribution is the byte-swapped one
 * (RFC 1071 section 2(B), as pf's pf_change_a does for unaligned fields).
 */
static __always_inline __u16 csum_diff4(__be32 from, __be32 to, bool odd)
{
	__u16 diff = csum_fold32(csum_add32(~from, to));

	return odd ? (__u16)(diff << 8 | diff >> 8) : diff;
}

/* The checksum *csum covered a field's old value; diff (csum_diff4) makes it cover the new one. */
static __always_inline void csum_apply_diff(__sum16 *csum, __u16 diff)
{
	__u32 sum = (__u16)~*csum;

	*csum = (__sum16)~csum_fold32(csum_add32(sum, diff));
}

#endif /* ISNGUARD_BPF_CSUM_H */
