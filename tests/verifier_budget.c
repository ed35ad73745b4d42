// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make check-verifier: what the verifier spends on each program of a BPF
 * object, each loaded alone with BPF_LOG_STATS (as veristat does), against
 * a budget with margin: a program that needs most of the verifier's limits
 * loads or not by details no one controls (the compiler, the kernel).
 *
 * Per program: instructions processed (limit 1,000,000), peak states, the
 * deepest call chain's stack (limit 512: the frames of the program, its
 * BPF-to-BPF calls and its bpf_loop or for-each callbacks, each rounded up to
 * 32 bytes as kernel 6.1 does; a timer callback runs on a stack of its own
 * and starts a chain of its own), and the verification time.
 *
 * A program with a load-time switch (variants[]) is measured with it on too.
 *
 * Usage: verifier_budget [--insns N] [--stack-free N] [--json] OBJ...
 * Exit 0 when every program loads within budget; the last line is
 * "N passed, N failed", a program a test.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "json_writer.h"

#define VERIFIER_INSN_LIMIT 1000000
#define STACK_LIMIT 512
#define FRAME_ROUND 32
#define MAX_SUBPROGS 256
#define LOG_SIZE (16u << 20)

struct budget {
	long max_insns;
	long min_stack_free;
};

struct prog_cost {
	char name[128];
	long insns, peak_states, time_usec;
	int stack_chain;		/* deepest call chain, bytes; -1 unknown */
	char frames[256];		/* the chain, frame by frame */
	int load_err;
	char why[512];			/* the verifier's last words on a refusal */
};

