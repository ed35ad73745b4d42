/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sweeper's queues (include/isnguard.h, struct sweep_slot), one per
 * flow table, and how an entry gets its slot. bpf/sweeper.h runs them. A
 * slot is taken by an atomic add to the queue's tail, written, and its id
 * set last with an atomic exchange: the timer stops at a slot whose id is
 * still 0 and takes it on its next run.
 */
#ifndef ISNGUARD_BPF_SWEEP_QUEUE_H
#define ISNGUARD_BPF_SWEEP_QUEUE_H

#include <bpf/bpf_helpers.h>
#include "config.h"
#include "isnguard.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_sweeper);
} isn_sweeper SEC(".maps");

/* Sized by the loader (isn_sweep_flows_size, isn_sweep_opening_size). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ISN_DEFAULT_MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct sweep_slot);
} isn_sweep_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ISN_OPENING_MIN * 128);
	__type(key, __u32);
	__type(value, struct sweep_slot);
} isn_sweep_opening SEC(".maps");

static __always_inline struct flow_sweeper *sweeper_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&isn_sweeper, &zero);
}

static __always_inline __u64 sweep_interval_ns(void)
{
	struct isn_config *cfg = config_get();
	__u32 ms = cfg && cfg->sweep_interval_ms ? cfg->sweep_interval_ms : ISN_SWEEP_INTERVAL_MS;

	return (__u64)ms * 1000000ULL;
}

/*
 * Gives the next slot of queue t to the entry keyed fk, due at due (the
 * clock >> SWEEP_DUE_SHIFT): its id, or 0 when the queue is full or not
 * set up (the sweeper not started). The caller stores the id in the entry.
 * New entries leave margin slots free; the sweeper's own, none.
 */
static __always_inline __u32 sweep_slot_take(struct flow_sweeper *sw, __u32 t,
					     const struct flow_key *fk, __u32 due, __u32 margin)
{
	struct sweep_slot *slot;
	__u32 size, idx, id;
	__u64 pos;

	t &= SWEEP_TABLES - 1;	/* two tables: the verifier sees the index bounded */
	size = sw->size[t];
	if (!size || sw->tail[t] - sw->head[t] + margin >= size) {
		stat_inc(STAT_SWEEP_QUEUE_FULL);
		return 0;
	}
	pos = __sync_fetch_and_add(&sw->tail[t], 1);
	idx = (__u32)(pos % size);
	slot = t == SWEEP_FLOWS ? bpf_map_lookup_elem(&isn_sweep_flows, &idx)
				: bpf_map_lookup_elem(&isn_sweep_opening, &idx);
	if (!slot)	/* cannot happen: idx < size, the map's size */
		return 0;
	__builtin_memcpy(&slot->key, fk, sizeof(slot->key));
	slot->due = due;
	id = (__u32)pos + 1;
	if (!id)
		id = 1;		/* 0 means unwritten */
	/* Published last, fully ordered: the timer reads the key only once it sees the id. */
	__sync_lock_test_and_set(&slot->id, id);
	return id;
}

/*
 * A new entry st of table t (SWEEP_FLOWS, SWEEP_OPENING), keyed fk, takes
 * its first slot, one sweep interval from now. False when the queue is
 * full: an isn_flows entry must then not be made (nothing would expire it);
 * a handshake may, the LRU bounds it (sweep_handshake_unqueued).
 */
static __always_inline bool sweep_queue(__u32 t, const struct flow_key *fk,
					struct flow_state *st, __u64 now)
{
	struct flow_sweeper *sw = sweeper_get();

	st->sweep_id = 0;
	if (!sw)
		return false;
	st->sweep_id = sweep_slot_take(sw, t, fk,
				       (__u32)((now + sweep_interval_ns()) >> SWEEP_DUE_SHIFT),
				       ISN_SWEEP_MARGIN);
	return st->sweep_id != 0;
}

#endif /* ISNGUARD_BPF_SWEEP_QUEUE_H */
