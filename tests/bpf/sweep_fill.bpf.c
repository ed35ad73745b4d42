// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Many flows at once for the sweeper's tests and bench (tests/test_sweeper.c,
 * tests/bench_sweeper.c), made as the datapath makes them: an isn_flows
 * entry with a slot of its queue (sweep_queue), counted in isn_flow_count.
 * One run makes fill.count of them from tuple fill.first on (tests/sweep_fill.h),
 * idle since fill.age_ns ago; FILL_SLOTS takes the slots alone, FILL_UNQUEUED
 * makes the entries alone (kept by an older sweeper). Loaded
 * beside the datapath with its maps shared.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "compiler.h"
#include "flow.h"
#include "../sweep_fill.h"

struct fill_args fill;

/*
 * FILL_SLOTS: a slot alone, of queue fill.queue, due fill.due_ms on (0: the
 * queue's delay); the long queue's as the sweeper takes them, no margin.
 */
static __always_inline __u32 fill_slot(const struct flow_key *fk, __u64 now)
{
	struct flow_sweeper *sw = sweeper_get();
	__u32 *idx = bpf_map_lookup_elem(&isn_sweep_index, (const void *)&sweep_zero);
	__u64 delay_ms;

	if (!sw || !idx)
		return 0;
	delay_ms = fill.due_ms ? fill.due_ms : fill.queue == SWEEP_LONG ? sw->long_ms : sw->interval_ms;
	return sweep_slot_take(sw, fill.queue, fk,
			       (__u32)((now + delay_ms * 1000000ULL) >> SWEEP_DUE_SHIFT),
			       fill.queue == SWEEP_LONG ? 0 : ISN_SWEEP_MARGIN, idx);
}

static long fill_one(__u32 i, void *ctx __maybe_unused)
{
	__u32 n = fill.first + i;
	/* words, as flow_key_fill takes an IP header's addresses */
	union {
		__u8 bytes[4];
		__be32 word;
	} local = { SWEEP_FILL_LOCAL_ADDR }, remote = { SWEEP_FILL_REMOTE_ADDR(n) };
	struct flow_state *st = flow_new_get();
	__u64 now = bpf_ktime_get_ns();
	struct flow_key fk;

	if (!st)
		return 1;
	flow_key_fill(&fk, FLOW_FAMILY_IPV4, &local.word, &remote.word,
		      bpf_htons(SWEEP_FILL_LOCAL_PORT), bpf_htons(SWEEP_FILL_REMOTE_PORT));
	st->flags = fill.flags;
	st->created_ns = now - fill.age_ns;
	st->last_seen_ns = now - fill.age_ns;
	if (fill.mode == FILL_SLOTS)
		st->sweep_id = fill_slot(&fk, now);
	else
		st->sweep_id = fill.mode == FILL_UNQUEUED ? 0 : sweep_queue(SWEEP_FLOWS, &fk, now);
	if (!st->sweep_id && fill.mode != FILL_UNQUEUED) {
		fill.full++;
		return 0;
	}
	if (fill.mode == FILL_SLOTS) {
		fill.made++;
		return 0;
	}
	if (bpf_map_update_elem(&isn_flows, &fk, st, BPF_NOEXIST))
		return 0;
	flow_count_add(1);
	fill.made++;
	return 0;
}

SEC("tc")
int sweep_fill(struct __sk_buff *skb __maybe_unused)
{
	bpf_loop(fill.count, fill_one, NULL, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
