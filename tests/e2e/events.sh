# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of the datapath's events, sourced by run.sh (same
# topology, same helpers): `isnguard monitor --json` through a bounded SYN
# flood in auto mode, and the exporter's journal of the same events. The
# journal is a systemd-journald of the test's own, in a mount namespace of
# its own (a tmpfs /run) beside the exporter, so the host's journal (if any)
# is never touched; journalctl reads it there.

JOURNALD=${JOURNALD:-/lib/systemd/systemd-journald}

# The exporter in A's namespace on 127.0.0.1:$EXPORTER_PORT, with a journald
# of its own in a private mount namespace (its /run a tmpfs): the events it
# journals land there. BG_PIDS[exporter] is the exporter (exec'd into).
exporter_with_journal_start() {
	local i
	require_cmd journalctl unshare
	[ -x "$JOURNALD" ] || skip "no systemd-journald ($JOURNALD)"
	# shellcheck disable=SC2016 # the inner bash expands them, from its arguments
	nsenter --net="/run/netns/$NS_A" -- unshare -m --propagation private -- bash -c '
		mount -t tmpfs isng-e2e-run /run || exit 1
		mkdir -p /run/systemd/journal /run/log/journal
		"$0" >"$1/journald.log" 2>&1 &
		for ((i = 0; i < 100; i++)); do
			[ -S /run/systemd/journal/socket ] && break
			sleep 0.1
		done
		[ -S /run/systemd/journal/socket ] || { echo "journald did not start" >&2; exit 1; }
		exec env ISNGUARD_PIN_DIR="$2" "$3" exporter --listen "127.0.0.1:$4"' \
		"$JOURNALD" "$E2E_WORK" "$PIN_DIR" "$ISNGUARD" "$EXPORTER_PORT" \
		>"$E2E_WORK/exporter.out" 2>"$E2E_WORK/exporter.err" &
	BG_PIDS[exporter]=$!
	for ((i = 0; i < 100; i++)); do
		grep -q 'serving' "$E2E_WORK/exporter.err" 2>/dev/null && break
		kill -0 "${BG_PIDS[exporter]}" 2>/dev/null || fail "exporter: $(cat "$E2E_WORK/exporter.err")"
		sleep 0.1
	done
	wait_listen "$NS_A" "$EXPORTER_PORT"
	log "exporter (pid ${BG_PIDS[exporter]}) with its own journald: $(cat "$E2E_WORK/exporter.err")"
}

# journalctl on the exporter's journald, as JSON lines of the exporter's entries.
exporter_journal() {
	nsenter --mount="/proc/${BG_PIDS[exporter]}/ns/mnt" -- journalctl --no-pager -o json \
		SYSLOG_IDENTIFIER=isnguard-exporter "_PID=${BG_PIDS[exporter]}"
}

# `isnguard monitor --json` in A's namespace, ready when it says it reads.
monitor_start() {
	local i
	# Not through bg_start: its function runs in a subshell, and the TERM is monitor's.
	ISNGUARD_PIN_DIR=$PIN_DIR nsenter --net="/run/netns/$NS_A" -- "$ISNGUARD" monitor --json \
		>"$E2E_WORK/monitor.out" 2>"$E2E_WORK/monitor.err" &
	BG_PIDS[monitor]=$!
	for ((i = 0; i < 100; i++)); do
		grep -q 'reading' "$E2E_WORK/monitor.err" && return 0
		bg_running monitor || fail "monitor exited: $(cat "$E2E_WORK/monitor.err")"
		sleep 0.1
	done
	fail "monitor not reading after 10 s: $(cat "$E2E_WORK/monitor.err")"
}

monitor_stop() {
	kill -TERM "${BG_PIDS[monitor]}"
	bg_wait monitor
}

# The first line of monitor.out (JSON lines) with event EVENT, or "".
monitor_event() { # EVENT
	jq -c --arg e "$1" 'select(.event == $e)' "$E2E_WORK/monitor.out" | head -n 1
}

# The line of EVENT is there, on $SP_PORT, with its rate against the threshold.
assert_monitor_rate_event() { # EVENT MIN_RATE MAX_RATE
	local line rate
	line=$(monitor_event "$1")
	[ -n "$line" ] || fail "monitor --json shows no $1: $(cat "$E2E_WORK/monitor.out")"
	assert_eq "$(jq -r .port <<<"$line")" "$SP_PORT" "$1's port"
	assert_eq "$(jq -r .threshold <<<"$line")" 1000 "$1's threshold"
	assert_eq "$(jq -r .interface <<<"$line")" "$IF_A" "$1's interface"
	rate=$(jq -r .rate <<<"$line")
	((rate >= $2 && rate <= $3)) || fail "$1's rate $rate is not in $2..$3: $line"
	[[ $(jq -r .time <<<"$line") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]] ||
		fail "$1's time is not ISO 8601 with ms: $line"
	log "ok: $line"
}

