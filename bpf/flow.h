/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The flow tables, shared by egress and ingress and keyed by the connection
 * as the protected host sees it: isn_opening holds handshakes, isn_flows the
 * connections the peer has acknowledged (include/isnguard.h says why they
 * are apart). A flow moves from one to the other once. Every entry holds a
 * slot in its table's sweep queue (bpf/sweep_queue.h), and one timer, the
 * sweeper (bpf/sweeper.h), removes each entry idle longer than its phase
 * allows, so closed flows never pile up waiting for LRU pressure. An
 * LRU eviction of a live entry cannot be seen here; userspace derives it
 * from the counters (flow_created - flow_expired - entries present).
 */
#ifndef ISNGUARD_BPF_FLOW_H
#define ISNGUARD_BPF_FLOW_H

#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "config.h"
#include "isnguard.h"
#include "stats.h"
#include "sweep_queue.h"

/* last_seen is rewritten at most this often, to keep the entry's cache line quiet. */
#define FLOW_TOUCH_NS (NSEC_PER_SEC / 4)
/* How long a promoted handshake entry outlives its move (see flow_promote). */
#define FLOW_MOVED_LINGER_NS NSEC_PER_SEC

/*
 * Connections: a plain hash that never evicts, so table pressure cannot
 * break a live connection. Sized by the loader (isn_flows_capacity); the
 * count of entries (isn_flow_count) keeps new connections out at max_flows.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ISN_DEFAULT_MAX_FLOWS);	/* set by the loader (--max-flows) */
	__type(key, struct flow_key);
	__type(value, struct flow_state);
} isn_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} isn_flow_count SEC(".maps");

/* Adds n to the count of isn_flows entries. */
static __always_inline void flow_count_add(__s64 n)
{
	__u32 zero = 0;
	__s64 *count = bpf_map_lookup_elem(&isn_flow_count, &zero);

	if (count)
		__sync_fetch_and_add(count, n);
}

/* Whether a new connection would go past --max-flows: it then goes unprotected. */
static __always_inline bool flow_table_full(void)
{
	struct isn_config *cfg = config_get();
	__u32 zero = 0;
	__s64 *count = bpf_map_lookup_elem(&isn_flow_count, &zero);

	return cfg && cfg->max_flows && count && *count >= (__s64)cfg->max_flows;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ISN_OPENING_MIN * 64);	/* set by the loader from --max-flows */
	__type(key, struct flow_key);
	__type(value, struct flow_state);
} isn_opening SEC(".maps");

/*
 * A new entry is written here, per CPU, then copied in by
 * bpf_map_update_elem: on the stack, its 104 bytes (64 already did) would
 * put the SYN paths' frames (egress_syn_skb, proxy_open) past the verifier
 * budget's 448 of 512 bytes (make check-verifier). XDP and tc run with
 * bottom halves off: one packet on a CPU uses it at a time.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_state);
} isn_flow_new SEC(".maps");

/* This CPU's new entry, zeroed; NULL cannot happen (index 0 of one), but is checked. */
static __always_inline struct flow_state *flow_new_get(void)
{
	__u32 zero = 0;
	struct flow_state *st = bpf_map_lookup_elem(&isn_flow_new, &zero);

	if (st)
		__builtin_memset(st, 0, sizeof(*st));
	return st;
}

/* A flow's entry, established ones first; *opening tells which table it is in. */
#define FLOW_MAP(opening) ((opening) ? (void *)&isn_opening : (void *)&isn_flows)

static __always_inline struct flow_state *flow_lookup(const struct flow_key *fk, bool *opening)
{
	struct flow_state *st = bpf_map_lookup_elem(&isn_flows, fk);

	*opening = false;
	if (st)
		return st;
	st = bpf_map_lookup_elem(&isn_opening, fk);
	*opening = st != NULL;
	return st;
}

