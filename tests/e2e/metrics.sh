# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of isnguard for Prometheus, sourced by run.sh (same
# topology, same helpers): the exporter's /metrics against `stats --json`
# through docs/operations.md's mapping, promtool on real scrapes and on
# contrib/prometheus's rules, and Debian's Prometheus server scraping the
# exporter every second through traffic and a bounded SYN flood. The
# exporter and Prometheus listen on 127.0.0.1 in A's namespace; topo_down
# (the EXIT trap) stops both with the namespace's other processes.

EXPORTER_PORT=10946	# the exporter's default port (user/exporter.h)
PROM_PORT=9090

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

# A series' value in a scrape, summed over its interfaces (the interface and
# netns labels of each attached interface's own series); for a family in
# seconds, the nanoseconds it says.
series_value() { # SCRAPE SERIES
	awk -v s="$2" '
		/^#/ { next }
		{
			key = $1
			gsub(/interface="[^"]*",netns="[0-9]*",?/, "", key)
			sub(/\{\}$/, "", key)
			if (key != s) next
			found = 1
			if (s ~ /_seconds_total/) {
				# mawk knows no {9}: nine digits spelled out
				if ($2 !~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]$/) {
					print "bad:" $2; bad = 1; exit
				}
				split($2, part, ".")
				whole += part[1]; nanos += part[2]
			} else
				sum += $2
		}
		END {
			if (!found || bad) exit
			if (s ~ /_seconds_total/) printf "%.0f\n", whole * 1e9 + nanos
			else printf "%.0f\n", sum
		}' "$1"
}

