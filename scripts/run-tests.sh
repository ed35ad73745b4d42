#!/usr/bin/env bash
# make test: the verifier budget (each program loaded alone, make
# check-verifier), the unit suite (BPF_PROG_TEST_RUN on crafted frames, CLI, ABI),
# then the end-to-end suite (real TCP stacks in network namespaces). Each
# prints its own result lines; the last line is the total, "N passed, N failed".
# TEST_ARGS filters unit tests, E2E_ARGS end-to-end ones; E2E=0 skips the
# latter (make test-unit), UNIT=0 the former (make test-e2e).
set -uo pipefail
build=${1:-build}
here=$(dirname "$(readlink -f "$0")")

if [ "$(id -u)" -ne 0 ]; then
	echo "isnguard tests: BPF and network namespaces need root (run 'sudo make test')" >&2
	exit 1
fi

passed=0 failed=0 skipped=0 status=0

# The unit tests pin maps as the CLI does, on the bpffs at /sys/fs/bpf; a
# fresh machine may not have it mounted yet (the CLI mounts it on attach).
if ! mountpoint -q /sys/fs/bpf; then
	echo "isnguard tests: mounting the bpffs at /sys/fs/bpf"
	mount -t bpf bpf /sys/fs/bpf -o mode=0700 || exit 1
fi

# Adds a suite's closing "N passed, N failed[, N skipped]" to the totals.
count() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		echo "isnguard tests: $2 printed no result line" >&2
		failed=$((failed + 1))
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + ${s:-0}))
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

if [ "${UNIT:-1}" != 0 ]; then
	echo "== verifier budget"
	"$build/verifier_budget" "$build/isnguard.bpf.o" | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	count "$out" "the verifier budget"

	echo "== unit tests"
	# shellcheck disable=SC2086
	"$build/test_runner" ${TEST_ARGS:-} | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	count "$out" "the unit suite"
fi

if [ "${E2E:-1}" != 0 ]; then
	echo "== end-to-end tests"
	# shellcheck disable=SC2086
	ISNGUARD=$(readlink -f "$build/isnguard") TCP_XFER=$(readlink -f "$build/tcp_xfer") \
		SYN_FLOOD=$(readlink -f "$build/syn_flood") XDP_PASS_OBJ=$(readlink -f "$build/xdp_pass.bpf.o") \
		bash "$here/../tests/e2e/run.sh" ${E2E_ARGS:-} | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	count "$out" "the end-to-end suite"
fi

if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] || status=1
exit "$status"