static char *log_buf;

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* The number after key in the log, or -1. */
static long log_number(const char *key)
{
	const char *s = strstr(log_buf, key);

	return s ? strtol(s + strlen(key), NULL, 10) : -1;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int round_frame(int depth)
{
	if (depth < 1)
		depth = 1;
	return (depth + FRAME_ROUND - 1) / FRAME_ROUND * FRAME_ROUND;
}

/*
 * The deepest chain of frames from subprogram at, depth[] per subprogram,
 * calls[i][j] whether i calls (or passes as a callback) j. The call graph
 * of a verified program has no cycles (the verifier refuses recursion).
 */
static int chain_depth(int at, int n, const int *depth, unsigned char (*calls)[MAX_SUBPROGS],
		       int level, int *best_next)
{
	int best = 0, i;

	if (level > MAX_SUBPROGS)
		return 0;
	for (i = 0; i < n; i++) {
		int d;

		if (!calls[at][i])
			continue;
		d = chain_depth(i, n, depth, calls, level + 1, NULL);
		if (d > best) {
			best = d;
			if (best_next)
				*best_next = i;
		}
	}
	return round_frame(depth[at]) + best;
}

/*
 * Whether the callback referenced at insn[i] is a timer's: the next helper
 * call after it is bpf_timer_set_callback. The kernel checks such a
 * callback's stack as a chain of its own (it runs from the timer, not on
 * top of the frame that armed it); bpf_loop's and for-each callbacks run on
 * top of their caller's.
 */
static bool timer_callback(const struct bpf_insn *insn, size_t cnt, size_t i)
{
	for (i += 2; i < cnt; i++)
		if (insn[i].code == (BPF_JMP | BPF_CALL))
			return insn[i].src_reg == 0 && insn[i].imm == BPF_FUNC_timer_set_callback;
	return false;
}

/*
 * Where a BPF-to-BPF call or callback reference points, relative to the
 * next instruction. In the program the kernel kept (xlated, JIT on), a
 * call's offset moved to off and imm holds the callee's index.
 */
static int call_offset(const struct bpf_insn *insn, bool xlated)
{
	if (xlated && insn->code == (BPF_JMP | BPF_CALL))
		return insn->off;
	return insn->imm;
}

/*
 * Subprograms start at 0 and at every target of a BPF-to-BPF call or of a
 * callback reference, in the order of the verifier's "stack depth" list.
 */
static void stack_chain(const struct bpf_insn *insn, size_t cnt, bool xlated,
			struct prog_cost *cost)
{
	static unsigned char calls[MAX_SUBPROGS][MAX_SUBPROGS];
	bool root[MAX_SUBPROGS] = { true };
	size_t i;
	int starts[MAX_SUBPROGS], depth[MAX_SUBPROGS], n = 1, nd = 0, at, next, k;
	const char *s = strstr(log_buf, "stack depth ");
	size_t len = 0;

	cost->stack_chain = -1;
	cost->frames[0] = 0;
	if (!s)
		return;
	for (s += strlen("stack depth "); nd < MAX_SUBPROGS;) {
		char *end;

		depth[nd++] = (int)strtol(s, &end, 10);
		if (*end != '+')
			break;
		s = end + 1;
	}
	starts[0] = 0;
	for (i = 0; i < cnt; i++) {
		bool call = insn[i].code == (BPF_JMP | BPF_CALL) && insn[i].src_reg == BPF_PSEUDO_CALL;
		bool func = insn[i].code == (BPF_LD | BPF_IMM | BPF_DW) &&
			    insn[i].src_reg == BPF_PSEUDO_FUNC;
		int target = (int)i + call_offset(&insn[i], xlated) + 1, k;

		if (!call && !func)
			continue;
		for (k = 0; k < n && starts[k] != target; k++)
			;
		if (k == n && n < MAX_SUBPROGS)
			starts[n++] = target;
	}
	qsort(starts, n, sizeof(starts[0]), cmp_int);
	if (n != nd) {
		snprintf(cost->frames, sizeof(cost->frames),
			 "%d subprograms in the code, %d in the log", n, nd);
		return;
	}
	memset(calls, 0, sizeof(calls));
	for (i = 0, at = 0; i < cnt; i++) {
		bool call = insn[i].code == (BPF_JMP | BPF_CALL) && insn[i].src_reg == BPF_PSEUDO_CALL;
		bool func = insn[i].code == (BPF_LD | BPF_IMM | BPF_DW) &&
			    insn[i].src_reg == BPF_PSEUDO_FUNC;
		int target = (int)i + call_offset(&insn[i], xlated) + 1, k;

		while (at + 1 < n && (int)i >= starts[at + 1])
			at++;
		if (!call && !func)
			continue;
		for (k = 0; k < n && starts[k] != target; k++)
			;
		if (k == n)
			continue;
		if (func && !xlated && timer_callback(insn, cnt, i))
			root[k] = true;
		else
			calls[at][k] = 1;
	}
	/* The deepest chain from any root: the program, or a timer callback. */
	cost->stack_chain = 0;
	for (k = 0, at = 0; k < n; k++) {
		int d = root[k] ? chain_depth(k, n, depth, calls, 0, NULL) : 0;

		if (d > cost->stack_chain) {
			cost->stack_chain = d;
			at = k;
		}
	}
	/* The chain itself, frame by frame, for the table. */
	for (;;) {
		next = -1;
		chain_depth(at, n, depth, calls, 0, &next);
		len += snprintf(cost->frames + len, sizeof(cost->frames) - len, "%s%d",
				len ? "+" : "", round_frame(depth[at]));
		if (next < 0 || len >= sizeof(cost->frames))
			break;
		at = next;
	}
}

/*
 * The chain in the program as the kernel kept it, when the object's code
 * has subprograms the log does not list: the verifier removed those that a
 * load-time switch (variants[]) left unreachable. A callback is counted on
 * top of its caller here, a timer's too: more stack, never less.
 */
static void stack_chain_loaded(int fd, struct prog_cost *cost)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_insn *insns;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.xlated_prog_len)
		return;
	insns = calloc(1, info.xlated_prog_len);
	if (!insns)
		return;
	len = info.xlated_prog_len;
	memset(&info, 0, sizeof(info));
	info.xlated_prog_len = len;
	info.xlated_prog_insns = (__u64)(unsigned long)insns;
	len = sizeof(info);
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		stack_chain(insns, info.xlated_prog_len / sizeof(*insns), true, cost);
	free(insns);
}

