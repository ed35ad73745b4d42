/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sweeper's queues (include/isnguard.h, struct sweep_slot): one per
 * flow table, whose slots are due an interval on, and isn_flows' long one
 * (only the sweeper gives its slots), and how an entry gets its slot.
 * bpf/sweeper.h runs them. A slot is taken by an atomic add to the
 * queue's tail, written, and its id set last with an atomic exchange: the
 * timer stops at a slot whose id is still 0 and takes it on its next run.
 * An id tells its queue too (SWEEP_ID_LONG), so an entry's slot in one
 * queue is never taken for its slot in the other.
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

/* Sized by the loader (isn_sweep_flows_size, isn_sweep_opening_size, isn_sweep_long_size). */
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ISN_DEFAULT_MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct sweep_slot);
} isn_sweep_long SEC(".maps");

/*
 * The SYN paths' frames are near the verifier budget's 448 of 512 bytes
 * (make check-verifier), so taking a slot uses no stack of its own: map
 * keys come from .rodata and, for the slot's index, a per-CPU scratch word
 * (XDP and tc run with bottom halves off: one packet on a CPU at a time).
 */
const volatile __u32 sweep_zero = 0;
const volatile __u32 sweep_stat_full = STAT_SWEEP_QUEUE_FULL;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} isn_sweep_index SEC(".maps");

static __always_inline struct flow_sweeper *sweeper_get(void)
{
	return bpf_map_lookup_elem(&isn_sweeper, (const void *)&sweep_zero);
}

/*
 * Gives the next slot of queue t to the entry keyed fk, due at due (the
 * clock >> SWEEP_DUE_SHIFT), the slot's index going through *idx: its id,
 * or 0 when the queue is full or not set up (the sweeper not started). The
 * caller stores the id in the entry. New entries leave margin slots free;
 * the sweeper's own, none.
 */
static __always_inline __u32 sweep_slot_take(struct flow_sweeper *sw, __u32 t,
					     const struct flow_key *fk, __u32 due, __u32 margin,
					     __u32 *idx)
{
	struct sweep_slot *slot;
	__u32 size, id;
	__u64 pos, *full;

	t &= SWEEP_QUEUE_SLOTS - 1;	/* the verifier sees the index bounded */
	size = sw->size[t];
	if (!size || sw->tail[t] - sw->head[t] + margin >= size) {
		full = bpf_map_lookup_elem(&isn_stats, (const void *)&sweep_stat_full);
		if (full)
			*full += 1;
		return 0;
	}
	pos = __sync_fetch_and_add(&sw->tail[t], 1);
	*idx = (__u32)(pos % size);
	if (t == SWEEP_FLOWS)
		slot = bpf_map_lookup_elem(&isn_sweep_flows, idx);
	else if (t == SWEEP_OPENING)
		slot = bpf_map_lookup_elem(&isn_sweep_opening, idx);
	else
		slot = bpf_map_lookup_elem(&isn_sweep_long, idx);
	if (!slot)	/* cannot happen: idx < size, the map's size */
		return 0;
	__builtin_memcpy(&slot->key, fk, sizeof(slot->key));
	slot->due = due;
	id = ((__u32)pos + 1) & ~SWEEP_ID_LONG;
	if (!id)
		id = 1;		/* 0 means unwritten */
	if (t == SWEEP_LONG)
		id |= SWEEP_ID_LONG;
	/* Published last, fully ordered: the timer reads the key only once it sees the id. */
	__sync_lock_test_and_set(&slot->id, id);
	return id;
}

/*
 * Whether the sweeper may move an entry into queue t: a slot free there,
 * and for a queue the datapath takes slots of too, its margin left free
 * for the CPUs racing past their check (sweep_slot_take), which a move,
 * unlike a slot given back where one was just freed, would eat into.
 */
static __always_inline bool sweep_queue_room(const struct flow_sweeper *sw, __u32 t)
{
	__u32 margin = t == SWEEP_LONG ? 0 : ISN_SWEEP_MARGIN;

	t &= SWEEP_QUEUE_SLOTS - 1;
	return sw->size[t] && sw->tail[t] - sw->head[t] + margin < sw->size[t];
}

/*
 * When a slot taken now is due: one sweep interval on (the interval the
 * timer read from isn_config on its last run), in SWEEP_DUE_SHIFT units.
 */
static __always_inline __u32 sweep_due(const struct flow_sweeper *sw, __u64 now)
{
	return (__u32)((now + (__u64)sw->interval_ms * 1000000ULL) >> SWEEP_DUE_SHIFT);
}

/*
 * The first slot of a new entry of table t (SWEEP_FLOWS, SWEEP_OPENING),
 * keyed fk, one sweep interval from now (the interval the timer read from
 * isn_config on its last run): the id for the entry's sweep_id, taken
 * before the entry is written (a slot whose entry never comes is dropped
 * when due). 0 when the queue is full: an isn_flows entry must then not be
 * made (nothing would expire it); a handshake may, the LRU bounds it
 * (sweep_handshake_unqueued).
 */
static __always_inline __u32 sweep_queue(__u32 t, const struct flow_key *fk, __u64 now)
{
	struct flow_sweeper *sw = sweeper_get();
	__u32 *idx = bpf_map_lookup_elem(&isn_sweep_index, (const void *)&sweep_zero);

	if (!sw || !idx)
		return 0;
	return sweep_slot_take(sw, t, fk, sweep_due(sw, now), ISN_SWEEP_MARGIN, idx);
}

#endif /* ISNGUARD_BPF_SWEEP_QUEUE_H */