/*
 * Whether the entry still owns the tuple's segments. Not once the host has
 * closed a connection the SYN proxy's local path made (FLOW_F_COOKIE_LOCAL):
 * a new cookie handshake may take the tuple, and its ACK must be judged as
 * one. Its delta is 0, so passing the old connection's late segments
 * unchanged loses nothing.
 */
static __always_inline bool flow_owns_segments(const struct flow_state *st)
{
	return !(st->flags & FLOW_F_COOKIE_LOCAL) || !(st->flags & FLOW_F_HOST_DONE);
}

/*
 * tc ingress, an ACK to a protected port (what the SYN proxy judges) on a
 * local-path connection's entry: whether it must be judged as a cookie ACK
 * again, because it may reach TCP before the connection's socket exists.
 * That is before the host has sent on the connection (FLOW_F_HOST_SOCKET),
 * on another CPU than the one whose tc ingress took the cookie ACK. Without
 * XDP's single receive queue (`--syn-hook tc`, generic XDP) a veth queues a
 * client's ACK and its first request on the CPUs that sent them, and the
 * request may get to TCP first: it would find only the listener, which
 * resets an ACK it has no request socket for, and the client reads
 * ECONNRESET. Judged, it finds the socket if there is one by then
 * (cookie_ack_socket_exists), or becomes the connection itself (its cookie
 * is the ACK's; should the ACK still win, the stack drops the second as it
 * drops a duplicate ACK of its own cookies, and the client sends it again).
 * On the ACK's CPU, the ACK went through TCP first, or is ahead in the same
 * receive batch, whose segments all pass tc before TCP sees the first.
 * Other segments (a RST) are the connection's as before: delta 0, noted.
 */
static __always_inline bool flow_before_socket(const struct flow_state *st)
{
	return (st->flags & (FLOW_F_COOKIE_LOCAL | FLOW_F_HOST_SOCKET | FLOW_F_HOST_DONE)) ==
		       FLOW_F_COOKIE_LOCAL &&
	       st->open_cpu != (__u16)bpf_get_smp_processor_id();
}

/*
 * The key of a connection; local is the protected host. Addresses are 4 or
 * 16 bytes, an IP header's words (tcp_addrs).
 */
static __always_inline void flow_key_fill(struct flow_key *fk, __u8 family,
					  const __be32 *local_addr, const __be32 *remote_addr,
					  __be16 local_port, __be16 remote_port)
{
	__builtin_memset(fk, 0, sizeof(*fk));
	fk->family = family;
	if (family == FLOW_FAMILY_IPV4) {
		__builtin_memcpy(fk->local_addr, local_addr, 4);
		__builtin_memcpy(fk->remote_addr, remote_addr, 4);
	} else {
		__builtin_memcpy(fk->local_addr, local_addr, 16);
		__builtin_memcpy(fk->remote_addr, remote_addr, 16);
	}
	fk->local_port = local_port;
	fk->remote_port = remote_port;
}

static __always_inline __u64 timeout_or_default(__u32 seconds, __u32 fallback)
{
	return (__u64)(seconds ? seconds : fallback) * NSEC_PER_SEC;
}

/*
 * How long a flow may stay idle in its phase (isn_config, or the defaults
 * if unset); a closed one, closed_ns (the closed timeout as the table's
 * fill adapts it: the sweeper's, bpf/sweeper.h).
 */
static __always_inline __u64 flow_timeout_ns(__u32 flags, __u64 closed_ns)
{
	struct isn_config *cfg = config_get();
	__u32 opening = 0, established = 0, closing = 0;

	if (flags & FLOW_F_MOVED)
		return FLOW_MOVED_LINGER_NS;
	if (cfg) {
		opening = cfg->timeout_opening;
		established = cfg->timeout_established;
		closing = cfg->timeout_closing;
	}
	switch (flow_phase_of(flags)) {
	case FLOW_PHASE_ESTABLISHED:
		/* Proxied, and nothing carried yet: held no longer than a handshake. */
		if (flags & FLOW_F_PROXY_SILENT)
			return timeout_or_default(opening, ISN_DEFAULT_TIMEOUT_OPENING);
		return timeout_or_default(established, ISN_DEFAULT_TIMEOUT_ESTABLISHED);
	case FLOW_PHASE_CLOSING:
		return timeout_or_default(closing, ISN_DEFAULT_TIMEOUT_CLOSING);
	case FLOW_PHASE_CLOSED:
		return closed_ns;
	default:
		return timeout_or_default(opening, ISN_DEFAULT_TIMEOUT_OPENING);
	}
}

