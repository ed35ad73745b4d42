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

/* The checksum *csum covered from; it now covers to instead. */
static __always_inline void csum_replace4(__sum16 *csum, __be32 from, __be32 to)
{
	__u32 sum = (__u16)~*csum;

	sum = csum_add32(sum, ~from);
	sum = csum_add32(sum, to);
	*csum = (__sum16)~csum_fold32(sum);
}

#endif /* ISNGUARD_BPF_CSUM_H */
