// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Usage: test_runner [-v] [-l] [FILTER...]
 *   -v  print each test's log even when it passes
 *   -l  list the tests and exit
 *   FILTER  run only tests whose name contains one of the strings
 */
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
	fputs("skip: ", log_file);
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

	for (struct test_case *tc = tests_head; tc; tc = tc->next) {
		if (!selected(tc->name, argc - optind, argv + optind))
			continue;
		cur_failed = cur_skipped = false;
		cur_test = tc;
		log_file = open_memstream(&log_buf, &log_len);
		tc->fn();
		test_case_end();
		fclose(log_file);
		if (cur_failed) {
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
