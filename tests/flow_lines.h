/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What tests/bpf/flow_lines.bpf.c records (its global `lines`): where each
 * flow table entry is in kernel memory. Either side includes its
 * __u32/__u64 first.
 */
#ifndef ISNGUARD_TESTS_FLOW_LINES_H
#define ISNGUARD_TESTS_FLOW_LINES_H

#define FLOW_LINES_MAX 64

struct entry_at {
	__u64 key;		/* the key's address */
	__u64 value;		/* the value's */
	__u32 opening;		/* found in isn_opening, else isn_flows */
	__u32 pad;
};

struct flow_lines_out {
	__u32 count;		/* entries walked; those past FLOW_LINES_MAX are not recorded */
	__u32 pad;
	struct entry_at at[FLOW_LINES_MAX];
};

#endif /* ISNGUARD_TESTS_FLOW_LINES_H */
