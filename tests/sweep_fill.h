/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What tests/bpf/sweep_fill.bpf.c takes (its global `fill`), for the tests
 * and the bench that run it. Either side includes its __u32/__u64 first.
 */
#ifndef ISNGUARD_TESTS_SWEEP_FILL_H
#define ISNGUARD_TESTS_SWEEP_FILL_H

enum fill_mode {
	FILL_FLOWS,	/* isn_flows entries, each with its slot */
	FILL_SLOTS,	/* slots alone, as entries gone leave them */
	FILL_UNQUEUED,	/* entries alone, as a sweeper without queues left them */
};

struct fill_args {
	__u32 first;	/* index of the first tuple (sweep_fill_key) */
	__u32 count;
	__u32 mode;	/* enum fill_mode */
	__u32 flags;	/* flow_state.flags of the entries */
	__u64 age_ns;	/* how long ago they were last seen */
	__u32 made;	/* out: entries (or slots) made */
	__u32 full;	/* out: refused, the queue full */
	/*
	 * FILL_SLOTS: the queue (enum sweep_queue), and the slots' delay in ms
	 * (0: the queue's own). SWEEP_LONG's are taken as the sweeper takes
	 * them, with no margin left free.
	 */
	__u32 queue;
	__u32 due_ms;
};

/* Tuple n: 10.(201 + n / 65536).(n / 256 % 256).(n % 256):40000 to 10.200.0.1:80. */
#define SWEEP_FILL_LOCAL_ADDR { 10, 200, 0, 1 }
#define SWEEP_FILL_REMOTE_ADDR(n) { 10, (__u8)(201 + ((n) >> 16)), (__u8)((n) >> 8), (__u8)(n) }
#define SWEEP_FILL_LOCAL_PORT 80
#define SWEEP_FILL_REMOTE_PORT 40000

#endif /* ISNGUARD_TESTS_SWEEP_FILL_H */
