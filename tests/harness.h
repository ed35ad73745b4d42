/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Test harness: tests register themselves with TEST(), assertions print what
 * differed (expected and actual, like selftests' ASSERT_EQ) and return false
 * so a test can stop early. A test that crashes fails, named with its signal,
 * and the run goes on. The runner's last line is "N passed, N failed", with
 * ", N skipped" when any test skipped.
 */
#ifndef ISNGUARD_TEST_HARNESS_H
#define ISNGUARD_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	struct test_case *next;
};

void test_register(struct test_case *tc);

#define TEST(fn_name)							\
	static void fn_name(void);					\
	static struct test_case fn_name##_case = { #fn_name, fn_name, NULL }; \
	__attribute__((constructor)) static void fn_name##_register(void) \
	{ test_register(&fn_name##_case); }				\
	static void fn_name(void)

/*
 * Marks the running test skipped, for something this kernel or machine lacks:
 * its log says "skipped: <why>" and it counts as skipped, unless it also failed.
 */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Marks the running test failed with a message, without an assertion. */
void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A named case inside the running test, such as one fixture row: its result
 * is its own line ("  ok   test/name" or "  FAIL test/name", before the
 * test's), its failures are tagged with the name, and they fail the test.
 * The next begin or the end of the test ends a case not ended explicitly.
 */
void test_case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void test_case_end(void);
/* Free-form diagnostics, shown with the test's result. */
void test_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

bool assert_u64_eq(const char *file, int line, const char *what,
		   uint64_t actual, uint64_t expected);
bool assert_true(const char *file, int line, const char *what, bool cond);
bool assert_ok(const char *file, int line, const char *what, long err);
bool assert_mem_eq(const char *file, int line, const char *what,
		   const void *actual, const void *expected, size_t len);
bool assert_str_eq(const char *file, int line, const char *what,
		   const char *actual, const char *expected);

#define ASSERT_EQ(actual, expected, what) \
	assert_u64_eq(__FILE__, __LINE__, what, (uint64_t)(actual), (uint64_t)(expected))
#define ASSERT_TRUE(cond, what) assert_true(__FILE__, __LINE__, what, !!(cond))
#define ASSERT_OK(err, what) assert_ok(__FILE__, __LINE__, what, (long)(err))
#define ASSERT_MEMEQ(actual, expected, len, what) \
	assert_mem_eq(__FILE__, __LINE__, what, actual, expected, len)
#define ASSERT_STREQ(actual, expected, what) \
	assert_str_eq(__FILE__, __LINE__, what, actual, expected)
#define FAIL(...) test_fail(__FILE__, __LINE__, __VA_ARGS__)

#endif /* ISNGUARD_TEST_HARNESS_H */