# Every counter and derived value of stats --json (read BEFORE and AFTER the
# scrape; not "interfaces", each interface's own counters, whose labelled
# series test_exporter_counts_each_interface_on_its_own compares) has a row
# in the docs' mapping, its series is in the scrape with
# a value between the two reads, and every counter series of the scrape is
# some row's.
assert_scrape_matches_stats() { # BEFORE AFTER SCRAPE
	local before=$1 after=$2 scrape=$3 name series v b a lo hi missing='' checked=0
	local -A series_of=() counter_of=()
	while read -r name series; do
		series_of[$name]=$series
		counter_of[$series]=$name
	done < <(doc_metric_map)
	for name in $(jq -r '.counters | keys[]' "$before") \
		$(jq -r 'keys[] | select(. != "time" and . != "counters" and . != "interfaces")' \
			"$before"); do
		series=${series_of[$name]:-}
		if [ -z "$series" ]; then
			missing+=" $name(no row in docs/operations.md)"
			continue
		fi
		v=$(series_value "$scrape" "$series")
		[[ $v == bad:* ]] && fail "$series: '${v#bad:}' is not seconds to the ns"
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
		series=$(sed -E 's/interface="[^"]*",netns="[0-9]*",?//; s/\{\}$//' <<<"$series")
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

# Debian's Prometheus in A's namespace on 127.0.0.1:$PROM_PORT, scraping the
# exporter every second with contrib/prometheus's rules, its TSDB in the
# work dir; ready when it says so.
prometheus_start() {
	local i
	require_cmd prometheus
	in_ns "$NS_A" ss -Hltn "sport = :$PROM_PORT" | grep -q . && PROM_PORT=19090
	cat >"$E2E_WORK/prometheus.yml" <<-EOF
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	  evaluation_interval: 1s
	rule_files:
	  - $E2E_ROOT/contrib/prometheus/isnguard.rules.yml
	scrape_configs:
	  - job_name: isnguard
	    static_configs:
	      - targets: ['127.0.0.1:$EXPORTER_PORT']
	EOF
	promtool check config "$E2E_WORK/prometheus.yml" >"$E2E_WORK/promtool-config.log" 2>&1 ||
		fail "promtool check config: $(cat "$E2E_WORK/promtool-config.log")"
	bg_start prometheus "$NS_A" prometheus --config.file="$E2E_WORK/prometheus.yml" \
		--storage.tsdb.path="$E2E_WORK/tsdb" --web.listen-address="127.0.0.1:$PROM_PORT" \
		--log.level=warn
	for ((i = 0; i < 300; i++)); do
		in_ns "$NS_A" curl -sf --max-time 2 "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null && break
		bg_running prometheus || fail "prometheus exited: $(tail -n 3 "$E2E_WORK/prometheus.err")"
		sleep 0.1
	done
	((i < 300)) || fail "prometheus not ready after 30 s: $(tail -n 3 "$E2E_WORK/prometheus.err")"
	log "prometheus ready on 127.0.0.1:$PROM_PORT after $((i / 10)).$((i % 10)) s"
}

# An instant query through the HTTP API: the first result's value, or "".
prom_query() { # EXPR
	local v
	v=$(in_ns "$NS_A" curl -sf --max-time 10 "http://127.0.0.1:$PROM_PORT/api/v1/query" \
		--data-urlencode "query=$1" | tee -a "$E2E_WORK/queries.log" |
		jq -r '.data.result[0].value[1] // empty')
	echo >>"$E2E_WORK/queries.log"
	log "query $1 -> ${v:-(no result)}" >&2
	echo "$v"
}

# A Prometheus series (the sum of its interfaces' with sum(), or one
# interface's) equals what stats --json said just before and just after
# (nothing moves it then), read there at the jq path.
assert_prom_equals_stats() { # EXPR JQ_PATH BEFORE AFTER
	local v b a
	v=$(prom_query "$1")
	b=$(jq -r "$2" "$3")
	a=$(jq -r "$2" "$4")
	[[ $v =~ ^[0-9]+$ ]] || fail "$1: Prometheus has no value ('$v')"
	[[ $b =~ ^[0-9]+$ && $a =~ ^[0-9]+$ ]] || fail "stats --json has no $2"
	((v >= b && v <= a)) || fail "$1: Prometheus says $v, stats --json $2 said $b, then $a"
	log "ok: $1 = $v in Prometheus, $2 = $b/$a in stats --json"
}

# A real Prometheus scrapes the exporter every second while B connects
# through the SYN proxy in auto mode, before, during and after a 3-second
# SYN flood that switches its cookies on; then `up` is 1 and the SYN and
# cookie series, summed and a0's own, equal stats --json, and the rules saw
# the flood; isnguard monitor --json showed its start and end and the
# switches on and off.
test_prometheus_scrapes_the_exporter_through_a_syn_flood() {
	local i up age flood rate pair series counter
	require_prometheus_tools
	sp_setup --synproxy-mode auto --syn-threshold 1000
	exporter_start
	prometheus_start
	for ((i = 0; i < 20; i++)); do
		up=$(prom_query 'up{job="isnguard"}' 2>/dev/null)
		[ "$up" = 1 ] && break
		sleep 0.5
	done
	assert_eq "$up" 1 'up{job="isnguard"} before the traffic'
	monitor_start	# tests/e2e/events.sh
	sp_server 3 60
	sp_client_exchange	# below the threshold: passed to A's listener
	sp_flood 4 syn 3 1000000 50000 >"$E2E_WORK/flood.out" &
	BG_PIDS[flood]=$!
	sleep 1.5
	sp_client_exchange	# cookies on: a cookie handshake, through the flood
	wait "${BG_PIDS[flood]}" || fail "syn_flood: $(cat "$E2E_WORK/flood.out")"
	unset "BG_PIDS[flood]"
	log "flood: $(cat "$E2E_WORK/flood.out")"
	sleep 1.2
	sp_client_exchange	# the flood over: its SYN switches cookies off
	bg_wait server
	isng_log_counters
	# The same run as isnguard monitor --json saw it: the flood and auto mode's switches.
	sleep 0.5
	monitor_stop
	assert_monitor_rate_event flood_start 1001 1000000
	assert_monitor_rate_event auto_on 1001 1000000
	assert_monitor_rate_event auto_off 0 499
	assert_monitor_rate_event flood_end 0 499
	scrape "$E2E_WORK/metrics.txt"
	assert_promtool_metrics "$E2E_WORK/metrics.txt"
	sleep 2
	isng stats --json >"$E2E_WORK/before.json" || fail "stats --json"
	# Two scrape intervals and a half: the latest sample is one taken after that read.
	sleep 2.5
	assert_eq "$(prom_query 'up{job="isnguard"}')" 1 'up{job="isnguard"}'
	assert_eq "$(prom_query 'isnguard_up{job="isnguard"}')" 1 'isnguard_up{job="isnguard"}'
	isng stats --json >"$E2E_WORK/after.json" || fail "stats --json"
	for pair in 'isnguard_synproxy_syns_total syn_seen' \
		'isnguard_synproxy_cookies_sent_total cookie_sent' \
		'isnguard_synproxy_syns_passed_total{reason="below_threshold"} syn_passed_auto' \
		'isnguard_synproxy_local_handshakes_total cookie_handshake_to_stack' \
		'isnguard_synproxy_auto_switches_total{state="on"} synproxy_auto_on'; do
		series=${pair% *} counter=${pair##* }
		assert_prom_equals_stats "sum($series)" ".counters.$counter" \
			"$E2E_WORK/before.json" "$E2E_WORK/after.json"
		# A's a0, the one interface: its own series, its own counters.
		if [[ $series == *"{"* ]]; then
			series="${series%\}},interface=\"$IF_A\"}"
		else
			series+="{interface=\"$IF_A\"}"
		fi
		assert_prom_equals_stats "$series" \
			".interfaces[] | select(.interface == \"$IF_A\") | .counters.$counter" \
			"$E2E_WORK/before.json" "$E2E_WORK/after.json"
	done
	assert_ge "$(jq -r '.counters.cookie_sent' "$E2E_WORK/after.json")" 1000 "cookie_sent after the flood"
	assert_ge "$(jq -r '.counters.cookie_handshake_to_stack' "$E2E_WORK/after.json")" 1 \
		"cookie handshakes during the flood"
	age=$(prom_query 'max(time() - timestamp(isnguard_synproxy_cookies_sent_total))')
	awk -v a="$age" 'BEGIN { exit !(a >= 0 && a <= 2) }' ||
		fail "the latest sample is $age s old: more than two scrape intervals"
	log "ok: the latest sample is $age s old (scrape interval 1 s)"
	# What Prometheus saw of the flood while it lasted.
	assert_eq "$(prom_query "max_over_time(isnguard_synproxy_port_cookies_active{port=\"$SP_PORT\"}[2m])")" 1 \
		"port $SP_PORT's cookies switched on by the flood, as Prometheus saw them"
	rate=$(prom_query 'max_over_time(instance:isnguard_synproxy_cookies_sent:rate1m[2m])')
	awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || fail "the recording rule's cookie rate: '$rate'"
	log "ok: instance:isnguard_synproxy_cookies_sent:rate1m peaked at $rate/s"
	assert_eq "$(prom_query 'count(ALERTS{alertname="IsnguardSynFlood"})')" 1 \
		"IsnguardSynFlood pending or firing after the flood"
}

# The series of one interface, from a scrape; "" when it has none.
interface_value() { # SCRAPE SERIES IFACE
	awk -v s="$2" -v iface="$3" '
		/^#/ { next }
		index($1, "interface=\"" iface "\",") {
			key = $1
			gsub(/interface="[^"]*",netns="[0-9]*",?/, "", key)
			sub(/\{\}$/, "", key)
			if (key == s) { print $2; exit }
		}' "$1"
}

# isnguard on two hosts at once, A's a0 and B's b0 in their own network
# namespaces, over one state, both with the SYN proxy: M's clients connect
# to each, and a bounded flood from M goes to A alone. Each interface's
# series says what went through it, and equals its counters in stats
# --json; their sums are the totals.
test_exporter_counts_each_interface_on_its_own() {
	local a_ns b_ns flood target iface pair series counter v b a
	require_prometheus_tools
	sp_setup
	ip -n "$NS_M" link set dev "$IF_MB" xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags ||
		fail "XDP_PASS program on $NS_M/$IF_MB"
	in_ns "$NS_B" sysctl -qw net.ipv4.tcp_syncookies=1
	ISNG_NS=$NS_B isng_attach "$IF_B" --synproxy "$SP_PORT"
	bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:$SP_PORT" --conns 2 --send 1K --recv \
		--seed "$SEED_A" --timeout 30
	bg_start server_b "$NS_B" "$TCP_XFER" server --listen "$B4:$SP_PORT" --conns 1 --send 1K \
		--recv --seed "$SEED_A" --timeout 30
	wait_listen "$NS_A" "$SP_PORT"
	wait_listen "$NS_B" "$SP_PORT"
	for target in "$A4" "$A4" "$B4"; do
		bg_start client "$NS_M" "$TCP_XFER" client --connect "$target:$SP_PORT" --send 1K --recv \
			--seed "$SEED_B" --timeout 30
		bg_wait client
	done
	bg_wait server
	bg_wait server_b
	flood=$(sp_flood 4 syn 1 5000 5000)
	log "flood to A: $flood"
	exporter_start
	isng stats --json >"$E2E_WORK/before.json" || fail "stats --json"
	scrape "$E2E_WORK/metrics.txt"
	isng stats --json >"$E2E_WORK/after.json" || fail "stats --json"
	ISNG_NS=$NS_B isng detach "$IF_B" >/dev/null || fail "detach $IF_B"
	assert_promtool_metrics "$E2E_WORK/metrics.txt"
	assert_scrape_matches_stats "$E2E_WORK/before.json" "$E2E_WORK/after.json" "$E2E_WORK/metrics.txt"
	a_ns=$(jq -r --arg i "$IF_A" '.interfaces[] | select(.interface == $i) | .netns_inode' "$E2E_WORK/after.json")
	b_ns=$(jq -r --arg i "$IF_B" '.interfaces[] | select(.interface == $i) | .netns_inode' "$E2E_WORK/after.json")
	[ -n "$a_ns" ] && [ -n "$b_ns" ] && [ "$a_ns" != "$b_ns" ] ||
		fail "stats --json's interfaces: a0 in netns '$a_ns', b0 in '$b_ns'"
	grep -q "^isnguard_synproxy_syns_total{interface=\"$IF_B\",netns=\"$b_ns\"} " "$E2E_WORK/metrics.txt" ||
		fail "no series of $IF_B in netns $b_ns"
	for iface in "$IF_A" "$IF_B"; do
		for pair in 'isnguard_synproxy_syns_total syn_seen' \
			'isnguard_synproxy_cookies_sent_total cookie_sent' \
			'isnguard_synproxy_local_handshakes_total cookie_handshake_to_stack' \
			'isnguard_packets_rewritten_total{rewrite="synack"} synack_rewritten'; do
			series=${pair% *} counter=${pair##* }
			v=$(interface_value "$E2E_WORK/metrics.txt" "$series" "$iface")
			b=$(jq -r --arg i "$iface" ".interfaces[] | select(.interface == \$i) | .counters.$counter" \
				"$E2E_WORK/before.json")
			a=$(jq -r --arg i "$iface" ".interfaces[] | select(.interface == \$i) | .counters.$counter" \
				"$E2E_WORK/after.json")
			[[ $v =~ ^[0-9]+$ ]] && ((v >= b && v <= a)) ||
				fail "$iface's $series is '$v', its $counter in stats --json $b, then $a"
			log "ok: $iface's $series = $v, its $counter in stats --json"
		done
	done
	assert_eq "$(interface_value "$E2E_WORK/metrics.txt" isnguard_synproxy_local_handshakes_total "$IF_A")" 2 \
		"cookie handshakes through $IF_A"
	assert_eq "$(interface_value "$E2E_WORK/metrics.txt" isnguard_synproxy_local_handshakes_total "$IF_B")" 1 \
		"cookie handshakes through $IF_B"
	assert_ge "$(interface_value "$E2E_WORK/metrics.txt" isnguard_synproxy_syns_total "$IF_A")" 4000 \
		"SYNs through $IF_A, the flood's"
	assert_eq "$(interface_value "$E2E_WORK/metrics.txt" isnguard_synproxy_syns_total "$IF_B")" 1 \
		"SYNs through $IF_B, its one client's"
	# A restart over kept state counts on in the interface's own set.
	isng detach --keep-state "$IF_A" >/dev/null || fail "detach --keep-state $IF_A"
	isng_attach "$IF_A" --synproxy "$SP_PORT"
	assert_ge "$(isng stats --json | jq --arg i "$IF_A" '.interfaces[] | select(.interface == $i) |
		.counters.syn_seen')" 5000 "$IF_A's syn_seen after detach --keep-state and attach"
}
