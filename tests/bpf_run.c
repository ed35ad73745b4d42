// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf_run.h"
#include "isnguard.h"
#include "isn_test.skel.h"

static struct isn_test *skel;
static int skel_err;

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* Warnings and the verifier log on load failures; no debug chatter. */
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

struct isn_test *isn_test_skel(void)
{
	if (skel || skel_err)
		return skel;
	libbpf_set_print(silent_print);
	skel = isn_test__open_and_load();
	if (!skel) {
		skel_err = -errno;
		fprintf(stderr, "isn_test: load failed: %s\n", strerror(-skel_err));
	}
	return skel;
}

int bpf_run(const struct bpf_program *prog, const void *frame, size_t len,
	    uint32_t repeat, uint32_t *retval, uint32_t *duration_ns)
{
	/* XDP test runs need at least an Ethernet header. */
	static const uint8_t dummy[64] = { [12] = 0x08, [13] = 0x00 };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = frame ? frame : dummy,
		.data_size_in = (uint32_t)(frame ? len : sizeof(dummy)),
		.repeat = repeat,
	);
	int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);

	if (err)
		return -errno;
	if (retval)
		*retval = opts.retval;
	if (duration_ns)
		*duration_ns = opts.duration;
	return 0;
}

uint64_t percpu_u64_sum(int map_fd, uint32_t key, size_t value_size, size_t off)
{
	int ncpus = libbpf_num_possible_cpus();
	/* The kernel copies each CPU's value rounded up to 8 bytes. */
	size_t stride = (value_size + 7) & ~(size_t)7;
	uint8_t values[512 * 64];
	uint64_t sum = 0, v;

	if (ncpus <= 0 || off + sizeof(v) > value_size || (size_t)ncpus * stride > sizeof(values) ||
	    bpf_map_lookup_elem(map_fd, &key, values))
		return UINT64_MAX;
	for (int i = 0; i < ncpus; i++) {
		memcpy(&v, values + (size_t)i * stride + off, sizeof(v));
		sum += v;
	}
	return sum;
}

const char *build_path(const char *name)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return name;
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dirname(self), name);
	return path;
}