/* The last lines of the log before the statistics: why the verifier refused. */
static void refusal_reason(struct prog_cost *cost)
{
	char *end = strstr(log_buf, "\nverification time");
	char *start;
	int lines = 0;

	if (!end)
		end = log_buf + strlen(log_buf);
	for (start = end; start > log_buf && lines < 3; start--)
		if (start[-1] == '\n')
			lines++;
	snprintf(cost->why, sizeof(cost->why), "%.*s", (int)(end - start), start);
	for (char *p = cost->why; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

/*
 * Programs measured a second time with a load-time switch on: the loader
 * sets these read-only variables before load, and the verifier prunes
 * whatever a switch left off leads to, so each setting is a program of
 * its own to the budget. Shown as "program+variable".
 */
static const struct variant {
	const char *prog, *var;
} variants[] = {
	{ "isnguard_tc_ingress", "syn_at_tc" },	/* attach --syn-hook tc */
};

/* Sets the bool or integer variable var in .rodata to 1: 0, or -ENOENT. */
static int rodata_set(struct bpf_object *obj, const char *var)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	size_t size;
	char *data;
	int id;

	if (!map || !btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	data = (char *)bpf_map__initial_value(map, &size);
	if (id < 0 || !data)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *t = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, t->name_off), var) ||
		    vs->offset + vs->size > size)
			continue;
		memset(data + vs->offset, 0, vs->size);
		data[vs->offset] = 1;	/* little-endian, as BPF on x86 */
		return 0;
	}
	return -ENOENT;
}

static int measure(const char *path, const char *name, const char *var, struct prog_cost *cost)
{
	struct bpf_object *obj = bpf_object__open(path);
	struct bpf_program *prog, *me = NULL;
	int err;

	if (!obj)
		return -errno;
	if (var && rodata_set(obj, var)) {
		bpf_object__close(obj);
		return -ENOENT;
	}
	bpf_object__for_each_program(prog, obj) {
		bool this = !strcmp(bpf_program__name(prog), name);

		bpf_program__set_autoload(prog, this);
		if (this)
			me = prog;
	}
	log_buf[0] = 0;
	bpf_program__set_log_buf(me, log_buf, LOG_SIZE);
	bpf_program__set_log_level(me, 4);	/* BPF_LOG_STATS */
	err = bpf_object__load(obj);
	snprintf(cost->name, sizeof(cost->name), "%.60s%s%.60s", name, var ? "+" : "",
		 var ? var : "");
	cost->load_err = err;
	cost->insns = log_number("processed ");
	cost->peak_states = log_number("peak_states ");
	cost->time_usec = log_number("verification time ");
	stack_chain(bpf_program__insns(me), bpf_program__insn_cnt(me), false, cost);
	if (cost->stack_chain < 0 && !err)
		stack_chain_loaded(bpf_program__fd(me), cost);
	if (err)
		refusal_reason(cost);
	bpf_object__close(obj);
	return 0;
}

