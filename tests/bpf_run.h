/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Running BPF programs under test: BPF_PROG_TEST_RUN on a frame, skeletons loaded once. */
#ifndef ISNGUARD_TEST_BPF_RUN_H
#define ISNGUARD_TEST_BPF_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

struct isn_test;

/* The hash test object, loaded on first use; NULL (and a failed test) if it cannot be. */
struct isn_test *isn_test_skel(void);

/*
 * Runs prog repeat times on frame (a minimal dummy frame when frame is NULL).
 * Returns 0 or -errno; *retval gets the verdict, *duration_ns the mean per run.
 */
int bpf_run(const struct bpf_program *prog, const void *frame, size_t len,
	    uint32_t repeat, uint32_t *retval, uint32_t *duration_ns);

/*
 * Sum over CPUs of the 64-bit field at off in entry key of a per-CPU map
 * whose values are value_size bytes; UINT64_MAX if it cannot be read.
 */
uint64_t percpu_u64_sum(int map_fd, uint32_t key, size_t value_size, size_t off);

/* Path of a file next to the running binary (build/). */
const char *build_path(const char *name);

#endif /* ISNGUARD_TEST_BPF_RUN_H */
