/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where a program's time goes, by outcome (`make PROFILE=1`, include/
 * isnguard.h's struct isn_prof): each run's time, from its first
 * instruction to its verdict, added to the slot of the counter it moved.
 * The kernel's BPF statistics give a program's time; this splits it by
 * the kind of segment (a SYN-ACK rewritten, an ACK predicted, ...). Costs
 * two clock reads a run (about 50 ns here): never in a build users run.
 * Without PROFILE the calls compile to nothing.
 */
#ifndef ISNGUARD_BPF_PROFILE_H
#define ISNGUARD_BPF_PROFILE_H

#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "isnguard.h"

#ifdef ISNGUARD_PROFILE
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ISN_PROF_PROGS * ISN_PROF_SLOTS);
	__type(key, __u32);
	__type(value, struct isn_prof);
} isn_prof SEC(".maps");

static __always_inline __u64 prof_start(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline void prof_end(enum isn_prof_prog prog, int stat, __u64 t0)
{
	__u32 slot = stat >= 0 && stat < STAT_COUNT ? (__u32)stat : ISN_PROF_NO_STAT;
	__u32 index = ISN_PROF_INDEX(prog, slot);
	struct isn_prof *p = bpf_map_lookup_elem(&isn_prof, &index);

	if (p) {
		p->ns += bpf_ktime_get_ns() - t0;
		p->runs++;
	}
}
#else
static __always_inline __u64 prof_start(void)
{
	return 0;
}

static __always_inline void prof_end(enum isn_prof_prog prog __maybe_unused,
				     int stat __maybe_unused, __u64 t0 __maybe_unused)
{
}
#endif

#endif /* ISNGUARD_BPF_PROFILE_H */
