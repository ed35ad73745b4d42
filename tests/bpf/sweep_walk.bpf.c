// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sweeper before issue 17, for tests/bench_sweeper.c's baseline: a walk
 * of both flow tables whole (bpf_for_each_map_elem), each entry measured
 * against its phase's timeout, as the timer did every tick. It removes
 * nothing: the bench's flows are live. Maps shared with the datapath.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "flow.h"

struct walk {
	__u64 now;
	__u64 closed_ns;	/* the closed timeout, as the old timer read it (not adapted) */
	__u64 expired;
};

static long walk_one(void *map __maybe_unused, const struct flow_key *key __maybe_unused,
		     struct flow_state *st, struct walk *w)
{
	if ((__s64)(w->now - st->last_seen_ns) >= (__s64)flow_timeout_ns(st->flags, w->closed_ns))
		w->expired++;
	return 0;
}

SEC("tc")
int sweep_walk(struct __sk_buff *skb __maybe_unused)
{
	struct isn_config *cfg = config_get();
	struct walk w = { .now = bpf_ktime_get_coarse_ns() };

	w.closed_ns = timeout_or_default(cfg ? cfg->timeout_closed : 0, ISN_DEFAULT_TIMEOUT_CLOSED);

	bpf_for_each_map_elem(&isn_opening, walk_one, &w, 0);
	bpf_for_each_map_elem(&isn_flows, walk_one, &w, 0);
	return (int)w.expired;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
