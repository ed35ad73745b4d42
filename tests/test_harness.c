// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The harness itself: build/harness_selftest (tests/harness_selftest.c) runs
 * tests that crash, fail, skip and pass; its output must count each as it
 * is, go on past every crash, and end with the result line.
 */
#include <stdio.h>
#include <string.h>

#include "cli_run.h"
#include "harness.h"

static void expect_line(const char *out, const char *line)
{
	char want[256];
	size_t len = strlen(line);
	const char *at = out;

	/* The whole line, not a prefix of a longer one. */
	snprintf(want, sizeof(want), "%s\n", line);
	while ((at = strstr(at, want))) {
		if (at == out || at[-1] == '\n')
			return;
		at += len;
	}
	FAIL("no line \"%s\" in the self-test's output:\n%s", line, out);
}

/* The last line of out, without its newline. */
static void last_line(const char *out, char *line, size_t cap)
{
	size_t len = strlen(out);
	const char *start;

	while (len && out[len - 1] == '\n')
		len--;
	start = out + len;
	while (start > out && start[-1] != '\n')
		start--;
	snprintf(line, cap, "%.*s", (int)(out + len - start), start);
}

TEST(test_harness_reports_crashes_as_failures_and_goes_on)
{
	static const char *const lines[] = {
		"ok   selftest_passes",
		"FAIL selftest_dereferences_null (crashed: SIGSEGV)",
		"logged before the crash",
		"crashed: SIGSEGV (Segmentation fault)",
		"FAIL selftest_aborts (crashed: SIGABRT)",
		"FAIL selftest_raises_sigfpe (crashed: SIGFPE)",
		"FAIL selftest_raises_sigbus (crashed: SIGBUS)",
		"FAIL selftest_overflows_its_stack (crashed: SIGSEGV)",
		"  ok   selftest_crashes_in_its_second_case/first",
		"  FAIL selftest_crashes_in_its_second_case/second",
		"[second] crashed: SIGSEGV (Segmentation fault)",
		"FAIL selftest_crashes_in_its_second_case (crashed: SIGSEGV)",
		"FAIL selftest_fails_an_assertion",
		"ok   selftest_forked_child_crash_stays_in_the_child",
		"ok   selftest_passes_after_the_crashes",
	};
	const char *args[] = { NULL };
	struct cli_result res;
	char last[128];

	if (!run_build_binary(&res, "harness_selftest", args, 0))
		return;
	ASSERT_EQ(res.status, 1, "exit status (some self-tests fail on purpose)");
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		expect_line(res.out, lines[i]);
	last_line(res.out, last, sizeof(last));
	ASSERT_STREQ(last, "3 passed, 7 failed, 1 skipped", "the result line, last");
}

TEST(test_harness_reports_a_skip_with_its_reason)
{
	const char *args[] = { "selftest_skips", NULL };
	struct cli_result res;

	if (!run_build_binary(&res, "harness_selftest", args, 0))
		return;
	ASSERT_EQ(res.status, 0, "exit status (a skip is no failure)");
	ASSERT_STREQ(res.out, "SKIP selftest_skips\nskipped: this kernel lacks the feature X\n"
			      "0 passed, 0 failed, 1 skipped\n", "stdout");
}
