/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Per-CPU decision and event counters (enum isn_stat), a set of them per
 * attached interface (include/isnguard.h, ISN_STATS_SLOTS), summed by
 * `isnguard stats`.
 */
#ifndef ISNGUARD_BPF_STATS_H
#define ISNGUARD_BPF_STATS_H

#include <bpf/bpf_helpers.h>
#include "isnguard.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ISN_STATS_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} isn_stats SEC(".maps");

/* This load's slot of isn_stats: its interface's (the loader's), or 0. */
const volatile __u32 stats_slot = 0;

static __always_inline void stat_add(__u32 stat, __u64 n)
{
	__u32 index = stats_slot * STAT_COUNT + stat;
	__u64 *count = bpf_map_lookup_elem(&isn_stats, &index);

	if (count)
		*count += n;
}

static __always_inline void stat_inc(__u32 stat)
{
	stat_add(stat, 1);
}

#endif /* ISNGUARD_BPF_STATS_H */
