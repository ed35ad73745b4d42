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
#include <linux/bpf.h>		/* struct bpf_timer */
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

/* Datapath configuration, one entry (map isn_config), read once per packet. */
struct isn_config {
	__u32 hash;			/* enum isn_hash for new flows */
	__u32 flags;			/* reserved, zero */
	/* Idle timeouts by flow phase, in seconds (pf's tcp.first/established/closing/closed). */
	__u32 timeout_opening;		/* SYN or SYN-ACK sent, handshake not done */
	__u32 timeout_established;
	__u32 timeout_closing;		/* the host sent FIN */
	__u32 timeout_closed;		/* FIN or RST both ways, or the host's RST */
};

#define ISN_DEFAULT_TIMEOUT_OPENING 120
#define ISN_DEFAULT_TIMEOUT_ESTABLISHED (24 * 3600)
#define ISN_DEFAULT_TIMEOUT_CLOSING 900
#define ISN_DEFAULT_TIMEOUT_CLOSED 90

/*
 * What the datapath has seen of a flow, as bits set once each (atomically),
 * so the egress and ingress programs never race on a read-modify-write. The
 * phase (opening, established, closing, closed) follows from them.
 */
enum flow_flag {
	FLOW_F_ACTIVE_OPEN = 1 << 0,	/* the host sent a SYN */
	FLOW_F_PASSIVE_OPEN = 1 << 1,	/* the host sent a SYN-ACK */
	FLOW_F_ESTABLISHED = 1 << 2,	/* the peer acknowledged the host's ISN */
	FLOW_F_FIN_LOCAL = 1 << 3,
	FLOW_F_FIN_REMOTE = 1 << 4,
	FLOW_F_RST_LOCAL = 1 << 5,
	FLOW_F_RST_REMOTE = 1 << 6,
	/*
	 * A peer RST the host's stack accepts: its seq is exactly what the
	 * host last acknowledged (RFC 5961 section 3.2), or, in answer to the
	 * host's SYN, it acknowledges the SYN (connection refused).
	 */
	FLOW_F_RST_REMOTE_OK = 1 << 7,
	FLOW_F_HOST_ACKED = 1 << 8,	/* host_ack holds the host's latest ack */
	FLOW_F_MOVED = 1 << 9,		/* this handshake entry was promoted; it lingers briefly */
	FLOW_F_TIMER = 1 << 10,		/* the entry's timer is set up (see flow_timer_init) */
};

enum flow_phase {
	FLOW_PHASE_OPENING = 0,
	FLOW_PHASE_ESTABLISHED = 1,
	FLOW_PHASE_CLOSING = 2,
	FLOW_PHASE_CLOSED = 3,
};

/*
 * Only what the host's stack accepts moves a flow towards its end: its own
 * FIN or RST, or a peer RST it would take (FLOW_F_RST_REMOTE_OK). Any other
 * peer FIN or RST counts once the host has closed too: alone it proves
 * nothing, since anyone who knows the tuple can send one off-path and the
 * host's stack drops it when it is out of window (RFC 5961), and a shorter
 * timeout from it would let such a packet expire an idle, live connection.
 */
static inline enum flow_phase flow_phase_of(__u32 flags)
{
	if (flags & (FLOW_F_RST_LOCAL | FLOW_F_RST_REMOTE_OK))
		return FLOW_PHASE_CLOSED;
	if (flags & FLOW_F_FIN_LOCAL)
		return flags & (FLOW_F_FIN_REMOTE | FLOW_F_RST_REMOTE) ? FLOW_PHASE_CLOSED
									: FLOW_PHASE_CLOSING;
	if (flags & FLOW_F_ESTABLISHED)
		return FLOW_PHASE_ESTABLISHED;
	return FLOW_PHASE_OPENING;
}

/* The host has ended its side: a SYN after this is a new connection. */
#define FLOW_F_HOST_DONE (FLOW_F_FIN_LOCAL | FLOW_F_RST_LOCAL)

/*
 * Value of the flow table (map isn_flows, LRU hash keyed by struct flow_key).
 * seq_delta = wire ISN - host ISN: egress adds it to seq, ingress subtracts it
 * from ack and SACK edges. Times are CLOCK_MONOTONIC ns (the precise clock
 * when a SYN sets them, the coarse one after).
 */
struct flow_state {
	__u32 seq_delta;
	__u32 host_isn;		/* the host's own ISN, to tell a retransmitted SYN from a new one */
	__u32 wire_isn;		/* the keyed ISN that went on the wire */
	__u32 flags;		/* enum flow_flag */
	__u32 hash;		/* enum isn_hash the ISN was made with */
	__u32 host_ack;		/* the host's latest ack (peer's space): a valid peer RST's seq */
	/*
	 * The host's SND.NXT (host space) while the handshake lasts: past a
	 * SYN's data (TCP Fast Open), for the RST checks of RFC 9293 3.10.7.
	 */
	__u32 host_snd_nxt;
	__u32 pad;
	__u64 created_ns;
	__u64 last_seen_ns;
	struct bpf_timer timer;	/* expires the entry after its phase's idle timeout */
};

