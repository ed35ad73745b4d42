// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Usage: test_runner [-v] [-l] [FILTER...]
 *   -v  print each test's log even when it passes
 *   -l  list the tests and exit
 *   FILTER  run only tests whose name contains one of the strings
 *
 * A test that crashes (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) fails,
 * named with its signal, and the run goes on: one broken test, such as one
 * dereferencing an object that did not load, must not hide the others'
 * results nor the last line.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct test_case *tests_head, **tests_tail = &tests_head;

/* State of the running test, and of its named case (test_case_begin). */
static const struct test_case *cur_test;
static bool cur_failed, cur_skipped;
static bool sub_active, sub_failed;
static char sub_name[160];
static char *log_buf;
static size_t log_len;
static FILE *log_file;

/* Where a crash in the running test lands (sigsetjmp in run_test). */
static sigjmp_buf crash_jmp;
static volatile sig_atomic_t crash_armed;
/* A test's forked child inherits the handlers: its crash must end it, not resume the run. */
static pid_t runner_pid;

static const struct {
	int sig;
	const char *name;
} crash_signals[] = {
	{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGABRT, "SIGABRT" },
	{ SIGFPE, "SIGFPE" }, { SIGILL, "SIGILL" },
};

#define NCRASH_SIGNALS (sizeof(crash_signals) / sizeof(crash_signals[0]))

void test_register(struct test_case *tc)
{
	*tests_tail = tc;
	tests_tail = &tc->next;
}

static void vlog(const char *fmt, va_list ap)
{
	vfprintf(log_file, fmt, ap);
	fputc('\n', log_file);
}

