#!/usr/bin/env bash
# make test: the unit suite (BPF_PROG_TEST_RUN on crafted inputs). Its last line is "N passed, N failed".
set -uo pipefail
build=${1:-build}

if [ "$(id -u)" -ne 0 ]; then
	echo "isnguard tests: BPF_PROG_TEST_RUN needs root (run 'sudo make test')" >&2
	exit 1
fi
exec "$build/test_runner" ${TEST_ARGS:-}
