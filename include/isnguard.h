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
/* isn_key holds two keys, the current and the previous one (isn_config.key_gen). */
#define ISN_KEY_SLOTS 2

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
	/*
	 * Key rotation: the key in use is isn_key[key_gen & 1]; `key rotate`
	 * writes the other entry, then bumps key_gen and stamps key_rotated_ns
	 * (CLOCK_MONOTONIC). SYN cookies take the new key from the next
	 * cookie slot on, so those made with the previous one stay valid
	 * until the slot after the rotation's ends (see the cookie below).
	 */
	__u32 key_gen;
	/*
	 * How often the sweeper looks at each flow again (0:
	 * ISN_SWEEP_INTERVAL_MS): an entry goes at most this long after its
	 * timeout. See isn_sweep_interval_ms.
	 */
	__u32 sweep_interval_ms;
	__u64 key_rotated_ns;
	/*
	 * --max-flows: connections isn_flows holds. New connections beyond it
	 * go unprotected (their SYN passes as it is, syn_unprotected_table_full);
	 * no entry is ever evicted to make room (0: no limit but the map's).
	 */
	__u32 max_flows;
	__u32 pad;
};

/*
 * isnguard_sweeper's return value (the loader runs it once, by
 * BPF_PROG_TEST_RUN, to arm the sweeper's timer): 0, or the step that
 * failed in bits 16-23 and its error, negated, in bits 0-15, so the loader
 * can say which bpf_timer call failed and why.
 */
