// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A walk of the whole resend table, for tests/bench_resend.c's baseline:
 * each record's flow looked up in isn_flows and its due time against now,
 * as a tick that walks isn_syn_resend (bpf_for_each_map_elem) does it. It
 * sends and removes nothing. Maps shared with the datapath.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "flow.h"
#include "resend.h"

struct walk {
	__u64 now;
	__u64 due;
};

static long walk_one(void *map __maybe_unused, const struct flow_key *key, struct syn_resend *r,
		     struct walk *w)
{
	if (r->netns_ino != netns_ino || !resend_live(r, bpf_map_lookup_elem(&isn_flows, key)))
		return 0;
	if ((__s64)(w->now - resend_due_ns(r)) >= 0)
		w->due++;
	return 0;
}

SEC("tc")
int resend_walk(struct __sk_buff *skb __maybe_unused)
{
	struct walk w = { .now = bpf_ktime_get_coarse_ns() };

	bpf_for_each_map_elem(&isn_syn_resend, walk_one, &w, 0);
	return (int)w.due;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
