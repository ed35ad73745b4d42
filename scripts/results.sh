# shellcheck shell=bash
# Sourced by scripts/run-tests.sh and scripts/test-kernels.sh: the totals of
# the suites' closing lines "N passed, N failed[, N skipped]", and the line
# that ends the whole run.
passed=0 failed=0 skipped=0 status=0

# FILE WHAT: adds FILE's last closing line to the totals. A suite that
# printed none (it crashed, or was killed): its "ok"/"FAIL"/"SKIP" lines,
# and one failure for the missing line.
results_add() {
	local file=$1 what=$2 line p f s
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$file" | tail -n 1 || true)
	if [ -z "$line" ]; then
		p=$(grep -c '^ok   ' "$file" || true)
		f=$(grep -c '^FAIL ' "$file" || true)
		s=$(grep -c '^SKIP ' "$file" || true)
		echo "$what printed no result line (counted from its lines: $p ok, $f FAIL," \
			"$s SKIP, and one failure for the missing line)" >&2
		passed=$((passed + p))
		failed=$((failed + f + 1))
		skipped=$((skipped + s))
		status=1
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + ${s:-0}))
}

# The run's last line, and its exit status: non-zero on any failure.
results_end() {
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ] || status=1
	exit "$status"
}
