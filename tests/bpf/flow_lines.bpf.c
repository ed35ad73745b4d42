// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where the kernel put the flow tables' entries, for test_datapath's check
 * that the part of struct flow_state the host's segments keep writing
 * (host_ack on, FLOW_STATE_READ_BYTES) starts a cache line of its own: one
 * walk of both tables (maps shared with the datapath), each entry's key and
 * value addresses recorded. Addresses, so the arithmetic is userspace's:
 * the verifier refuses bitwise operations on pointers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "flow.h"
#include "../flow_lines.h"

struct flow_lines_out lines;

static long record(void *map, const struct flow_key *key, struct flow_state *st,
		   void *ctx __maybe_unused)
{
	__u32 i = lines.count++;

	if (i < FLOW_LINES_MAX) {
		lines.at[i].key = (__u64)key;
		lines.at[i].value = (__u64)st;
		lines.at[i].opening = map == (void *)&isn_opening;
	}
	return 0;
}

SEC("tc")
int flow_lines(struct __sk_buff *skb __maybe_unused)
{
	lines.count = 0;
	bpf_for_each_map_elem(&isn_opening, record, NULL, 0);
	bpf_for_each_map_elem(&isn_flows, record, NULL, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