# Auto mode with a threshold of 1000 SYN/s: a 3-second flood of 50k SYN/s
# switches the port's cookies on and a quiet second off again; monitor --json
# shows the flood's start and end and both switches, in order, with the
# rates that decided, and a key rotation meanwhile. The exporter, running at
# the same time, journals the same events with their priorities and fields.
test_monitor_and_journal_show_the_auto_switch_and_the_flood() {
	local order events line n
	require_cmd jq
	sp_setup --synproxy-mode auto --syn-threshold 1000
	exporter_with_journal_start
	monitor_start
	sp_server 2 60
	sp_client_exchange	# below the threshold: no event
	sp_flood 4 syn 3 1000000 50000 >"$E2E_WORK/flood.out" &
	BG_PIDS[flood]=$!
	sleep 1
	isng key rotate >/dev/null || fail "isng key rotate"
	wait "${BG_PIDS[flood]}" || fail "syn_flood: $(cat "$E2E_WORK/flood.out")"
	unset "BG_PIDS[flood]"
	log "flood: $(cat "$E2E_WORK/flood.out")"
	sleep 1.2
	sp_client_exchange	# a quiet second later: its SYN switches cookies off
	bg_wait server
	sleep 0.5
	monitor_stop
	log "monitor --json: $(cat "$E2E_WORK/monitor.out")"
	isng_log_counters
	assert_monitor_rate_event flood_start 1001 1000000
	assert_monitor_rate_event auto_on 1001 1000000
	assert_monitor_rate_event auto_off 0 499
	assert_monitor_rate_event flood_end 0 499
	order=$(jq -r 'select(.event | test("^(auto_|flood_)")) | .event' "$E2E_WORK/monitor.out" |
		tr '\n' ' ')
	assert_eq "$order" "flood_start auto_on auto_off flood_end " "the order of the rate events"
	line=$(monitor_event key_rotated)
	[ -n "$line" ] || fail "monitor --json shows no key_rotated"
	assert_eq "$(jq -r .key_generation <<<"$line")" \
		"$(isng status --json | jq -r .key_generation)" "key_rotated's generation"
	assert_eq "$(isng_counter events_lost)" 0 "events_lost"

	# The exporter's journal: the same events, their priorities and fields.
	sleep 0.5
	exporter_journal >"$E2E_WORK/journal.json" || fail "journalctl: $(cat "$E2E_WORK/journal.json")"
	log "journal: $(jq -c '{e: .ISNGUARD_EVENT, p: .PRIORITY, m: .MESSAGE}' "$E2E_WORK/journal.json")"
	for events in 'flood_start 4' 'auto_on 5' 'auto_off 5' 'flood_end 5' 'key_rotated 6'; do
		n=$(jq -r --arg e "${events% *}" --arg p "${events#* }" \
			'select(.ISNGUARD_EVENT == $e and .PRIORITY == $p) | .MESSAGE' \
			"$E2E_WORK/journal.json" | wc -l)
		assert_eq "$n" 1 "journal entries ISNGUARD_EVENT=${events% *} PRIORITY=${events#* }"
	done
	assert_eq "$(jq -r 'select(.ISNGUARD_EVENT == "auto_on") | .PORT' "$E2E_WORK/journal.json")" \
		"$SP_PORT" "the journal's auto_on PORT"
	assert_eq "$(jq -r 'select(.ISNGUARD_EVENT == "auto_on") | .RATE' "$E2E_WORK/journal.json")" \
		"$(jq -r .rate <<<"$(monitor_event auto_on)")" "the journal's auto_on RATE, as monitor's"
}

# Without state, monitor says so in one line and exits 1; --json makes it JSON.
test_monitor_not_attached_is_one_line_error() {
	local out rc=0
	topo_up
	out=$(ISNGUARD_PIN_DIR=$PIN_DIR nsenter --net="/run/netns/$NS_A" -- "$ISNGUARD" monitor 2>&1) ||
		rc=$?
	assert_eq "$rc" 1 "monitor's exit status with nothing attached"
	assert_eq "$(wc -l <<<"$out")" 1 "lines of monitor's error"
	[[ $out == *"monitor: not attached"* ]] || fail "monitor's error: $out"
	rc=0
	out=$(ISNGUARD_PIN_DIR=$PIN_DIR nsenter --net="/run/netns/$NS_A" -- "$ISNGUARD" monitor \
		--json 2>/dev/null) || rc=$?
	assert_eq "$rc" 1 "monitor --json's exit status with nothing attached"
	assert_eq "$(jq -r .error <<<"$out" | grep -c 'not attached')" 1 "monitor --json's error: $out"
	log "ok: $out"
}
