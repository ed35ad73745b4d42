/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Running build/isnguard, or another binary of build/, from tests: exit status and output. */
#ifndef ISNGUARD_TEST_CLI_RUN_H
#define ISNGUARD_TEST_CLI_RUN_H

#include <stdbool.h>

struct cli_result {
	int status;		/* exit status, -1 if it did not exit */
	char out[16384];
	char err[4096];
};

/*
 * Runs build/NAME (next to the test runner) with args (NULL-terminated),
 * capturing both streams; SIGTERM after stop_after_ms if that is positive.
 * False (and a failed test) if it could not be started.
 */
bool run_build_binary(struct cli_result *res, const char *name, const char *const *args,
		      int stop_after_ms);

/* Runs build/isnguard with args (NULL-terminated), capturing both streams. */
bool run_cli(struct cli_result *res, const char *const *args);

/* The same for a command that runs until stopped: SIGTERM after stop_after_ms. */
bool run_cli_stopped_after(struct cli_result *res, const char *const *args, int stop_after_ms);

#endif /* ISNGUARD_TEST_CLI_RUN_H */
