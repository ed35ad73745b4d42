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

# shellcheck source=scripts/results.sh
. "$here/results.sh"

# The unit tests pin maps as the CLI does, on the bpffs at /sys/fs/bpf; a
# fresh machine may not have it mounted yet (the CLI mounts it on attach).
if ! mountpoint -q /sys/fs/bpf; then
	echo "isnguard tests: mounting the bpffs at /sys/fs/bpf"
	mount -t bpf bpf /sys/fs/bpf -o mode=0700 || exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT

if [ "${UNIT:-1}" != 0 ]; then
	echo "== verifier budget"
	"$build/verifier_budget" "$build/isnguard.bpf.o" | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	results_add "$out" "isnguard tests: the verifier budget"

	echo "== unit tests"
	# shellcheck disable=SC2086
	"$build/test_runner" ${TEST_ARGS:-} | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	results_add "$out" "isnguard tests: the unit suite"
fi

if [ "${E2E:-1}" != 0 ]; then
	echo "== end-to-end tests"
	# shellcheck disable=SC2086
	ISNGUARD=$(readlink -f "$build/isnguard") TCP_XFER=$(readlink -f "$build/tcp_xfer") \
		SYN_FLOOD=$(readlink -f "$build/syn_flood") XDP_PASS_OBJ=$(readlink -f "$build/xdp_pass.bpf.o") \
		bash "$here/../tests/e2e/run.sh" ${E2E_ARGS:-} | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	results_add "$out" "isnguard tests: the end-to-end suite"
fi

results_end