static bool within(const struct prog_cost *c, const struct budget *b)
{
	return !c->load_err && c->insns >= 0 && c->insns <= b->max_insns &&
	       c->stack_chain >= 0 && STACK_LIMIT - c->stack_chain >= b->min_stack_free;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [--insns N] [--stack-free N] [--json] OBJ...\n"
		   "  --insns N       most instructions a program may need verified (300000)\n"
		   "  --stack-free N  fewest bytes of the 512-byte stack left free (64)\n"
		   "  --json          the table as JSON\n", argv0);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "insns", required_argument, NULL, 'i' },
		{ "stack-free", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct budget budget = { .max_insns = 300000, .min_stack_free = 64 };
	int passed = 0, failed = 0, opt;
	struct json_writer jw;
	bool json = false;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'i':
			budget.max_insns = strtol(optarg, NULL, 10);
			break;
		case 's':
			budget.min_stack_free = strtol(optarg, NULL, 10);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	log_buf = malloc(LOG_SIZE);
	if (!log_buf)
		return 1;
	libbpf_set_print(quiet);
	if (json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_uint_field(&jw, "budget_insns", (uint64_t)budget.max_insns);
		jw_uint_field(&jw, "budget_stack_free", (uint64_t)budget.min_stack_free);
		jw_name(&jw, "programs");
		jw_start_array(&jw);
	} else {
		printf("verifier budget: at most %ld instructions processed (%.0f%% of %d), "
		       "at least %ld of %d stack bytes free\n",
		       budget.max_insns, 100.0 * budget.max_insns / VERIFIER_INSN_LIMIT,
		       VERIFIER_INSN_LIMIT, budget.min_stack_free, STACK_LIMIT);
		printf("%-26s %-32s %9s %5s %7s %-22s %8s  %s\n", "object", "program", "insns",
		       "%1M", "peak", "stack (deepest chain)", "time ms", "verdict");
	}
	for (int a = optind; a < argc; a++) {
		struct bpf_object *obj = bpf_object__open(argv[a]);
		const char *base = argv[a];
		struct bpf_program *prog;
		char names[64][128];
		const char *vars[64];	/* each name's switch (variants[]), or NULL */
		int n = 0;

		if (!obj) {
			fprintf(stderr, "verifier_budget: open %s: %s\n", argv[a], strerror(errno));
			failed++;
			continue;
		}
		bpf_object__for_each_program(prog, obj) {
			const char *pname = bpf_program__name(prog);

			if (n >= 64)
				break;
			vars[n] = NULL;
			snprintf(names[n++], sizeof(names[0]), "%s", pname);
			for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]) && n < 64; v++) {
				if (strcmp(variants[v].prog, pname))
					continue;
				vars[n] = variants[v].var;
				snprintf(names[n++], sizeof(names[0]), "%s", pname);
			}
		}
		bpf_object__close(obj);

		for (int i = 0; i < n; i++) {
			struct prog_cost c = { 0 };
			const char *verdict;
			char stack[sizeof(c.frames) + 16];
			int err = measure(argv[a], names[i], vars[i], &c);

			if (err) {
				fprintf(stderr, "verifier_budget: %s %s%s%s: %s\n", argv[a], names[i],
					vars[i] ? "+" : "", vars[i] ? vars[i] : "", strerror(-err));
				failed++;
				continue;
			}
			verdict = c.load_err ? "REFUSED" : within(&c, &budget) ? "ok" : "OVER BUDGET";
			if (within(&c, &budget))
				passed++;
			else
				failed++;
			if (c.stack_chain >= 0)
				snprintf(stack, sizeof(stack), "%d (%s)", c.stack_chain, c.frames);
			else
				snprintf(stack, sizeof(stack), "? %s", c.frames);
			if (json) {
				jw_start_object(&jw);
				jw_string_field(&jw, "object", base);
				jw_string_field(&jw, "program", c.name);
				jw_name(&jw, "insns_processed");
				jw_int(&jw, c.insns);
				jw_name(&jw, "peak_states");
				jw_int(&jw, c.peak_states);
				jw_name(&jw, "stack_chain");
				jw_int(&jw, c.stack_chain);
				jw_string_field(&jw, "stack_frames", c.frames);
				jw_name(&jw, "verification_usec");
				jw_int(&jw, c.time_usec);
				jw_string_field(&jw, "verdict", verdict);
				if (c.load_err)
					jw_string_field(&jw, "why", c.why);
				jw_end_object(&jw);
				continue;
			}
			printf("%-26s %-32s %9ld %4.0f%% %7ld %-22s %8.1f  %s\n", base, c.name,
			       c.insns, 100.0 * c.insns / VERIFIER_INSN_LIMIT, c.peak_states,
			       stack, c.time_usec / 1000.0, verdict);
			if (c.load_err)
				printf("    why: %s\n", c.why);
		}
	}
	if (json) {
		jw_end_array(&jw);
		jw_uint_field(&jw, "passed", (uint64_t)passed);
		jw_uint_field(&jw, "failed", (uint64_t)failed);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		printf("%d passed, %d failed\n", passed, failed);
	}
	free(log_buf);
	return failed ? 1 : 0;
}
