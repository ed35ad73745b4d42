/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Definitions shared by the BPF datapath and the userspace control side.
 * Every struct, enum and constant that crosses the boundary lives here and
 * only here; tests/test_abi.c pins the layouts against the BTF of the built
 * BPF object so the two sides cannot drift.
 */
#ifndef ISNGUARD_H
#define ISNGUARD_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Keyed part F of the RFC 6528 ISN. Values are the ABI: never renumber. */
enum isn_hash {
	ISN_HASH_SIPHASH = 0,	/* low 32 bits of SipHash-2-4(K, T); the default */
	ISN_HASH_MD5 = 1,	/* first 4 bytes of MD5(T || K), RFC 1948/6528 reference */
	ISN_HASH_NONE = 2,	/* F = 0: clock only, for trusted networks and baselines */
	ISN_HASH_COUNT
};

#define ISN_KEY_LEN 16

/*
 * 128-bit secret. SipHash reads it as k0 = LE64(bytes[0..7]) and
 * k1 = LE64(bytes[8..15]); the alignment lets BPF load those as whole words.
 */
struct isn_key {
	__u8 bytes[ISN_KEY_LEN];
} __attribute__((aligned(8)));

/* RFC 6528 section 3: M is a timer that ticks every 4 microseconds. */
#define ISN_TICK_NS 4000ULL

/*
 * T = local address || local port || remote address || remote port, all in
 * network byte order: 12 bytes for IPv4, 36 for IPv6.
 */
#define ISN_TUPLE4_LEN 12
#define ISN_TUPLE6_LEN 36

/* Address family of a flow, as the IP version number (vmlinux.h has no AF_*). */
enum flow_family {
	FLOW_FAMILY_IPV4 = 4,
	FLOW_FAMILY_IPV6 = 6,
};

/*
 * One TCP connection as seen from the protected ("local") host. Addresses and
 * ports are in network byte order; an IPv4 address fills the first 4 bytes of
 * its field and the other 12 are zero, so that equal flows have equal keys.
 */
struct flow_key {
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__be16 local_port;
	__be16 remote_port;
	__u8 family;		/* enum flow_family */
	__u8 pad[3];
};

/* Datapath configuration, one entry, read once per packet. */
struct isn_config {
	__u32 hash;		/* enum isn_hash for new flows */
	__u32 flags;		/* reserved, zero */
};

/*
 * Per-CPU counters, one per datapath decision. X-macro so the enum and the
 * userspace name table are generated from the same list.
 */
#define ISNGUARD_STATS(X)						\
	X(STAT_PASS_NOT_IP,		"pass_not_ip")			\
	X(STAT_PASS_NOT_TCP,		"pass_not_tcp")			\
	X(STAT_PASS_FRAGMENT,		"pass_fragment")		\
	X(STAT_PASS_IPV6_EXTHDR,	"pass_ipv6_exthdr")		\
	X(STAT_PASS_TRUNCATED,		"pass_truncated")		\
	X(STAT_PASS_UNTRACKED,		"pass_untracked")		\
	X(STAT_PASS_TCP_SIGNED,		"pass_tcp_signed")		\
	X(STAT_SYN_REWRITTEN,		"syn_rewritten")		\
	X(STAT_SYNACK_REWRITTEN,	"synack_rewritten")		\
	X(STAT_SEQ_TRANSLATED,		"seq_translated")		\
	X(STAT_ACK_TRANSLATED,		"ack_translated")		\
	X(STAT_SACK_TRANSLATED,		"sack_translated")		\
	X(STAT_ICMP_TRANSLATED,		"icmp_translated")		\
	X(STAT_FLOW_EVICTED,		"flow_evicted")

#define ISNGUARD_STAT_ENUM(name, text) name,
enum isn_stat {
	ISNGUARD_STATS(ISNGUARD_STAT_ENUM)
	STAT_COUNT
};
#undef ISNGUARD_STAT_ENUM

#endif /* ISNGUARD_H */