/*
 * Records what a segment showed. Each bit is set once, atomically, so the
 * egress and ingress programs on different CPUs cannot undo each other. The
 * phase the bits give is what the sweeper measures the idle time against.
 */
static __always_inline void flow_note_flags(struct flow_state *st, __u32 new_flags)
{
	if ((st->flags & new_flags) != new_flags)
		__sync_fetch_and_or(&st->flags, new_flags);
}

/* The same, and last_seen moved to now (at most every FLOW_TOUCH_NS). */
static __always_inline void flow_note(struct flow_state *st, __u32 new_flags, __u64 now)
{
	/* Signed: the coarse clock may lag the precise one the entry was created with. */
	if ((__s64)(now - st->last_seen_ns) > (__s64)FLOW_TOUCH_NS)
		st->last_seen_ns = now;
	flow_note_flags(st, new_flags);
}

/*
 * Removes the tuple's entries from both tables (a promoted flow's moved
 * entry lingers in isn_opening and would match next), counted once.
 */
static __always_inline void flow_forget(const struct flow_key *fk)
{
	bool removed = bpf_map_delete_elem(&isn_flows, fk) == 0;

	if (removed)
		flow_count_add(-1);
	removed |= bpf_map_delete_elem(&isn_opening, fk) == 0;
	if (removed)
		stat_inc(STAT_FLOW_REMOVED);
}

/*
 * The handshake is done: the flow leaves the handshake table for the flow
 * table, with a slot of that table's sweep queue. The old entry is not
 * deleted: LRU elements are reused at once, and another CPU may still hold
 * a pointer to it. Marked moved, it expires a second on and goes when its
 * slot is next due; lookups find the new entry first. On failure the flow stays where it is, established, and lives on as before.
 * A global function, once a connection, off the programs' deepest call
 * chains; the new entry is written in isn_flow_new.
 */
__noinline int flow_promote(const struct flow_key *fk_arg, struct flow_state *st, __u32 seen,
			    __u64 now)
{
	struct flow_key key, *fk = &key;
	struct flow_state *moved;
	__u32 sweep_id;

	if (!fk_arg || !st)
		return -1;
	key = *fk_arg;	/* kernel 6.1 takes a map key only from the stack, a packet or a map */
	/* A full sweep queue, like a failed insert, leaves the flow here. */
	sweep_id = sweep_queue(SWEEP_FLOWS, fk, now);
	if (!sweep_id)
		goto stay;
	moved = flow_new_get();
	if (!moved)
		return -1;
	moved->sweep_id = sweep_id;
	moved->seq_delta = st->seq_delta;
	moved->host_isn = st->host_isn;
	moved->wire_isn = st->wire_isn;
	moved->flags = (st->flags | seen) & ~FLOW_F_MOVED;
	moved->hash = st->hash;
	moved->host_ack = st->host_ack;
	moved->host_snd_nxt = st->host_snd_nxt;
	moved->created_ns = st->created_ns;
	moved->last_seen_ns = now;
	if (bpf_map_update_elem(&isn_flows, fk, moved, BPF_NOEXIST))
		goto stay;
	flow_count_add(1);
	st->last_seen_ns = now;
	__sync_fetch_and_or(&st->flags, FLOW_F_MOVED);
	stat_inc(STAT_FLOW_PROMOTED);
	return 0;
stay:
	stat_inc(STAT_FLOW_PROMOTE_FAILED);	/* stays here, established */
	flow_note(st, seen, now);
	return -1;
}

#endif /* ISNGUARD_BPF_FLOW_H */