void test_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void test_skip(const char *fmt, ...)
{
	va_list ap;

	cur_skipped = true;
	fputs("skipped: ", log_file);
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void test_case_begin(const char *fmt, ...)
{
	va_list ap;

	test_case_end();
	va_start(ap, fmt);
	vsnprintf(sub_name, sizeof(sub_name), fmt, ap);
	va_end(ap);
	sub_active = true;
	sub_failed = false;
}

void test_case_end(void)
{
	if (!sub_active)
		return;
	printf("  %s %s/%s\n", sub_failed ? "FAIL" : "ok  ", cur_test->name, sub_name);
	sub_active = false;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	cur_failed = true;
	sub_failed = true;
	if (sub_active)
		fprintf(log_file, "[%s] ", sub_name);
	fprintf(log_file, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

bool assert_u64_eq(const char *file, int line, const char *what,
		   uint64_t actual, uint64_t expected)
{
	if (actual == expected)
		return true;
	test_fail(file, line, "%s: expected %llu (0x%llx), got %llu (0x%llx)", what,
		  (unsigned long long)expected, (unsigned long long)expected,
		  (unsigned long long)actual, (unsigned long long)actual);
	return false;
}

bool assert_true(const char *file, int line, const char *what, bool cond)
{
	if (!cond)
		test_fail(file, line, "%s: is false", what);
	return cond;
}

bool assert_ok(const char *file, int line, const char *what, long err)
{
	if (err == 0)
		return true;
	test_fail(file, line, "%s: failed with %ld (%s)", what, err,
		  err < 0 ? strerror((int)-err) : "non-zero");
	return false;
}

bool assert_mem_eq(const char *file, int line, const char *what,
		   const void *actual, const void *expected, size_t len)
{
	const uint8_t *a = actual, *e = expected;
	size_t i;

	for (i = 0; i < len && a[i] == e[i]; i++)
		;
	if (i == len)
		return true;
	test_fail(file, line, "%s: %zu bytes differ from offset %zu", what, len, i);
	for (size_t row = i & ~(size_t)15; row < len && row < (i & ~(size_t)15) + 48; row += 16) {
		fprintf(log_file, "  %04zx expected:", row);
		for (size_t j = row; j < row + 16 && j < len; j++)
			fprintf(log_file, " %02x", e[j]);
		fprintf(log_file, "\n  %04zx actual:  ", row);
		for (size_t j = row; j < row + 16 && j < len; j++)
			fprintf(log_file, a[j] == e[j] ? " %02x" : "*%02x", a[j]);
		fputc('\n', log_file);
	}
	return false;
}

bool assert_str_eq(const char *file, int line, const char *what,
		   const char *actual, const char *expected)
{
	if (actual && expected && strcmp(actual, expected) == 0)
		return true;
	test_fail(file, line, "%s:\n  expected: \"%s\"\n  actual:   \"%s\"", what,
		  expected ? expected : "(null)", actual ? actual : "(null)");
	return false;
}

static const char *signal_name(int sig)
{
	for (size_t i = 0; i < NCRASH_SIGNALS; i++)
		if (crash_signals[i].sig == sig)
			return crash_signals[i].name;
	return "signal";
}

static void on_crash(int sig)
{
	if (!crash_armed || getpid() != runner_pid) {
		/* Not inside a test of this process: die of it as if unhandled. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	crash_armed = 0;
	siglongjmp(crash_jmp, sig);
}

/*
 * Before each test, since a test may have changed them. The alternate stack
 * lets a test that overflowed its stack be reported too.
 */
static void crash_handlers_install(void)
{
	static char alt_stack[64 * 1024];
	stack_t ss = { .ss_sp = alt_stack, .ss_size = sizeof(alt_stack) };
	struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_ONSTACK };

	sigemptyset(&sa.sa_mask);
	sigaltstack(&ss, NULL);
	for (size_t i = 0; i < NCRASH_SIGNALS; i++)
		sigaction(crash_signals[i].sig, &sa, NULL);
}

/* Runs one test; returns the signal it crashed with, or 0. */
static int run_test(const struct test_case *tc)
{
	int sig;

	crash_handlers_install();
	/* 1: the mask is restored on the way back, unblocking the signal. */
	sig = sigsetjmp(crash_jmp, 1);
	if (sig == 0) {
		crash_armed = 1;
		tc->fn();
		crash_armed = 0;
		return 0;
	}
	cur_failed = true;
	sub_failed = true;
	if (sub_active)
		fprintf(log_file, "[%s] ", sub_name);
	fprintf(log_file, "crashed: %s (%s)\n", signal_name(sig), strsignal(sig));
	return sig;
}

static bool selected(const char *name, int nfilters, char **filters)
{
	if (nfilters == 0)
		return true;
	for (int i = 0; i < nfilters; i++)
		if (strstr(name, filters[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	bool verbose = false;
	int opt;

	while ((opt = getopt(argc, argv, "vl")) != -1) {
		switch (opt) {
		case 'v':
			verbose = true;
			break;
		case 'l':
			for (struct test_case *tc = tests_head; tc; tc = tc->next)
				puts(tc->name);
			return 0;
		default:
			fprintf(stderr, "usage: %s [-v] [-l] [FILTER...]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	runner_pid = getpid();

	for (struct test_case *tc = tests_head; tc; tc = tc->next) {
		int crash_sig;

		if (!selected(tc->name, argc - optind, argv + optind))
			continue;
		cur_failed = cur_skipped = false;
		sub_active = false;
		cur_test = tc;
		log_file = open_memstream(&log_buf, &log_len);
		crash_sig = run_test(tc);
		test_case_end();
		fclose(log_file);
		if (crash_sig) {
			failed++;
			printf("FAIL %s (crashed: %s)\n", tc->name, signal_name(crash_sig));
		} else if (cur_failed) {
			failed++;
			printf("FAIL %s\n", tc->name);
		} else if (cur_skipped) {
			skipped++;
			printf("SKIP %s\n", tc->name);
		} else {
			passed++;
			printf("ok   %s\n", tc->name);
		}
		if (log_len && (cur_failed || cur_skipped || verbose))
			fputs(log_buf, stdout);
		free(log_buf);
		log_buf = NULL;
	}
	if (skipped)
		printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	else
		printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
