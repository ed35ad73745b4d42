// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench: ns per call of the keyed ISN functions in BPF, measured with
 * BPF_PROG_TEST_RUN repeat runs beside an empty XDP program and the kernel's
 * bpf_ktime_get_ns() helper in the same run. Rounds are interleaved across
 * programs and the median kept, because this machine is shared and noisy.
 *
 * Usage: bench [--repeat N] [--rounds N] [--json]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bpf_run.h"
#include "isnguard.h"
#include "isn_test.skel.h"
#include "json_writer.h"

#define MAX_ROUNDS 31

struct bench_case {
	const char *name;
	const char *what;
	int family;
	struct bpf_program *prog;
	double ns[MAX_ROUNDS];
	double median;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(buf, len, "%s", colon + 2);
			buf[strcspn(buf, "\n")] = '\0';
			break;
		}
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "repeat", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long repeat = 1000000, rounds = 7;
	bool json = false;
	struct isn_test *skel;
	struct utsname uts;
	char cpu[128];
	int opt;

	while ((opt = getopt_long(argc, argv, "n:r:jh", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			repeat = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			printf("Usage: %s [--repeat N] [--rounds N] [--json]\n", argv[0]);
			return 0;
		default:
			return 2;
		}
	}
	if (repeat < 1 || repeat > 100000000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench: --repeat must be 1..100000000 and --rounds 1..%d\n", MAX_ROUNDS);
		return 2;
	}

	skel = isn_test_skel();
	if (!skel)
		return 1;
	for (int i = 0; i < ISN_KEY_LEN; i++)
		skel->bss->in_key.bytes[i] = (uint8_t)(0x3c ^ i * 7);

	struct bench_case cases[] = {
		{ .name = "empty", .family = 4, .prog = skel->progs.bench_empty,
		  .what = "empty XDP program (baseline)" },
		{ .name = "ktime", .family = 4, .prog = skel->progs.bench_ktime,
		  .what = "bpf_ktime_get_ns() -> M (kernel helper)" },
		{ .name = "f_none", .family = 4, .prog = skel->progs.bench_f_none,
		  .what = "F none" },
		{ .name = "f_siphash_ipv4", .family = 4, .prog = skel->progs.bench_f_siphash,
		  .what = "F siphash, IPv4 (12-byte T)" },
		{ .name = "f_siphash_ipv6", .family = 6, .prog = skel->progs.bench_f_siphash,
		  .what = "F siphash, IPv6 (36-byte T)" },
		{ .name = "f_md5_ipv4", .family = 4, .prog = skel->progs.bench_f_md5,
		  .what = "F md5, IPv4 (28-byte T||K)" },
		{ .name = "f_md5_ipv6", .family = 6, .prog = skel->progs.bench_f_md5,
		  .what = "F md5, IPv6 (52-byte T||K)" },
		{ .name = "isn_siphash_ipv4", .family = 4, .prog = skel->progs.bench_isn_siphash,
		  .what = "ISN siphash, IPv4 (F + M)" },
	};
	size_t ncases = sizeof(cases) / sizeof(cases[0]);

	for (unsigned long r = 0; r < rounds; r++) {
		for (size_t c = 0; c < ncases; c++) {
			struct flow_key *fk = &skel->bss->in_flow;
			uint32_t duration = 0;
			int err;

			memset(fk, 0, sizeof(*fk));
			fk->family = (uint8_t)cases[c].family;
			for (int i = 0; i < 16; i++) {
				fk->local_addr[i] = cases[c].family == 4 && i >= 4 ? 0 : (uint8_t)(i + 1);
				fk->remote_addr[i] = cases[c].family == 4 && i >= 4 ? 0 : (uint8_t)(0xf0 - i);
			}
			fk->local_port = 0x5000;
			fk->remote_port = 0x409c;
			err = bpf_run(cases[c].prog, NULL, 0, (uint32_t)repeat, NULL, &duration);
			if (err) {
				fprintf(stderr, "bench: test run of %s failed: %s\n", cases[c].name,
					strerror(-err));
				return 1;
			}
			cases[c].ns[r] = duration;
		}
	}
	for (size_t c = 0; c < ncases; c++) {
		qsort(cases[c].ns, rounds, sizeof(double), cmp_double);
		cases[c].median = cases[c].ns[rounds / 2];
	}

	uname(&uts);
	cpu_model(cpu, sizeof(cpu));
	if (json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "method", "BPF_PROG_TEST_RUN, median of interleaved rounds");
		jw_uint_field(&jw, "repeat", repeat);
		jw_uint_field(&jw, "rounds", rounds);
		jw_string_field(&jw, "kernel", uts.release);
		jw_string_field(&jw, "cpu", cpu);
		jw_name(&jw, "results");
		jw_start_array(&jw);
		for (size_t c = 0; c < ncases; c++) {
			jw_start_object(&jw);
			jw_string_field(&jw, "name", cases[c].name);
			jw_string_field(&jw, "what", cases[c].what);
			jw_double_field(&jw, "ns_per_run", cases[c].median, 0);
			jw_double_field(&jw, "ns_over_empty", cases[c].median - cases[0].median, 0);
			jw_double_field(&jw, "min_ns", cases[c].ns[0], 0);
			jw_double_field(&jw, "max_ns", cases[c].ns[rounds - 1], 0);
			jw_end_object(&jw);
		}
		jw_end_array(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
		return 0;
	}
	printf("BPF_PROG_TEST_RUN, %lu runs per round, median of %lu interleaved rounds\n",
	       repeat, rounds);
	printf("kernel %s, %s\n\n", uts.release, cpu);
	printf("%-42s %8s %12s %14s\n", "program", "ns/run", "over empty", "min..max");
	for (size_t c = 0; c < ncases; c++) {
		char range[32];

		snprintf(range, sizeof(range), "%.0f..%.0f", cases[c].ns[0], cases[c].ns[rounds - 1]);
		printf("%-42s %8.0f %12.0f %14s\n", cases[c].what, cases[c].median,
		       cases[c].median - cases[0].median, range);
	}
	return 0;
}