enum sweeper_start_step {
	SWEEPER_START_NO_MAP = 1,	/* no isn_sweeper entry */
	SWEEPER_START_INIT,		/* bpf_timer_init */
	SWEEPER_START_CALLBACK,		/* bpf_timer_set_callback */
	SWEEPER_START_TIMER,		/* bpf_timer_start */
};
#define SWEEPER_START_RETVAL(step, err) (((__u32)(step) << 16) | ((__u32)-(err) & 0xffff))

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
	FLOW_F_TIMER = 1 << 10,		/* retired: entries had timers of their own before the sweeper */
	/*
	 * The translating SYN proxy (bpf/proxy.h) opened this connection to
	 * the host: the peer's handshake was with the cookie (wire_isn), the
	 * host's with isnguard. Timestamps and windows are translated too.
	 */
	FLOW_F_PROXIED = 1 << 11,
	FLOW_F_PROXY_OPEN = 1 << 12,	/* SYN sent to the host, its SYN-ACK not seen yet */
	FLOW_F_PROXY_ACK = 1 << 13,	/* isnguard's ACK to the host's SYN-ACK is on its way in */
	FLOW_F_PROXY_TS = 1 << 14,	/* timestamps both ways: TSval out += ts_delta, TSecr in -= */
	/*
	 * The SYN to the host offered window scaling (the client's cookie
	 * said so): the host's own shift counts if its SYN-ACK scales too.
	 * Not derived from the shifts, which are all 0 where the client and
	 * isnguard both announced 0.
	 */
	FLOW_F_PROXY_WSCALE = 1 << 15,
	/*
	 * The SYN proxy's local path made this connection: the host's
	 * listener took a request socket for a valid cookie ACK, so the host's
	 * ISN is the cookie (delta 0). The entry tells the connection's later
	 * segments from cookie ACKs: they go to the stack as they are. Once
	 * the host has closed (FLOW_F_HOST_DONE) it no longer does: a new
	 * cookie ACK on the tuple is judged, and makes the entry anew.
	 */
	FLOW_F_COOKIE_LOCAL = 1 << 16,
	/*
	 * A proxied connection that has carried nothing yet: set when the
	 * cookie ACK makes the entry, cleared by the first segment either way
	 * with data or a FIN. While it is set an established flow has the
	 * opening timeout, not the established one: handshakes completed
	 * from real addresses that then go silent must not fill the table
	 * (README: Threat model and limits). A bit that data clears rather
	 * than sets, so that entries made before it existed (a reload with
	 * kept state) keep the established timeout.
	 */
	FLOW_F_PROXY_SILENT = 1 << 17,
	/*
	 * The host has sent on the connection outside a SYN (tc egress): its
	 * stack has the socket, or (a RST, FLOW_F_RST_LOCAL too) is done with
	 * it. Until then a local-path entry (FLOW_F_COOKIE_LOCAL) is only as
	 * good as its cookie ACK: tc may see the next segment on another CPU
	 * before the stack has taken the ACK (bpf/flow.h, flow_before_socket).
	 */
	FLOW_F_HOST_SOCKET = 1 << 18,
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
 * Value of the flow tables (maps isn_flows, a hash, and isn_opening, an LRU
 * hash, keyed by struct flow_key).
 * seq_delta = wire ISN - host ISN: egress adds it to seq, ingress subtracts it
 * from ack and SACK edges. Times are CLOCK_MONOTONIC ns (the precise clock
 * when a SYN sets them, the coarse one after).
 *
 * Laid out by who writes what. The first FLOW_STATE_READ_BYTES are what
 * every segment reads, written a few times a connection at most (flags set
 * once each, the handshake's fields); the rest is what the host's segments
 * keep writing (host_ack whenever the host's ack moves, last_seen_ns, the
 * sweeper's sweep_id), padded so that an element of the kernel's
 * preallocated hashes is whole cache lines: its header (struct htab_elem,
 * 48 bytes on 6.1 and 6.18), the 40-byte key and this 104-byte value make
 * 192 bytes, three lines, and the written fields start the last one. A
 * connection's segments each way are often handled on two CPUs (the
 * receiving one's softirq, the sending application's); with a 64-byte value
 * (152-byte elements) host_ack shared a line with the key and flags, and
 * every segment moved that line between them. test_datapath checks where
 * the running kernel puts real entries.
 */
struct flow_state {
	/* Read on every segment: */
	__u32 seq_delta;
	__u32 host_isn;		/* the host's own ISN, to tell a retransmitted SYN from a new one */
	__u32 wire_isn;		/* the keyed ISN that went on the wire */
	__u32 flags;		/* enum flow_flag */
	__u32 hash;		/* enum isn_hash the ISN was made with */
	/*
	 * The host's SND.NXT (host space) while the handshake lasts: past a
	 * SYN's data (TCP Fast Open), for the RST checks of RFC 9293 3.10.7.
	 */
	__u32 host_snd_nxt;
	/* Proxied flows (FLOW_F_PROXIED) only, zero otherwise: */
	__u32 ts_delta;		/* TSval the peer saw in the cookie SYN-ACK - the host's TSval */
	__u32 peer_tsval;	/* the peer's TSval in its cookie ACK: the ACK to the host echoes it */
	__u16 peer_window;	/* the window of that ACK, as sent (peer_wscale_wire applies) */
	/*
	 * Window shifts (RFC 7323 2.3) where they differ, so windows are
	 * rewritten: the host's own (its SYN-ACK) and the one the peer was
	 * told (the cookie SYN-ACK); the peer's own, and the one the host
	 * applies to it (the peer's, or 0 when the host declined scaling).
	 */
	__u8 wscale_host;
	__u8 wscale_wire;
	__u8 peer_wscale_wire;
	__u8 peer_wscale_host;
	/* The CPU whose tc ingress made a local-path entry (FLOW_F_COOKIE_LOCAL). */
	__u16 open_cpu;
	/* Written as the connection goes (FLOW_STATE_READ_BYTES on): */
	__u32 host_ack;		/* the host's latest ack (peer's space): a valid peer RST's seq */
	/* The sweeper's slot that stands for this entry (struct sweep_slot; 0: none). */
	__u32 sweep_id;
	__u64 created_ns;
	__u64 last_seen_ns;	/* the sweeper removes the entry once idle past its phase's timeout */
	/*
	 * A closed local-path entry (FLOW_F_COOKIE_LOCAL): ACKs of its tuple
	 * that failed the cookie check and went to the host's stack
	 * (synproxy_invalid_to_stack, SYNPROXY_LATE_ACKS of them).
	 */
	__u32 late_acks;
	__u8 pad[36];		/* zero: the element's last cache line (see above) */
};

/* Where struct flow_state's written part (host_ack on) begins. */
#define FLOW_STATE_READ_BYTES 40

/*
 * The sweeper (bpf/sweeper.h): one timer for all flows, and queues of slots
 * (maps isn_sweep_flows, isn_sweep_opening, isn_sweep_long: rings of
 * struct sweep_slot). A new entry takes a slot due one sweep interval
 * later; the timer looks at the slots that are due, oldest first, at most
 * SWEEP_BATCH per run: an entry idle past its phase's timeout is removed,
 * a live one takes a new slot one interval on, or, an isn_flows entry
 * with long to live (a closed connection waiting out its closed timeout,
 * an idle established one), one long delay on in the long queue (struct
 * flow_sweeper, long_ms). Every slot of a queue has the same delay, so the
 * queue is in due order and an idle table costs one look at its head. One
 * timer instead of one per flow: a new flow costs only its insert and a
 * slot, and nothing is left without expiry when a timer allocation fails
 * under a SYN flood.
 */
struct sweep_slot {
	struct flow_key key;
	__u32 due;		/* CLOCK_MONOTONIC >> SWEEP_DUE_SHIFT (about ms), wrapping */
	__u32 id;		/* the entry's sweep_id; 0 while the slot is written or empty */
};

#define SWEEP_DUE_SHIFT 20
/* At most this many slots per run of the timer: a few hundred us at a few hundred ns each. */
#define ISN_SWEEP_BATCH 512
/* The queues: one per table, every slot an interval on; and isn_flows' long one. */
enum sweep_queue { SWEEP_FLOWS, SWEEP_OPENING, SWEEP_LONG, SWEEP_QUEUES };
/* The per-queue arrays' length: a power of two, so a mask bounds an index for the verifier. */
#define SWEEP_QUEUE_SLOTS 4
/* A slot id (sweep_slot.id, flow_state.sweep_id) of the long queue has this bit; others, not. */
#define SWEEP_ID_LONG 0x80000000U

/* Map isn_sweeper, one entry. head/tail count slots taken and given, per queue. */
struct flow_sweeper {
	struct bpf_timer timer;
	__u32 armed;		/* set once the timer runs */
	__u32 long_ms;		/* the long queue's delay as of the last run (0: not used) */
	__u32 size[SWEEP_QUEUE_SLOTS];	/* slots in each queue (the start program reads the maps') */
	__u64 head[SWEEP_QUEUE_SLOTS];	/* next slot to look at; the timer alone moves it */
	__u64 tail[SWEEP_QUEUE_SLOTS];	/* next slot to give (atomic) */
	__u64 run_ns_max;	/* the longest run, ns */
	__u32 run_slots_max;	/* the most slots one run looked at */
	__u32 interval_ms;	/* isn_config's sweep_interval_ms as of the last run */
	__u32 closed_ms;	/* the closed timeout as of the last run, adapted (isn_closed_timeout_ms) */
	__u32 pad;
};

/*
 * The long queue's delay, for the shortest of the four timeouts (ms, the
 * closed one as adapted; the closed one at the defaults) and a sweep
 * interval (ms): that timeout less
 * half an interval, at most ISN_SWEEP_LONG_MAX_MS. An entry goes there only
 * with at least this less an interval left before its timeout. So a
 * connection that ended at least half an interval before its entry's
 * first look (the look comes an interval after the entry is made, a little
 * late at most) goes there at that look and is removed at the next: two
 * looks where one an interval took timeout / interval + 1 (nine or ten at
 * the defaults); one that ends later is looked at in the long queue while
 * it lasts, and once an interval over the part of its closed timeout its
 * last long slot does not cover. An entry waits there no more than an
 * interval past its timeout, unless its phase changes with no segment from
 * the host (a peer's RST to an idle connection: its next look ends it), or
 * the interval queue is full when it should go back. A timeout shortened
 * shortens the delay, and long slots due further on than it are looked at
 * at once (bpf/sweeper.h). 0 when it would save no look (a delay of no
 * more than an interval).
 */
#define ISN_SWEEP_LONG_MAX_MS (24U * 3600 * 1000)	/* far below the due clock's 2^31 units */

/*
 * The closed timeout adapts to a filling table, as pf's adaptive.start and
 * adaptive.end scale its timeouts: past ISN_ADAPTIVE_START_PCT of
 * --max-flows entries it is scaled by (end - entries) / (end - start),
 * end at ISN_ADAPTIVE_END_PCT, so a third of it at a full table (30 s at
 * the defaults, against Linux's 60 s TIME_WAIT: a host's answer in its
 * last half may then go untranslated). Closed entries alone: a live or
 * closing connection's translation is never cut short. At a steady rate R
 * of new connections a closed entry lives its timeout and up to an
 * interval more, so the table holds about R x that: at the default size,
 * 60% of it at 1,650 new connections a second, and the scaled timeout
 * keeps new connections protected up to some 7,500 a second (30 s + 5),
 * where it was 2,600 (90 s + 10). 0 max_flows (no limit): never scaled.
 */
#define ISN_ADAPTIVE_START_PCT 60
#define ISN_ADAPTIVE_END_PCT 120
static inline __u32 isn_closed_timeout_ms(__u32 closed_s, __s64 entries, __u32 max_flows)
{
	__u64 ms = (__u64)closed_s * 1000;
	__u64 start = (__u64)max_flows * ISN_ADAPTIVE_START_PCT / 100;
	__u64 end = (__u64)max_flows * ISN_ADAPTIVE_END_PCT / 100;

	if (max_flows && entries > (__s64)start)
		ms = entries >= (__s64)end ? 0 : ms * (end - (__u64)entries) / (end - start);
	return ms > 0xffffffffULL ? 0xffffffffU : (__u32)ms;
}
static inline __u32 isn_sweep_long_ms(__u32 shortest_ms, __u32 interval_ms)
{
	__u64 timeout = shortest_ms, delay = timeout - interval_ms / 2;

	if (timeout < interval_ms / 2 || delay <= interval_ms)
		return 0;
	return delay > ISN_SWEEP_LONG_MAX_MS ? ISN_SWEEP_LONG_MAX_MS : (__u32)delay;
}

/*
 * The default sweep interval: each live flow is looked at once per interval,
 * at a few hundred ns (a lookup in a large table), so the interval grows
 * with the table: 10 s up to 256 Ki flows (pf's purge interval), 10 s more
 * per 256 Ki. A flow goes at most one interval after its timeout.
 */
#define ISN_SWEEP_INTERVAL_MS 10000
static inline __u32 isn_sweep_interval_ms(__u32 max_flows)
{
	__u32 per = 262144, n = max_flows / per + (max_flows % per ? 1 : 0);

	return ISN_SWEEP_INTERVAL_MS * (n ? n : 1);
}

/*
 * XDP header prediction's per-CPU scratch (map isn_fastpath, one entry;
 * not pinned, each load has its own): the flow key of the segment at hand,
 * built here rather than on the stack, and how many ACKs prediction has
 * translated on this CPU, the ones the general path did not see.
 */
struct fastpath_scratch {
	struct flow_key key;
	__u64 predicted;
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
	X(STAT_FLOW_TIMER_ERROR,	"flow_timer_error")	/* the sweeper's */ \
	/* SYN cookies (bpf/syn_answer.h): XDP decisions on SYNs */	\
	X(STAT_SYN_SEEN,		"syn_seen")			\
	X(STAT_COOKIE_SENT,		"cookie_sent")			\
	X(STAT_SYN_PASSED_AUTO,		"syn_passed_auto")		\
	X(STAT_SYN_PASSED_SOCKET,	"syn_passed_socket")		\
	X(STAT_SYN_NO_LISTENER,		"syn_no_listener")		\
	X(STAT_SYN_UNANSWERABLE,	"syn_unanswerable")		\
	/* SYN cookies: tc ingress decisions on ACKs to protected ports */ \
	X(STAT_COOKIE_HANDSHAKE,	"cookie_handshake_to_stack")	\
	X(STAT_COOKIE_ACK_SOCKET,	"cookie_ack_socket_exists")	\
	X(STAT_COOKIE_ACK_NO_LISTENER,	"cookie_ack_no_listener")	\
	X(STAT_COOKIE_BAD_MAC,		"cookie_ack_invalid_mac")	\
	/* retired: a cookie no longer says its slot or key (bad MAC) */ \
	X(STAT_COOKIE_EXPIRED,		"cookie_ack_invalid_expired")	\
	X(STAT_COOKIE_UNKNOWN_KEY,	"cookie_ack_invalid_key")	\
	X(STAT_COOKIE_QUEUE_FULL,	"cookie_ack_queue_full")	\
	X(STAT_COOKIE_ASSIGN_ERROR,	"cookie_ack_assign_error")	\
	/* SYN cookies: events */					\
	X(STAT_COOKIE_ACK_VALID,	"cookie_ack_valid")		\
	X(STAT_AUTO_ON,			"synproxy_auto_on")		\
	X(STAT_AUTO_OFF,		"synproxy_auto_off")	\
	/* issue 11, rewriting datapath: IPv6 extension headers */	\
	X(STAT_PASS_IPV6_AH,		"pass_ipv6_ah")			\
	/* a full flow table: new connections unprotected, none evicted */ \
	X(STAT_PASS_TABLE_FULL,		"syn_unprotected_table_full")	\
	X(STAT_FLOW_PROMOTE_FAILED,	"flow_promote_failed")	\
	/* the translating SYN proxy (bpf/proxy.h) */			\
	X(STAT_PROXY_SYN,		"proxy_syn_to_server")		\
	X(STAT_PROXY_SYNACK,		"proxy_server_synack")		\
	X(STAT_PROXY_REFUSED,		"proxy_server_refused")		\
	X(STAT_PROXY_TIMEOUT,		"proxy_server_timeout")		\
	X(STAT_PROXY_OPENING,		"proxy_opening_to_tc")		\
	X(STAT_PROXY_HELD,		"proxy_dropped_while_opening")	\
	X(STAT_PROXY_INJECTED,		"proxy_own_ack_passed")		\
	X(STAT_PROXY_TABLE_FULL,	"proxy_table_full")		\
	X(STAT_PROXY_WINDOW,		"proxy_window_rewritten")	\
	/* SYN cookies: a SYN to a broadcast or multicast destination, not answered */ \
	X(STAT_SYN_NOT_UNICAST,		"syn_not_unicast")		\
	/*								\
	 * An event beside the cookie_ack_invalid_* decision: the invalid	\
	 * cookie ACK went to the host's stack (invalid_ack_rate), not dropped	\
	 */								\
	X(STAT_COOKIE_INVALID_TO_STACK,	"cookie_ack_invalid_to_stack")	\
	/* the translating SYN proxy's own SYN resends (bpf/resend.h) */ \
	X(STAT_PROXY_SYN_RESENT,	"proxy_syn_resent")		\
	X(STAT_PROXY_GAVE_UP,		"proxy_server_gave_up")		\
	X(STAT_PROXY_RESEND_UNTRACKED,	"proxy_resend_untracked")	\
	/*								\
	 * SYN cookies: a SYN whose destination is neither the host's own nor	\
	 * one it proxies for (bpf/route.h), not answered			\
	 */								\
	X(STAT_SYN_NOT_LOCAL,		"syn_not_local")	\
	/* SYN cookies: a SYN with a bad IP or TCP checksum, dropped unanswered */ \
	X(STAT_SYN_BAD_CHECKSUM,	"syn_bad_checksum")	\
	/* the sweeper (bpf/sweeper.h) */					\
	X(STAT_SWEEP_RUNS,		"sweep_runs")			\
	X(STAT_SWEEP_SLOTS,		"sweep_slots")			\
	X(STAT_SWEEP_NS,		"sweep_ns")			\
	X(STAT_SWEEP_QUEUE_FULL,	"sweep_queue_full")		\
	X(STAT_SWEEP_UNQUEUED,		"sweep_handshake_unqueued")	\
	X(STAT_SWEEP_LONG_RUNS,		"sweep_runs_over_1ms")	\
	X(STAT_SWEEP_CUT,		"sweep_runs_cut")		\
	/* SYN cookies: a SYN in a unicast frame to another MAC (promiscuous) */ \
	X(STAT_SYN_OTHER_HOST,		"syn_to_other_host")		\
	/*								\
	 * flows found in the tables when a new sweeper started (state kept	\
	 * from an isnguard with another sweeper), each given a sweep slot	\
	 */								\
	X(STAT_SWEEP_ADOPTED,		"sweep_flows_adopted")		\
	/*								\
	 * passed untouched, XDP: a SYN from the peer (no ACK, RST or FIN),	\
	 * which holds nothing of the host's sequence space; not looked up	\
	 */								\
	X(STAT_PASS_PEER_SYN,		"pass_peer_syn")		\
	/*								\
	 * SYN cookies: a closed connection's tuple taken by a new cookie	\
	 * handshake (its ACK holds a valid cookie): the old entry removed,	\
	 * the ACK left to the SYN proxy untranslated				\
	 */								\
	X(STAT_FLOW_REOPENED,		"flow_reopened_by_cookie")	\
	/*								\
	 * the translating SYN proxy: the server answered, and the client,	\
	 * held by the cookie SYN-ACK's zero window, got the server's window	\
	 */								\
	X(STAT_PROXY_WINDOW_OPENED,	"proxy_client_window_opened")	\
	/*								\
	 * SYN cookies, local path: a segment on another CPU than the cookie	\
	 * ACK that made its connection's entry, before the host has sent on	\
	 * it (the stack may not have the socket yet): judged as a cookie ACK	\
	 * again, not passed to the listener for its RST (flow_before_socket)	\
	 */								\
	X(STAT_COOKIE_ACK_BEFORE_SOCKET, "cookie_ack_before_socket")	\
	/*								\
	 * SYN cookies: a SYN from a source no host may use (multicast,	\
	 * broadcast, 0/8, loopback off lo; RFC 1122 3.2.1.3), or to a	\
	 * destination no packet from the wire may have (0/8, loopback off	\
	 * lo): dropped unanswered, as the stack discards it			\
	 */								\
	X(STAT_SYN_MARTIAN,		"syn_martian")			\
	/*								\
	 * the translating SYN proxy: the server's ACK to the proxy's SYN	\
	 * that does not acknowledge it (a stale socket's challenge ACK),	\
	 * answered with a RST at its ack, as the client's SYN-SENT stack	\
	 * would (RFC 9293 3.10.7.3)						\
	 */								\
	X(STAT_PROXY_CHALLENGE_RST,	"proxy_server_challenge_reset")	\
	/* the resend tick (bpf/resend.h): its runs, slots, time */	\
	X(STAT_RESEND_RUNS,		"resend_runs")			\
	X(STAT_RESEND_SLOTS,		"resend_slots")			\
	X(STAT_RESEND_NS,		"resend_ns")			\
	X(STAT_RESEND_CHAINED,		"resend_runs_chained")		\
	X(STAT_RESEND_LONG_RUNS,	"resend_runs_over_1ms")	\
	/*								\
	 * SYN cookies, the SYN policy (bpf/syn_policy.h): a SYN from a	\
	 * source on the deny list, dropped before any other work; one on	\
	 * the allow list, passed to the host as without the SYN proxy	\
	 */								\
	X(STAT_SYN_PREFIX_DENIED,	"syn_prefix_denied")		\
	X(STAT_SYN_PREFIX_ALLOWED,	"syn_prefix_allowed")		\
	/*								\
	 * a SYN about to be answered whose source prefix has had its	\
	 * SYN-ACKs (--source-rate, --source-burst), or the host all of its	\
	 * own (--total-rate): dropped unanswered				\
	 */								\
	X(STAT_SYN_SOURCE_LIMITED,	"syn_source_limited")		\
	X(STAT_SYN_TOTAL_LIMITED,	"syn_total_limited")		\
	/*								\
	 * monitor mode (--monitor): the SYN passed to the host as with the	\
	 * proxy off; it would have been answered, dropped over a limit, or	\
	 * dropped (deny list, martian, bad checksum)			\
	 */								\
	X(STAT_SYN_MONITOR_ANSWER,	"syn_monitor_would_answer")	\
	X(STAT_SYN_MONITOR_LIMIT,	"syn_monitor_would_limit")	\
	X(STAT_SYN_MONITOR_DROP,	"syn_monitor_would_drop")	\
	/*								\
	 * events: a source prefix got a bucket of isn_syn_buckets; the way	\
	 * it took held a source still spending past its rate, forgotten	\
	 */								\
	X(STAT_SYN_BUCKET_NEW,		"syn_source_bucket_made")	\
	X(STAT_SYN_BUCKET_EVICTED,	"syn_source_bucket_evicted")	\
	/* an event the ring buffer had no room for (bpf/events.h) */	\
	X(STAT_EVENTS_LOST,		"events_lost")

#define ISNGUARD_STAT_ENUM(name, text) name,
enum isn_stat {
	ISNGUARD_STATS(ISNGUARD_STAT_ENUM)
	STAT_COUNT
};
#undef ISNGUARD_STAT_ENUM

/*
 * isn_stats holds every counter once per slot, the counter of stat for
 * slot at slot * STAT_COUNT + stat: a slot for each of the first
 * ISN_STATS_IFACE_SLOTS interfaces attached (set in each load's .rodata,
 * bpf/stats.h's stats_slot; isn_stat_slots says whose), and slot 0 for
 * loads given none (more interfaces, the tests' own). A total is the sum
 * over the slots; a kept map of fewer entries is copied into slot 0 on.
 */
#define ISN_STATS_IFACE_SLOTS 64
#define ISN_STATS_SLOTS (ISN_STATS_IFACE_SLOTS + 1)
#define ISN_STATS_ENTRIES (STAT_COUNT * ISN_STATS_SLOTS)

/*
 * The skb mark of a cookie SYN-ACK answered at tc ingress (`--syn-hook
 * tc`) on its way out through the same device's tc egress, which clears
 * it and lets the segment pass untouched (bpf/cookie_ack.h,
 * synproxy_own_synack). Only ever set between those two programs.
 */
#define ISN_MARK_SYNACK 0x15a6c00cU

/*
 * The skb mark of isnguard's RST to a server's challenge ACK (bpf/proxy.h,
 * proxy_server_challenged), redirected from tc egress into the same
 * device's ingress, where the tc programs clear it and let the segment
 * pass untouched (synproxy_own_rst): it is in the server's space already.
 */
#define ISN_MARK_PROXY_RST 0x15a6c00dU

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

/*
 * isn_local_addrs (bpf/local_addr.h): the addresses of a network namespace,
 * which attach writes from the namespace's address list, so that a SYN to
 * one of them is known local without a route lookup. The value: when the
 * route last confirmed it (CLOCK_MONOTONIC coarse ns; 0: never).
 */
#define ISN_LOCAL_ADDRS_MAX 4096
struct local_addr_key {
	__u64 netns_ino;	/* inode of the network namespace */
	__u8 family;		/* FLOW_FAMILY_IPV4 or _IPV6 */
	__u8 pad[7];
	__u8 addr[16];		/* IPv4 in the first 4 bytes, the rest zero */
};

struct local_addr {
	__u64 checked_ns;
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

/* link_info flags. */
enum link_flags {
	/*
	 * `--syn-hook tc`: SYN cookies are answered at tc ingress, and the
	 * device has no XDP program at all.
	 */
	LINK_F_SYN_TC = 1,
	/* attach made the device's clsact qdisc: detach removes it once no filter is left on it */
	LINK_F_CLSACT_MADE = 2,
};

struct link_info {
	char ifname[16];
	__u32 ingress;		/* enum link_ingress */
	__u32 ingress_prog_id;
	__u32 egress_prog_id;
	__u32 flags;		/* enum link_flags */
	__u64 attached_at;	/* CLOCK_REALTIME seconds */
};

#define ISN_MAX_LINKS 256

/*
 * `make PROFILE=1` (bpf/profile.h, scripts/bench-conn.sh --outcomes): the
 * time of each program run by its outcome, the counter it moved, in the
 * per-CPU array isn_prof (not pinned; `bpftool map dump name isn_prof`)
 * at ISN_PROF_INDEX. Two clock reads a run: a build for measuring only.
 */
enum isn_prof_prog {
	ISN_PROF_XDP,		/* isnguard_xdp's general path */
	ISN_PROF_XDP_FAST,	/* isnguard_xdp's header prediction (bpf/fastpath.h) */
	ISN_PROF_XDP_COOKIE,
	ISN_PROF_TC_INGRESS,
	ISN_PROF_TC_COOKIE,
	ISN_PROF_TC_EGRESS,
	ISN_PROF_PROGS,
};

/* Outcomes of a program: a counter, or ISN_PROF_NO_STAT (tc_cookie's early passes). */
#define ISN_PROF_NO_STAT STAT_COUNT
#define ISN_PROF_SLOTS (STAT_COUNT + 1)
#define ISN_PROF_INDEX(prog, stat) ((prog) * ISN_PROF_SLOTS + (stat))

struct isn_prof {
	__u64 ns;
	__u64 runs;
};

/* Maps, pinned with BTF under ISN_PIN_DIR by these names. */
#define ISN_PIN_DIR "/sys/fs/bpf/isnguard"
#define ISN_MAP_FLOWS "isn_flows"
#define ISN_MAP_OPENING "isn_opening"
#define ISN_MAP_CONFIG "isn_config"
#define ISN_MAP_KEY "isn_key"
#define ISN_MAP_STATS "isn_stats"
#define ISN_MAP_LINKS "isn_links"
#define ISN_MAP_SYNPROXY "isn_synproxy"
#define ISN_MAP_SYNPROXY_PORTS "isn_synproxy_ports"
#define ISN_MAP_SYN_RATE "isn_syn_rate"
#define ISN_MAP_SWEEPER "isn_sweeper"
#define ISN_MAP_SWEEP_FLOWS "isn_sweep_flows"
#define ISN_MAP_SWEEP_OPENING "isn_sweep_opening"
#define ISN_MAP_SWEEP_LONG "isn_sweep_long"
#define ISN_MAP_FLOW_COUNT "isn_flow_count"
#define ISN_MAP_SYN_RESEND "isn_syn_resend"
#define ISN_MAP_RESEND_QUEUES "isn_resend_queues"
#define ISN_MAP_RESEND_SLOTS "isn_resend_slots"
#define ISN_MAP_LOCAL_ADDRS "isn_local_addrs"
#define ISN_MAP_SYN_POLICY "isn_syn_policy"
#define ISN_MAP_SYN_BUCKETS "isn_syn_buckets"
#define ISN_MAP_SYN_TOTAL "isn_syn_total"
#define ISN_MAP_PREFIX4 "isn_prefix4"
#define ISN_MAP_PREFIX6 "isn_prefix6"
#define ISN_MAP_SYNPROXY_MONITOR "isn_synproxy_monitor"
/* the tick program, pinned by attach so apply and synproxy can put the tick back (user/loader.c) */
#define ISN_PIN_TICK_PROG "isnguard_tc_tick"
/* userspace's record of the build attached to each link (user/links.c): SHA-256 of the BPF object */
#define ISN_MAP_BUILDS "isn_builds"
/* userspace's record of the key file applied last (user/key.c): not a program's map */
#define ISN_MAP_KEY_SOURCE "isn_key_source"
/* userspace's record of which interface each slot of isn_stats counts for (user/statslots.c) */
#define ISN_MAP_STAT_SLOTS "isn_stat_slots"
#define ISN_MAP_EVENTS "isn_events"
#define ISN_MAP_EVENTS_LOG "isn_events_log"
#define ISN_MAP_EVENT_STATE "isn_event_state"
#define ISN_MAP_EVENT_DROPS "isn_event_drops"
/* the program that reports a key written (user/key.c runs it): not a map */
#define ISN_PIN_EVENT_KEY_PROG "isnguard_event_key"
#define ISN_MAP_FASTPATH "isn_fastpath"	/* the program's own: not pinned */
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

/*
 * isn_flows is a plain hash, never evicting: it holds max_flows connections
 * plus room for every handshake that may still be promoted (the handshake
 * table's size, and a margin for CPUs racing past the limit check).
 */
#define ISN_FLOWS_MARGIN 256
static inline __u32 isn_flows_capacity(__u32 max_flows)
{
	return max_flows + isn_opening_size(max_flows) + ISN_FLOWS_MARGIN;
}

/*
 * The sweeper's queues (struct sweep_slot): a slot per entry, and room for
 * the slots of entries gone other than by the sweeper (replaced, removed,
 * evicted), which stay until due. isn_flows': its capacity and a handshake
 * table's worth more (24 MiB of both at the default --max-flows); a full
 * one refuses a new connection. isn_opening's: twice that table, and a
 * handshake that finds it full goes without a slot (the LRU bounds it).
 * Both keep ISN_SWEEP_MARGIN slots free for CPUs racing past the check.
 */
#define ISN_SWEEP_MARGIN 256
static inline __u32 isn_sweep_flows_size(__u32 max_flows)
{
	return isn_flows_capacity(max_flows) + isn_opening_size(max_flows) + ISN_SWEEP_MARGIN;
}

static inline __u32 isn_sweep_opening_size(__u32 max_flows)
{
	return 2 * isn_opening_size(max_flows) + ISN_SWEEP_MARGIN;
}

/*
 * The long queue: a slot per isn_flows entry (each entry has one slot, in
 * one queue). Full (slots of entries gone other than by the sweeper wait
 * there until due), an entry takes the interval queue's slot instead.
 */
static inline __u32 isn_sweep_long_size(__u32 max_flows)
{
	return isn_flows_capacity(max_flows);
}

/* ---- SYN cookies (bpf/cookie.h, bpf/synproxy.h and its halves; user/ref/cookie_ref.c) ---- */

enum synproxy_mode {
	SYNPROXY_OFF = 0,
	SYNPROXY_ALWAYS = 1,	/* every SYN to a protected port gets a cookie */
	SYNPROXY_AUTO = 2,	/* only while the port's SYN rate is above syn_threshold */
};

/*
 * Where a valid cookie ACK becomes a connection. Local: a request socket of
 * the host's listener (bpf_sk_assign_tcp_reqsk, Linux 6.9). Translate:
 * isnguard opens the connection to the server itself and translates it
 * (bpf/proxy.h): servers behind a gateway, kernels without the kfunc. Auto:
 * local where the kfunc exists and a local listener owns the port.
 */
enum synproxy_path {
	SYNPROXY_PATH_AUTO = 0,
	SYNPROXY_PATH_LOCAL = 1,
	SYNPROXY_PATH_TRANSLATE = 2,
};

/*
 * A proxied connection whose server has not answered its SYN this long
 * after the cookie ACK: the peer's next segment gets a RST.
 */
#define SYNPROXY_CONNECT_TIMEOUT_NS (10ULL * 1000000000ULL)

/*
 * isnguard resends the SYN to a silent server itself, as the client's stack
 * would have resent its own (Linux: 1 s, then doubling): at 1, 3 and 7 s
 * after the first, and at SYNPROXY_CONNECT_TIMEOUT_NS it gives up, the
 * client gets a RST and the entry goes. The clock is the tick device
 * (ISN_TICK_DEV, bpf/resend.h): these are checked once a second.
 */
#define SYNPROXY_SYN_RESENDS 3
#define SYNPROXY_RESEND_FIRST_NS 1000000000ULL
/* Proxied connections whose server has not answered, tracked for resends at once. */
#define SYNPROXY_RESEND_MAX 16384

/*
 * One proxied connection whose server has not answered (map isn_syn_resend,
 * keyed by its flow_key): what it takes to send its SYN again, or the
 * client its RST, with no packet of the flow at hand.
 */
struct syn_resend {
	__u64 first_ns;		/* the first SYN (bpf_ktime_get_coarse_ns) */
	__u64 netns_ino;	/* the network namespace of ifindex (the loader's, per object) */
	__u32 ifindex;		/* where the cookie ACK came in: the SYN goes in there again */
	__u32 resends;		/* SYNs sent again so far: the step of its queue slot */
	__u32 tcp_len;		/* bytes of tcp */
	__u8 macs[12];		/* the cookie ACK's Ethernet destination and source (zero: L3) */
	__u32 tcp[10];		/* the SYN's TCP header, checksum 0 (bpf/synhdr.h's words) */
	__u32 queue_pos;	/* its slot's position in the queue of step resends */
	__u32 pad;
};

/*
 * The resend queues (bpf/resend.h): a flow waiting for its server holds one
 * slot in the queue of its next step, a resend (steps 0 to
 * SYNPROXY_SYN_RESENDS - 1) or the give-up (step SYNPROXY_SYN_RESENDS).
 * Every slot of a step is due the same time after its flow's first SYN, so
 * each queue is in due order and the tick looks at its heads alone. The
 * queues of a network namespace (the tick's; map isn_resend_queues, keyed
 * by its inode) count positions: head, the next slot to look at; tail, the
 * next to take; written, those taken whose writer is done (a slot taken
 * when the slots are all in use is never written). A slot is
 * isn_resend_slots' entry at (namespace, step, position).
 */
#define SYNPROXY_RESEND_STEPS (SYNPROXY_SYN_RESENDS + 1)
/*
 * A slot per tracked flow, and as many again for those of flows gone
 * before their slot was due (the server refused, or the client's ACK was
 * recorded twice), which stay until due.
 */
#define SYNPROXY_RESEND_SLOTS (2 * SYNPROXY_RESEND_MAX)
/*
 * Slots one run of the tick takes at most (bpf/resend.h). Its SYNs wait in
 * netif_rx's backlog of the CPU (netdev_max_backlog, 1000 by default) with
 * the next run's carrier behind them, so a run's clones never fill it.
 */
#define SYNPROXY_RESEND_BATCH 128
/* Network namespaces with queues at once: each has an attachment. */
#define SYNPROXY_RESEND_NETNS_MAX ISN_MAX_LINKS

struct resend_queues {
	__u32 head[SYNPROXY_RESEND_STEPS];
	__u32 tail[SYNPROXY_RESEND_STEPS];
	__u32 written[SYNPROXY_RESEND_STEPS];
};

struct resend_slot_key {
	__u64 netns_ino;
	__u32 step;
	__u32 pos;
};

struct resend_slot {
	struct flow_key key;
	__u64 due_ns;		/* bpf_ktime_get_coarse_ns's clock */
};

/*
 * The tick device: a bridge with no ports whose IGMP querier the kernel runs
 * every second, each query arriving at the bridge's own ingress, where
 * isnguard_tc_tick takes it as the carrier of due resends. Made by attach,
 * removed with the state.
 */
#define ISN_TICK_DEV "isnguard-tick"

/* What the host's TCP stack would negotiate (its sysctls), so the SYN-ACK offers only that. */
enum synproxy_flag {
	SYNPROXY_F_SACK = 1 << 0,	/* net.ipv4.tcp_sack */
	SYNPROXY_F_TIMESTAMPS = 1 << 1,	/* net.ipv4.tcp_timestamps */
	SYNPROXY_F_WSCALE = 1 << 2,	/* net.ipv4.tcp_window_scaling */
	SYNPROXY_F_ECN = 1 << 3,	/* net.ipv4.tcp_ecn 1 or 2: the host accepts ECN */
	SYNPROXY_F_LOCAL_PATH = 1 << 4,	/* the kernel has bpf_sk_assign_tcp_reqsk (path auto) */
	/*
	 * The proxy has been on since the state was made (set by whoever writes
	 * this config, never cleared): connections it opened may live on, so
	 * tc ingress looks at ACKs even with it off. Until then isnguard_tc_cookie
	 * passes every packet without parsing it.
	 */
	SYNPROXY_F_WAS_ON = 1 << 5,
};

/* The SYN proxy's settings (map isn_synproxy, one entry; ports in isn_synproxy_ports). */
struct synproxy_config {
	__u32 mode;		/* enum synproxy_mode */
	__u32 flags;		/* enum synproxy_flag */
	__u32 syn_threshold;	/* auto: SYNs per second to one port that switch cookies on */
	__u32 rcv_wscale;	/* the scale the host's sockets use (its tcp_rmem rule) */
	__u32 window;		/* window of the SYN-ACK, unscaled, non-zero */
	__u32 path;		/* enum synproxy_path */
	/*
	 * ACKs per second, at most, that fail the cookie check and are handed
	 * to the host's stack anyway, for it to answer as Linux does (a RST
	 * at the ACK's ack: a late segment of a closed connection must learn
	 * it is gone), beyond the SYNPROXY_LATE_ACKS each closed connection's
	 * entry passes. Above the rate they are dropped; 0 drops them all.
	 */
	__u32 invalid_ack_rate;
};

/*
 * The flags to write with next over the config now in the map (cur):
 * SYNPROXY_F_WAS_ON once the proxy has been on, never cleared.
 */
static inline __u32 synproxy_flags_over(const struct synproxy_config *next,
					const struct synproxy_config *cur)
{
	if (next->mode != SYNPROXY_OFF || cur->mode != SYNPROXY_OFF ||
	    (cur->flags & SYNPROXY_F_WAS_ON))
		return next->flags | SYNPROXY_F_WAS_ON;
	return next->flags;
}

#define SYNPROXY_DEFAULT_INVALID_ACK_RATE 10000

/*
 * ACKs that fail the cookie check on the tuple of a connection the host has
 * closed (its local-path entry, until the closed timeout) that go to the
 * host's stack whatever invalid_ack_rate's budget holds: the client's late
 * FIN and a few retransmissions of it, should the stack's RST be lost. The
 * host had that connection, so they are its; more on the same entry count
 * against invalid_ack_rate.
 */
#define SYNPROXY_LATE_ACKS 4
#define SYNPROXY_MAX_INVALID_ACK_RATE 10000000

/*
 * The budget of invalid_ack_rate (map isn_invalid_acks, one entry), a
 * virtual-scheduling token bucket (GCRA): an ACK may pass when the
 * theoretical arrival time is no later than now plus a tenth of a second
 * (the burst), and moves it a 1/rate later. Shared by all CPUs; a race
 * lets a few more through, no more.
 */
struct invalid_ack_budget {
	__u64 tat_ns;
};

/*
 * The SYN policy (bpf/syn_policy.h; map isn_syn_policy, one entry): what a
 * SYN to a protected port meets before it is answered. Prefix lists
 * (LPM tries isn_prefix4, isn_prefix6, their value an enum syn_list): a
 * denied source's SYNs are dropped before any other work, an allowed
 * one's go to the host as without the SYN proxy. Then, for a SYN about to
 * be answered, a token bucket per source prefix (isn_syn_buckets, sets of
 * struct syn_bucket_set by a keyed hash of the struct syn_source) and one
 * for the host (isn_syn_total):
 * one spoofed source draws at most source_rate SYN-ACKs a second past a
 * burst, where it drew one per SYN at any rate towards the victim whose
 * address it forged. Monitor mode (all ports, or those of
 * isn_synproxy_monitor) decides the same, counts, and answers nothing.
 * All zero (a map no attach has written): no limit, no list, no monitor.
 */
enum syn_list {
	SYN_LIST_NONE = 0,
	SYN_LIST_DENY = 1,
	SYN_LIST_ALLOW = 2,
};

enum syn_monitor {
	SYN_MONITOR_OFF = 0,
	SYN_MONITOR_PORTS = 1,	/* the ports of isn_synproxy_monitor */
	SYN_MONITOR_ALL = 2,	/* every protected port */
};

enum syn_policy_flag {
	SYN_POLICY_SET = 1 << 0,	/* written by an attach (else the defaults are due) */
	SYN_POLICY_LIST4 = 1 << 1,	/* isn_prefix4 has entries: look IPv4 sources up */
	SYN_POLICY_LIST6 = 1 << 2,	/* isn_prefix6 has entries */
};

struct syn_policy {
	__u32 source_rate;	/* SYN-ACKs per second per source prefix; 0: no limit */
	__u32 source_burst;	/* SYN-ACKs at once past the rate (at least 1) */
	__u32 total_rate;	/* SYN-ACKs per second in all, a tenth of a second's burst; 0: no cap */
	__u32 flags;		/* enum syn_policy_flag */
	/* Derived from the above by syn_policy_derive, so the datapath divides nothing: */
	__u64 source_step_ns;		/* NSEC_PER_SEC / source_rate */
	__u64 source_tolerance_ns;	/* (source_burst - 1) steps */
	__u64 total_step_ns;
	__u64 total_tolerance_ns;
	__u8 source_prefix4;	/* the bits of an IPv4 source that make its bucket, 1-32 */
	__u8 source_prefix6;	/* of an IPv6 source, 1-128 */
	__u8 monitor;		/* enum syn_monitor */
	__u8 pad[5];
	/* The key of syn_source_hash: random, made with the policy, kept. */
	__u64 source_hash_key[2];
};

/*
 * The defaults. A source prefix's rate stands for everyone behind one
 * address (a carrier-grade NAT, a company's proxy, a load balancer or load
 * generator opening a connection per request) opening connections to this
 * host's protected ports, and bounds what one spoofed flood draws towards
 * the address it forges: 10,000 SYN-ACKs of 74-94 bytes a second, under
 * 8 Mbit/s, where it was the flood's own rate (docs/operations.md, tuning).
 * No host-wide cap: under a flood from many sources it would refuse
 * legitimate clients as often as the flood's SYNs.
 */
#define SYN_SOURCE_RATE_DEFAULT 10000
#define SYN_SOURCE_BURST_DEFAULT 20000
#define SYN_SOURCE_PREFIX4_DEFAULT 32
#define SYN_SOURCE_PREFIX6_DEFAULT 64
#define SYN_RATE_MAX 10000000
/* Prefixes each list of a family holds at most. */
#define ISN_PREFIXES_MAX 65536

static inline void syn_policy_derive(struct syn_policy *p)
{
	__u64 burst = p->source_burst ? p->source_burst : 1;
	__u64 total_burst = p->total_rate / 10 ? p->total_rate / 10 : 1;

	p->source_step_ns = p->source_rate ? 1000000000ULL / p->source_rate : 0;
	p->source_tolerance_ns = (burst - 1) * p->source_step_ns;
	p->total_step_ns = p->total_rate ? 1000000000ULL / p->total_rate : 0;
	p->total_tolerance_ns = (total_burst - 1) * p->total_step_ns;
}

/*
 * A source prefix: IPv4 as ::ffff:a.b.c.d, both with the bits past the
 * prefix cleared; aligned, so its hash reads it as two words.
 */
struct syn_source {
	__u8 addr[16];
} __attribute__((aligned(8)));

/* A token bucket as GCRA's theoretical arrival time, CLOCK_MONOTONIC (coarse) ns. */
struct syn_bucket {
	__u64 tat_ns;
};

/*
 * The source buckets (map isn_syn_buckets, an array of sets): a source
 * prefix's bucket is in the set its hash picks, in the way whose tag is
 * the hash; a set is one cache line. Bounded, and no lock, no allocation
 * per new source, where an LRU hash's insert (a free-list pop, an
 * eviction under a lock) doubled what a SYN from a new source cost: a
 * flood from random addresses brings one with every SYN. A new source
 * takes the way whose bucket is closest to full: a full one (its time
 * passed) holds nothing to forget, and a source forgotten starts again
 * with a full bucket, never a smaller one, so a heavy source stays while
 * any of its set's ways is lighter.
 */
/*
 * The table's size is what a new source costs: a flood from random
 * addresses makes a bucket with every SYN, in a set no cache holds, and
 * the time of that miss grows with the table (bench_synproxy, "a new
 * source each SYN": 1 MiB +118..+159 ns a SYN, 128 KiB +52..+57, 32 KiB
 * +32..+45). What it must hold is the heavy sources at once: at the
 * default 10,000 SYN-ACKs a second, a host answering 6 million SYNs a
 * second has at most 600, spread by a keyed hash over 2048 sets, where a
 * heavy source is evicted only by a fifth heavy one in its set (expected
 * under 0.05 such sets).
 */
#define SYN_BUCKET_WAYS 4
#define ISN_SYN_BUCKET_SETS 2048	/* a power of two: 8192 buckets, 128 KiB */
#define ISN_SYN_BUCKETS (ISN_SYN_BUCKET_SETS * SYN_BUCKET_WAYS)

struct syn_bucket_set {
	__u64 tag[SYN_BUCKET_WAYS];	/* syn_source_hash of the way's source; 0: empty */
	__u64 tat_ns[SYN_BUCKET_WAYS];	/* GCRA's theoretical arrival time, as syn_bucket */
};

/*
 * A source prefix's 64-bit keyed hash, never 0: its set is the top bits
 * (syn_source_set), its tag the whole. Each word of the prefix, keyed with
 * 64 random bits, goes through splitmix64's finaliser, which spreads every
 * input bit over every output bit: a spoofer who cannot see the key
 * cannot aim many sources at one set.
 */
static inline __u64 syn_hash_mix(__u64 h)
{
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

static inline __u64 syn_source_hash(const struct syn_source *src, const __u64 *key)
{
	__u64 lo, hi;

	__builtin_memcpy(&lo, src->addr, 8);
	__builtin_memcpy(&hi, src->addr + 8, 8);
	return syn_hash_mix(syn_hash_mix(lo ^ key[0]) ^ hi ^ key[1]) | 1;
}

static inline __u32 syn_source_set(__u64 hash)
{
	return (__u32)(hash >> 40) & (ISN_SYN_BUCKET_SETS - 1);
}

/* Keys of the prefix lists (BPF_MAP_TYPE_LPM_TRIE: the prefix length in bits first). */
struct prefix4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct prefix6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/*
 * Events (map isn_events, a BPF ring buffer pinned with the state): rare
 * happenings the datapath reports as they happen, read by `isnguard
 * monitor` and the exporter (docs/design.md, "Events"). One layout for
 * all; the fields a type does not use are 0.
 */
enum isn_event_type {
	ISN_EVENT_AUTO_ON = 1,	/* auto mode: cookies on for port (rate > threshold) */
	ISN_EVENT_AUTO_OFF,	/* auto mode: cookies off for port (rate below half) */
	ISN_EVENT_FLOOD_START,	/* port's SYN window rate above the threshold */
	ISN_EVENT_FLOOD_END,	/* ... below half of it again */
	ISN_EVENT_TABLE_FULL,	/* a table refused an entry (reason: enum isn_event_table) */
	ISN_EVENT_KEY_ROTATED,	/* a new key in use (key_gen) */
	ISN_EVENT_DROP,		/* a dropped packet, sampled (reason: enum isn_stat) */
	ISN_EVENT_TYPE_COUNT
};

/* The tables an ISN_EVENT_TABLE_FULL names, and where each refusal is counted. */
enum isn_event_table {
	ISN_TABLE_FLOWS = 1,	/* isn_flows at --max-flows: syn_unprotected_table_full */
	ISN_TABLE_PROXY,	/* the translating proxy's entries: proxy_table_full */
	ISN_TABLE_COUNT
};

struct isn_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 netns_ino;	/* the network namespace of the load that saw it */
	__u32 type;		/* enum isn_event_type */
	__u32 ifindex;		/* DROP: the packet's device; else the load's (0: none) */
	__u32 reason;		/* DROP: enum isn_stat; TABLE_FULL: enum isn_event_table */
	__u32 rate;		/* AUTO_*, FLOOD_*: SYNs a second in the window that decided */
	__u32 threshold;	/* AUTO_*, FLOOD_*: the SYN proxy's threshold; TABLE_FULL: the limit */
	__u32 key_gen;		/* KEY_ROTATED: the generation now in use */
	__u8 saddr[16];		/* DROP: source address (IPv4: the first 4 bytes) */
	__u8 daddr[16];		/* DROP: destination address */
	__be16 sport;		/* DROP: source port */
	__be16 dport;		/* DROP: destination port; AUTO_*, FLOOD_*: the port */
	__u8 family;		/* DROP: enum flow_family, 0 when not parsed */
	__u8 proto;		/* DROP: IP protocol */
	__u8 pad[10];
};

#define ISN_EVENTS_BYTES (256 * 1024)	/* isn_events' size: a page multiple */
/* Sampled drops: at most this many events a second on each CPU (bpf/events.h). */
#define ISN_EVENT_DROPS_PER_SEC 10
/* A table's refusals: one event a second at most (a full table refuses every new entry). */
#define ISN_EVENT_TABLE_FULL_GAP_NS 1000000000ULL

/*
 * Each reader has a ring of its own (a ring buffer has one consumer
 * position): isn_events is `isnguard monitor`'s, isn_events_log the
 * exporter's. The datapath writes an event into each ring whose reader is
 * there (reader_pid set), so both see every event and an idle ring counts
 * no losses.
 */
enum isn_event_reader {
	ISN_EVENT_READER_MONITOR,
	ISN_EVENT_READER_EXPORTER,
	ISN_EVENT_READERS
};

/*
 * The datapath's record for events (map isn_event_state, one entry,
 * mmapable): userspace writes only reader_pid, a word at a time.
 */
struct isn_event_state {
	__u64 table_full_ns[ISN_TABLE_COUNT];	/* the latest TABLE_FULL event of each */
	__u32 reader_pid[ISN_EVENT_READERS];	/* the reader of each ring, 0: none */
	__u32 key_gen;		/* the generation the latest KEY_ROTATED said */
	__u32 pad;
};

/* Sampled drops' budget on one CPU (map isn_event_drops, per CPU). */
struct isn_event_drops {
	__u64 window_start_ns;	/* the current second's start */
	__u32 sent;		/* drop events sent in it */
	__u32 pad;
};

/* Protected ports: a bitmap of 65536 bits in 64-bit words, indexed by port (host order). */
#define SYNPROXY_PORT_WORDS 1024

/* Per-port SYN rate for auto mode (map isn_syn_rate, indexed by port). */
struct syn_rate {
	__u64 window_start_ns;	/* start of the current window (at least a second) */
	__u64 last_syn_ns;	/* the latest SYN: a quiet second means the rate is 0 */
	__u32 syns;		/* SYNs in the current window */
	__u32 active;		/* 1 while cookies answer this port */
};

/*
 * Cookie = the ISN of the SYN-ACK (RFC 4987 section 3.6, with the options
 * kept as FreeBSD's syncookies do). h = SipHash-2-4(key, T || client ISN
 * (BE32) || slot (LE32) || options word (LE32)), T the RFC 6528 tuple of the
 * host (local first), slot = CLOCK_MONOTONIC >> COOKIE_SLOT_SHIFT, key the
 * slot's (below).
 *
 *   no timestamps: | h >> 32, bits 31-1 | opts1 |
 *                  opts1 (COOKIE_NOTS_FULL): the client offered an MSS of
 *                  at least the family's COOKIE_NOTS_MSS*_1, SACK and window
 *                  scale 8 (Windows' default), and the SYN-ACK offers them;
 *                  else the family's minimum MSS and nothing else.
 *                  Options word = opts1.
 *   timestamps:    | h >> 32 |
 *                  the SYN-ACK's TSval = (low 32 bits of h, bits 31-9) | opts9,
 *                  opts9 = MSS index (3 bits, COOKIE_MSS*), window scale + 1
 *                  (4 bits, 0 none), SACK (bit 7), ECN (bit 8); the ACK's
 *                  TSecr must echo it; options word = opts9 | COOKIE_TS_INPUT.
 *
 * Neither the slot nor the key is in the cookie: the check tries the two
 * slots a cookie lives in (now's and the one before), each with its own key,
 * and every bit an attacker reads from a SYN-ACK of his own is an option
 * bit, which he may set as he likes anyway: an ACK he chooses for another
 * tuple passes a check with probability 2 x 2^-31 = 2^-30 without
 * timestamps, 2 x 2^-55 = 2^-54 with them; a pure ACK on the translate
 * path, checked twice (as the ACK, then as a zero-window probe), 2^-29 and
 * 2^-53 (docs/security.md, forged ACKs). Every option is in the
 * MAC input, so none can be changed; the options a cookie can carry without
 * timestamps are one bit's worth on purpose: each value is one more ACK an
 * attacker may guess.
 *
 * The key of a slot: isn_key[key_gen & 1] for the slots after the one
 * key_rotated_ns falls in, the previous generation's for that slot and the
 * ones before (the same key throughout before any rotation). A rotation
 * takes effect for cookies at the next slot, so a slot's cookies all have
 * one key and the check never tries two.
 */
#define COOKIE_NOTS_FULL 1u		/* opts1: MSS class 1, SACK, window scale 8 */
#define COOKIE_NOTS_MASK 1u
#define COOKIE_NOTS_WSCALE 8		/* the one shift a client without timestamps keeps */
/* opts9, in TSval */
#define COOKIE_MSS_BITS 3
#define COOKIE_MSS_MASK ((1u << COOKIE_MSS_BITS) - 1)
#define COOKIE_WSCALE_SHIFT 3
#define COOKIE_WSCALE_MASK 0xfu
#define COOKIE_SACK (1u << 7)
#define COOKIE_ECN (1u << 8)
#define COOKIE_OPT_MASK 0x1ffu
#define COOKIE_TS_INPUT (1u << 9)	/* in the MAC input only */
/* A slot is 2^36 ns (68.7 s); the current and previous slot are accepted. */
#define COOKIE_SLOT_SHIFT 36
/* The slots a cookie is accepted in: its own and the next one. */
#define COOKIE_SLOTS_ACCEPTED 2
/* A cookie's longest life; the previous key's cookies are accepted at most this long after a rotation. */
#define COOKIE_LIFETIME_NS ((__u64)COOKIE_SLOTS_ACCEPTED << COOKIE_SLOT_SHIFT)
#define COOKIE_TCP_WSCALE_MAX 14
#define COOKIE_MSS_ENTRIES 8
/*
 * MSS classes without timestamps: the family's minimum (class 0), and the
 * one that goes with SACK and window scale 8 (class 1): a tunnel's for
 * IPv4 (so PPPoE and VPN clients keep their options too), the minimum for
 * IPv6, which every IPv6 path carries.
 */
#define COOKIE_NOTS_MSS_ENTRIES 2
#define COOKIE_NOTS_MSS_MASK 1u
#define COOKIE_NOTS_MSS4_0 536
#define COOKIE_NOTS_MSS4_1 1300
#define COOKIE_NOTS_MSS6_0 1220
#define COOKIE_NOTS_MSS6_1 1220
#define COOKIE_NOTS_MSS4_TABLE { COOKIE_NOTS_MSS4_0, COOKIE_NOTS_MSS4_1 }
#define COOKIE_NOTS_MSS6_TABLE { COOKIE_NOTS_MSS6_0, COOKIE_NOTS_MSS6_1 }

/*
 * MSS values a cookie can carry, ascending; the client's is rounded down to
 * one of them (536 and 1220 are the IPv4 and IPv6 minimums, 1460 and 1440
 * Ethernet, the others common tunnel and PPPoE paths, 8960 and 8940 jumbo).
 */
#define COOKIE_MSS4_0 536
#define COOKIE_MSS4_1 1200
#define COOKIE_MSS4_2 1300
#define COOKIE_MSS4_3 1380
#define COOKIE_MSS4_4 1420
#define COOKIE_MSS4_5 1440
#define COOKIE_MSS4_6 1460
#define COOKIE_MSS4_7 8960
#define COOKIE_MSS6_0 1220
#define COOKIE_MSS6_1 1280
#define COOKIE_MSS6_2 1340
#define COOKIE_MSS6_3 1380
#define COOKIE_MSS6_4 1400
#define COOKIE_MSS6_5 1420
#define COOKIE_MSS6_6 1440
#define COOKIE_MSS6_7 8940
#define COOKIE_MSS4_TABLE { COOKIE_MSS4_0, COOKIE_MSS4_1, COOKIE_MSS4_2, COOKIE_MSS4_3, \
			    COOKIE_MSS4_4, COOKIE_MSS4_5, COOKIE_MSS4_6, COOKIE_MSS4_7 }
#define COOKIE_MSS6_TABLE { COOKIE_MSS6_0, COOKIE_MSS6_1, COOKIE_MSS6_2, COOKIE_MSS6_3, \
			    COOKIE_MSS6_4, COOKIE_MSS6_5, COOKIE_MSS6_6, COOKIE_MSS6_7 }

/*
 * What a cookie check says; bpf/cookie.h and the reference return these.
 * A cookie of an older slot or of a key no longer used is no cookie of
 * either slot tried: it is refused as a bad MAC (the cookie says nothing
 * of its slot or key, so nothing tells it from a forged one).
 */
enum cookie_verdict {
	COOKIE_OK = 0,
	COOKIE_BAD_MAC = 1,
};

/* T || ISN || slot || options, for IPv4 and IPv6. */
#define COOKIE_INPUT4_LEN (ISN_TUPLE4_LEN + 12)
#define COOKIE_INPUT6_LEN (ISN_TUPLE6_LEN + 12)

#endif /* ISNGUARD_H */
