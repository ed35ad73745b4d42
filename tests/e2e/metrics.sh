# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of isnguard for Prometheus, sourced by run.sh (same
# topology, same helpers): the exporter's /metrics against `stats --json`
# through docs/operations.md's mapping, promtool on real scrapes and on
# contrib/prometheus's rules. The exporter listens on 127.0.0.1 in A's
# namespace; topo_down (the EXIT trap) stops it with the namespace's other
# processes.

EXPORTER_PORT=10946	# the exporter's default port (user/exporter.h)

require_prometheus_tools() {
	require_cmd promtool curl jq
}

# The exporter in A's namespace on 127.0.0.1:$EXPORTER_PORT, through nsenter
# so it finds the state on our mount namespace's bpffs.
exporter_start() {
	ISNGUARD_PIN_DIR=$PIN_DIR nsenter --net="/run/netns/$NS_A" -- "$ISNGUARD" exporter \
		--listen "127.0.0.1:$EXPORTER_PORT" >"$E2E_WORK/exporter.out" 2>"$E2E_WORK/exporter.err" &
	BG_PIDS[exporter]=$!
	wait_listen "$NS_A" "$EXPORTER_PORT"
	log "exporter: $(cat "$E2E_WORK/exporter.err")"
}

scrape() { # FILE
	in_ns "$NS_A" curl -sf --max-time 10 "http://127.0.0.1:$EXPORTER_PORT/metrics" >"$1" ||
		fail "GET /metrics from the exporter"
}

# promtool check metrics on FILE: no error and no lint problem.
assert_promtool_metrics() { # FILE
	local out rc=0
	out=$(promtool check metrics <"$1" 2>&1) || rc=$?
	[ "$rc" = 0 ] && [ -z "$out" ] || fail "promtool check metrics (exit $rc): $out"
	log "ok: promtool check metrics on a scrape of $(grep -c '^isnguard_' "$1") series: exit 0, nothing to say"
}

# "counter series" for each row of docs/operations.md's counter tables:
# the counter (or derived value) `stats --json` shows, and its metric.
doc_metric_map() {
	awk -F'|' '/^## / { on = ($0 == "## Counters") } on && /^\| `[a-z0-9_]+` \|/ {
		c = $2; m = $4; gsub(/[ `]/, "", c); gsub(/[ `]/, "", m); print c, m }' \
		"$E2E_ROOT/docs/operations.md"
}