/*
 * Per-CPU counters (map isn_stats), one per datapath decision plus flow
 * events. Every packet ends in exactly one decision counter. X-macro so the
 * enum and the userspace name table come from the same list.
 */
#define ISNGUARD_STATS(X)						\
	/* decisions: passed untouched */				\
	X(STAT_PASS_NOT_IP,		"pass_not_ip")			\
	X(STAT_PASS_NOT_TCP,		"pass_not_tcp")			\
	X(STAT_PASS_FRAGMENT,		"pass_fragment")		\
	X(STAT_PASS_IPV6_EXTHDR,	"pass_ipv6_exthdr")		\
	X(STAT_PASS_TRUNCATED,		"pass_truncated")		\
	X(STAT_PASS_UNTRACKED,		"pass_untracked")		\
	X(STAT_PASS_NOTHING_TO_DO,	"pass_nothing_to_do")		\
	X(STAT_PASS_TCP_SIGNED,		"pass_tcp_signed")		\
	X(STAT_PASS_ICMP,		"pass_icmp")			\
	/* decisions: rewritten */					\
	X(STAT_SYN_REWRITTEN,		"syn_rewritten")		\
	X(STAT_SYNACK_REWRITTEN,	"synack_rewritten")		\
	X(STAT_SYN_RETRANSMIT,		"syn_retransmit_rewritten")	\
	X(STAT_SEQ_TRANSLATED,		"seq_translated")		\
	X(STAT_ACK_TRANSLATED,		"ack_translated")		\
	X(STAT_ICMP_TRANSLATED,		"icmp_translated")		\
	/* decisions: dropped deliberately */				\
	X(STAT_DROP_ERROR,		"drop_error")			\
	/* events */							\
	X(STAT_SACK_BLOCKS,		"sack_blocks_translated")	\
	X(STAT_FLOW_CREATED,		"flow_created")			\
	X(STAT_FLOW_REUSED,		"flow_reused")			\
	X(STAT_FLOW_EXPIRED,		"flow_expired")			\
	X(STAT_FLOW_REMOVED,		"flow_removed")			\
	X(STAT_FLOW_PROMOTED,		"flow_promoted")		\
	X(STAT_FLOW_TIMER_ERROR,	"flow_timer_error")		\
	/* issue 11, rewriting datapath: IPv6 extension headers */	\
	X(STAT_PASS_IPV6_AH,		"pass_ipv6_ah")

#define ISNGUARD_STAT_ENUM(name, text) name,
enum isn_stat {
	ISNGUARD_STATS(ISNGUARD_STAT_ENUM)
	STAT_COUNT
};
#undef ISNGUARD_STAT_ENUM

/*
 * Where the datapath is attached (map isn_links, written only by the
 * loader): the state directory is shared by every interface, in any network
 * namespace, so this is how detach knows it removed the last user and status
 * lists them all.
 */
struct link_key {
	__u64 netns_ino;	/* inode of the network namespace */
	__u32 ifindex;
	__u32 pad;
};

/* Where the peer's segments are translated. */
enum link_ingress {
	LINK_INGRESS_XDP_NATIVE = 1,
	LINK_INGRESS_XDP_SKB = 2,
	/*
	 * clsact ingress, through the skb's own checksum state: for hosts that
	 * forward what they receive with partial checksums (veth, GRO'd skbs),
	 * which an XDP rewrite cannot keep right.
	 */
	LINK_INGRESS_TC = 3,
};

struct link_info {
	char ifname[16];
	__u32 ingress;		/* enum link_ingress */
	__u32 ingress_prog_id;
	__u32 egress_prog_id;
	__u32 pad;
	__u64 attached_at;	/* CLOCK_REALTIME seconds */
};

#define ISN_MAX_LINKS 256

/* Maps, pinned with BTF under ISN_PIN_DIR by these names. */
#define ISN_PIN_DIR "/sys/fs/bpf/isnguard"
#define ISN_MAP_FLOWS "isn_flows"
#define ISN_MAP_OPENING "isn_opening"
#define ISN_MAP_CONFIG "isn_config"
#define ISN_MAP_KEY "isn_key"
#define ISN_MAP_STATS "isn_stats"
#define ISN_MAP_LINKS "isn_links"
#define ISN_DEFAULT_MAX_FLOWS 262144
/*
 * Handshakes wait in a table of their own (isn_opening, same key and value)
 * until the peer acknowledges the host's ISN: a SYN flood that makes the
 * host answer spoofed SYNs then evicts other half-open entries, never an
 * established connection. Its size follows the flow table's.
 */
#define ISN_OPENING_MIN 1024
/*
 * The peer's ack that completes a handshake acknowledges the host's SYN and
 * at most this much data (server data in the SYN-ACK, RFC 7413); a random
 * ack from a blind flood is refused.
 */
#define ISN_HANDSHAKE_ACK_WINDOW 65535
static inline __u32 isn_opening_size(__u32 max_flows)
{
	return max_flows / 4 > ISN_OPENING_MIN ? max_flows / 4 : ISN_OPENING_MIN;
}

#endif /* ISNGUARD_H */
