/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RFC 6528 tuple T of a flow as hash input: local address || local port
 * || remote address || remote port, network byte order, 12 bytes for IPv4
 * and 36 for IPv6. The ISN (isn.h) and the SYN cookie (cookie.h) hash it.
 */
#ifndef ISNGUARD_BPF_TUPLE_H
#define ISNGUARD_BPF_TUPLE_H

#include <bpf/bpf_helpers.h>
#include "isnguard.h"

/* Room for the longest hash input, T || K of an IPv6 flow (52 bytes). */
#define ISN_INPUT_MAX 64

union isn_input {
	__u8 bytes[ISN_INPUT_MAX];
	__u64 words[ISN_INPUT_MAX / 8];	/* alignment for whole-word loads */
};

/*
 * The tc SYN paths' hash input lives per CPU, not on the stack: their
 * deepest call chains (tc egress: the program, egress_syn_skb, an option
 * walk; the cookie check at tc ingress) leave no room for it within the
 * verifier's budget of 448 of the 512 stack bytes (make check-verifier).
 * The XDP SYN-ACK's answer has room, and keeps its own on the stack, where
 * clang keeps an IPv4 input out of memory (about 10 ns, make bench).
 * One packet's input at a time: XDP and tc run with bottom halves off, so
 * two runs never interleave on a CPU, and no program keeps it across a
 * helper that could run another.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, union isn_input);
} isn_hash_input SEC(".maps");

/* This CPU's hash input; NULL cannot happen (index 0 of one), but is checked. */
static __always_inline union isn_input *hash_input_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&isn_hash_input, &zero);
}

/* Writes T for fk into in; returns its length. */
static __always_inline __u32 isn_tuple_bytes(const struct flow_key *fk,
					     union isn_input *in)
{
	if (fk->family == FLOW_FAMILY_IPV4) {
		__builtin_memcpy(&in->bytes[0], fk->local_addr, 4);
		__builtin_memcpy(&in->bytes[4], &fk->local_port, 2);
		__builtin_memcpy(&in->bytes[6], fk->remote_addr, 4);
		__builtin_memcpy(&in->bytes[10], &fk->remote_port, 2);
		return ISN_TUPLE4_LEN;
	}
	__builtin_memcpy(&in->bytes[0], fk->local_addr, 16);
	__builtin_memcpy(&in->bytes[16], &fk->local_port, 2);
	__builtin_memcpy(&in->bytes[18], fk->remote_addr, 16);
	__builtin_memcpy(&in->bytes[34], &fk->remote_port, 2);
	return ISN_TUPLE6_LEN;
}

#endif /* ISNGUARD_BPF_TUPLE_H */