# A series' value in a scrape; for a family in seconds, the nanoseconds it says.
series_value() { # SCRAPE SERIES
	local v
	v=$(awk -v s="$2" '$1 == s { print $2 }' "$1")
	[ -n "$v" ] || return 0
	if [[ $2 == *_seconds_total* ]]; then
		[[ $v =~ ^([0-9]+)\.([0-9]{9})$ ]] || fail "$2: '$v' is not seconds to the ns"
		v=$((10#${BASH_REMATCH[1]} * 1000000000 + 10#${BASH_REMATCH[2]}))
	fi
	echo "$v"
}

# Every counter and derived value of stats --json (read BEFORE and AFTER the
# scrape) has a row in the docs' mapping, its series is in the scrape with
# a value between the two reads, and every counter series of the scrape is
# some row's.
assert_scrape_matches_stats() { # BEFORE AFTER SCRAPE
	local before=$1 after=$2 scrape=$3 name series v b a lo hi missing='' checked=0
	local -A series_of=() counter_of=()
	while read -r name series; do
		series_of[$name]=$series
		counter_of[$series]=$name
	done < <(doc_metric_map)
	for name in $(jq -r '.counters | keys[]' "$before") flows_present flows_max flow_evicted; do
		series=${series_of[$name]:-}
		if [ -z "$series" ]; then
			missing+=" $name(no row in docs/operations.md)"
			continue
		fi
		v=$(series_value "$scrape" "$series")
		if [ -z "$v" ]; then
			missing+=" $name($series not in the scrape)"
			continue
		fi
		b=$(jq -r --arg n "$name" '.counters[$n] // .[$n]' "$before")
		a=$(jq -r --arg n "$name" '.counters[$n] // .[$n]' "$after")
		lo=$((b < a ? b : a)) hi=$((b < a ? a : b))
		((v >= lo && v <= hi)) || fail "$name: $series is $v, stats --json said $b before the scrape and $a after"
		checked=$((checked + 1))
	done
	[ -z "$missing" ] || fail "stats --json shows what /metrics does not:$missing"
	log "ok: $checked values of stats --json each equal their series in /metrics (docs/operations.md's mapping)"
	while read -r series _; do
		[ -n "${counter_of[$series]:-}" ] || missing+=" $series"
	done < <(grep -E '^isnguard_[a-z_]+_total[{ ]' "$scrape")
	[ -z "$missing" ] || fail "counter series in /metrics that docs/operations.md maps no counter to:$missing"
	log "ok: every counter series of /metrics is a counter of docs/operations.md's tables"
}

# Every slot of the state's isn_stats set to a value of its own on every
# CPU, (index + 1) * 1000 + 7: a series that holds another counter's value
# cannot then fall between that counter's two reads.
plant_distinct_counters() {
	local count i v
	require_cmd bpftool
	count=$(grep -cE 'X\(STAT_[A-Z0-9_]+,' "$E2E_ROOT/include/isnguard.h")
	for ((i = 0; i < count; i++)); do
		v=$(((i + 1) * 1000 + 7))
		bpftool map update pinned "$PIN_DIR/isn_stats" key $((i & 255)) $((i >> 8)) 0 0 \
			value $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) 0 0 0 0 0 ||
			fail "bpftool map update isn_stats key $i"
	done
	log "planted $count distinct counters"
}

# Traffic through A: a cookie handshake to the SYN proxy's port, and a
# transfer on a port it does not protect (keyed ISNs, translated segments).
metrics_traffic() {
	sp_server 1 30
	sp_client_exchange
	bg_wait server
	transfer "$NS_A" "$NS_B" "$A4:$SP_OTHER_PORT" 1M 30
	bg_wait client
	bg_wait server
}

test_exporter_agrees_with_stats_through_the_docs_mapping() {
	require_prometheus_tools
	sp_setup
	metrics_traffic
	exporter_start
	isng stats --json >"$E2E_WORK/before.json" || fail "stats --json"
	scrape "$E2E_WORK/metrics.txt"
	isng stats --json >"$E2E_WORK/after.json" || fail "stats --json"
	assert_promtool_metrics "$E2E_WORK/metrics.txt"
	assert_scrape_matches_stats "$E2E_WORK/before.json" "$E2E_WORK/after.json" "$E2E_WORK/metrics.txt"
	assert_eq "$(series_value "$E2E_WORK/metrics.txt" isnguard_synproxy_local_handshakes_total)" 1 \
		"isnguard_synproxy_local_handshakes_total after one cookie handshake"
	assert_gt "$(series_value "$E2E_WORK/metrics.txt" 'isnguard_packets_rewritten_total{rewrite="seq"}')" 0 \
		"isnguard_packets_rewritten_total{rewrite=\"seq\"} after a transfer"
	assert_eq "$(series_value "$E2E_WORK/metrics.txt" isnguard_up)" 1 "isnguard_up"
	assert_eq "$(awk '$1 ~ /^isnguard_synproxy_port_cookies_active/' "$E2E_WORK/metrics.txt")" \
		"isnguard_synproxy_port_cookies_active{port=\"$SP_PORT\"} 1" "the protected port's cookies"
	# Each counter a value of its own: the mapping holds series for series.
	plant_distinct_counters
	isng stats --json >"$E2E_WORK/before.json" || fail "stats --json"
	scrape "$E2E_WORK/planted.txt"
	isng stats --json >"$E2E_WORK/after.json" || fail "stats --json"
	assert_scrape_matches_stats "$E2E_WORK/before.json" "$E2E_WORK/after.json" "$E2E_WORK/planted.txt"
	# Detached, the exporter keeps answering, and says there is nothing to read.
	isng detach "$IF_A" >/dev/null || fail "detach"
	scrape "$E2E_WORK/detached.txt"
	assert_eq "$(series_value "$E2E_WORK/detached.txt" isnguard_up)" 0 "isnguard_up once detached"
	assert_promtool_metrics "$E2E_WORK/detached.txt"
}

test_prometheus_rules_pass_promtool() {
	local out
	require_cmd promtool
	out=$(promtool check rules "$E2E_ROOT"/contrib/prometheus/*.yml 2>&1) ||
		fail "promtool check rules: $out"
	log "$out"
	out=$(cd "$E2E_ROOT/tests/prometheus" && promtool test rules isnguard.rules.test.yml 2>&1) ||
		fail "promtool test rules: $out"
	log "$out"
}
