// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * build/harness_selftest: the test harness (harness.c) running tests that
 * crash, fail, skip and pass, so that test_harness.c can check what the
 * runner makes of them. Not part of the suite itself: most of these fail on
 * purpose. Each is named for what it does; the order is the file's.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Opaque to the compiler, so the dereference below is a real load. */
static int *volatile nowhere;

TEST(selftest_passes)
{
	ASSERT_EQ(1 + 1, 2, "arithmetic");
}

TEST(selftest_dereferences_null)
{
	test_log("logged before the crash");
	ASSERT_EQ(*nowhere, 0, "a value behind a NULL pointer");
}

TEST(selftest_aborts)
{
	abort();
}

TEST(selftest_raises_sigfpe)
{
	raise(SIGFPE);
}

TEST(selftest_raises_sigbus)
{
	raise(SIGBUS);
}

/* Bounded for the compiler's sake; the stack ends long before the bound. */
static int recurse(int depth)
{
	volatile char frame[1024];

	if (depth > 1 << 30)
		return 0;
	frame[0] = (char)depth;
	return recurse(depth + 1) + frame[0];
}

TEST(selftest_overflows_its_stack)
{
	ASSERT_EQ(recurse(0), 0, "endless recursion");
}

TEST(selftest_crashes_in_its_second_case)
{
	test_case_begin("first");
	ASSERT_TRUE(true, "first case");
	test_case_begin("second");
	ASSERT_EQ(*nowhere, 0, "a value behind a NULL pointer");
}

TEST(selftest_fails_an_assertion)
{
	ASSERT_EQ(1, 2, "one is two");
}

TEST(selftest_skips)
{
	test_skip("this kernel lacks the feature X");
}

/* A child of a test that crashes dies of it: it never goes on as a second runner. */
TEST(selftest_forked_child_crash_stays_in_the_child)
{
	int status = 0;
	pid_t child = fork();

	if (child == 0) {
		status = *nowhere;
		_exit(status);
	}
	if (!ASSERT_TRUE(child > 0, "fork") ||
	    !ASSERT_EQ(waitpid(child, &status, 0), child, "waitpid"))
		return;
	ASSERT_TRUE(WIFSIGNALED(status), "the child died of a signal");
	ASSERT_EQ(WTERMSIG(status), SIGSEGV, "the child's signal");
}

TEST(selftest_passes_after_the_crashes)
{
	ASSERT_TRUE(true, "still running");
}
