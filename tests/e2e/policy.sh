# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of the SYN policy (bpf/syn_policy.h), sourced by run.sh
# with synproxy.sh's topology and helpers: the SYN-ACK limit per source
# under a single-source flood, a many-source flood answered in full, the
# deny and allow lists, monitor mode, and the config file's keys. Floods
# come from M (syn_flood on m0) with sources in subnets assigned to M's
# loopback (10.200.9.0/24 and fd00:200:9::/120 of synproxy.sh, 10.201.0.0/16
# here); the SYN-ACKs to them are counted, then dropped, in M's input hook
# (pol_synacks). Every flood is bounded in time and count.

POL_MANY_NET4=10.201.0.0/16
POL_SOURCE4=10.200.9.5

# The SYN-ACKs that reach M for the flood subnets, counted before synproxy.sh's
# table drops them (and the many-source /16's dropped here: M has no socket).
pol_count_synacks() {
	ip -n "$NS_M" addr add 10.201.0.1/16 dev lo
	in_ns "$NS_M" nft -f - <<-EOF || fail "nft in $NS_M"
	table inet isng_e2e_policy {
		chain input {
			type filter hook input priority -10; policy accept;
			ip daddr { 10.200.9.0/24, $POL_MANY_NET4 } tcp flags & (syn | ack) == syn | ack counter
			ip6 daddr fd00:200:9::/120 tcp flags & (syn | ack) == syn | ack counter
			ip daddr $POL_MANY_NET4 drop
		}
	}
	EOF
}

pol_synacks() {
	in_ns "$NS_M" nft list chain inet isng_e2e_policy input | grep -o 'packets [0-9]*' |
		awk '{ n += $2 } END { print n + 0 }'
}

# syn_flood from SRC (a prefix of M's loopback) at A's port: like sp_flood,
# with its own sources. Prints syn_flood's line. Args: SRC SECONDS COUNT [RATE].
pol_flood() {
	local src=$1 secs=$2 count=$3 rate=${4:-0} dst=$A4 mac smac
	[[ "$src" == *:* ]] && dst=$A6
	mac=$(ip -n "$NS_A" -br link show "$IF_A" | awk '{print $3}')
	smac=$(ip -n "$NS_M" -br link show "$IF_MA" | awk '{print $3}')
	in_ns "$NS_M" taskset -c 0 "$SYN_FLOOD" --iface "$IF_MA" --dst-mac "$mac" --src-mac "$smac" \
		--src "$src" --dst "$dst" --dport "$SP_PORT" --type syn --duration "$secs" \
		--count "$count" --rate "$rate"
}

# The SYNs and the seconds of pol_flood's line: "sent N SYNs in S s: ...".
pol_sent() { sed -n 's/^sent \([0-9]*\) SYNs.*/\1/p' <<<"$1"; }
pol_secs() { sed -n 's/^sent [0-9]* SYNs in \([0-9.]*\) s.*/\1/p' <<<"$1"; }
pol_rate() { sed -n 's/.*: \([0-9]*\) per second.*/\1/p' <<<"$1"; }

# Flood from one source at full speed for 3 s: A answers its burst and its
# rate, no more, whatever the flood's rate; every other SYN is dropped
# unanswered and counted. Without the limit every SYN drew a SYN-ACK.
# Counted where they arrive, on M, and by isnguard's counters.
pol_single_source_flood() {
	local flood sent secs rate synacks sent_ack limited most
	sp_server 1 60
	pol_count_synacks
	flood=$(pol_flood "$POL_SOURCE4/32" 3 3000000)
	log "flood: $flood"
	sleep 0.5	# the last SYN-ACKs on their way
	isng_log_counters
	sent=$(pol_sent "$flood") secs=$(pol_secs "$flood") rate=$(pol_rate "$flood")
	synacks=$(pol_synacks)
	sent_ack=$(isng_counter cookie_sent)
	limited=$(isng_counter syn_source_limited)
	# The burst, and the rate over the flood's time: a jiffy of the coarse clock and a
	# tenth of a second of delivery after the flooder's last SYN are slack.
	most=$(awk -v s="$secs" 'BEGIN { printf "%d", 2000 + 1000 * (s + 0.1) + 10 }')
	log "figure: single-source flood: $sent SYNs in $secs s ($rate/s), $synacks SYN-ACKs" \
		"reached the flooder's side, cookie_sent $sent_ack, syn_source_limited $limited" \
		"(limit: burst 2000 + 1000/s = at most $most)"
	[ "$synacks" -le "$most" ] ||
		fail "SYN-ACKs at the flooder's side: expected at most $most, actual $synacks"
	[ "$sent_ack" -le "$most" ] || fail "cookie_sent: expected at most $most, actual $sent_ack"
	assert_ge "$sent_ack" 2000 "cookie_sent (the burst at least)"
	assert_ge "$synacks" 1900 "SYN-ACKs at the flooder's side (the burst, a few lost on the veth)"
	assert_ge "$limited" $((sent - most - sent / 100)) "syn_source_limited (the rest of the flood)"
	assert_gt "$(isng stats --json | json_num source_buckets)" 0 \
		"stats: source_buckets holding the flood's source"
	isng status | grep -q "buckets: [1-9][0-9]* of 8192 held" ||
		fail "status does not show the bucket table's fill: $(isng status | grep buckets)"
	if [ "${rate:-0}" -lt 100000 ]; then
		log "NOTE: the flood reached only $rate SYN/s on this machine"
	else
		log "ok: flood rate $rate SYN/s (>= 100000)"
	fi
}

test_policy_single_source_flood_draws_at_most_the_limit() {
	sp_setup --source-rate 1000 --source-burst 2000
	pol_single_source_flood
}

test_policy_single_source_flood_draws_at_most_the_limit_tc_syn_hook() {
	SP_PEER_XDP=0 sp_setup --ingress tc --syn-hook tc --source-rate 1000 --source-burst 2000
	pol_single_source_flood
}

# A flood from 65536 sources at a few SYNs each, under the default limits:
# every SYN is answered, none limited, while the bucket table (8192
# buckets) turns over eight times.
test_policy_many_source_flood_answered_in_full() {
	local flood sent synacks
	sp_setup
	sp_server 1 60
	pol_count_synacks
	flood=$(pol_flood "$POL_MANY_NET4" 10 200000)
	log "flood: $flood"
	sleep 0.5
	isng_log_counters
	sent=$(pol_sent "$flood")
	synacks=$(pol_synacks)
	log "figure: many-source flood: $sent SYNs from $POL_MANY_NET4, cookie_sent" \
		"$(isng_counter cookie_sent), $synacks SYN-ACKs reached the flooder's side," \
		"syn_source_limited $(isng_counter syn_source_limited), buckets made" \
		"$(isng_counter syn_source_bucket_made), evicted $(isng_counter syn_source_bucket_evicted)"
	assert_eq "$(isng_counter syn_source_limited)" 0 "syn_source_limited"
	assert_eq "$(isng_counter cookie_sent)" "$sent" "cookie_sent: every SYN answered"
	assert_ge "$synacks" $((sent * 99 / 100)) "SYN-ACKs at the flooder's side (99%: the veth may drop some)"
}

# deny: a prefix's SYNs are dropped before any work, counted, never answered,
# IPv4 and IPv6; allow: B's SYN goes to A's own listener, whose own SYN-ACK
# (rewritten at egress, not a cookie) opens the connection.
test_policy_denied_prefix_dropped_allowed_reaches_the_listener() {
	local flood
	sp_setup
	sp_server 1 60
	pol_count_synacks
	isng prefix add deny 10.200.9.0/24 fd00:200:9::/120 || fail "prefix add deny"
	flood=$(pol_flood 10.200.9.0/24 5 2000 20000)
	log "flood: $flood"
	flood=$(pol_flood fd00:200:9::/120 5 1000 20000)
	log "flood: $flood"
	sleep 0.3
	isng_log_counters
	log "figure: denied: $(isng_counter syn_prefix_denied) of 3000 SYNs dropped, cookie_sent" \
		"$(isng_counter cookie_sent), $(pol_synacks) SYN-ACKs at the flooder's side"
	assert_eq "$(isng_counter syn_prefix_denied)" 3000 "syn_prefix_denied"
	assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent"
	assert_eq "$(pol_synacks)" 0 "SYN-ACKs at the flooder's side"
	isng prefix list | grep -q "deny: 2 prefixes, 3000 SYNs dropped" ||
		fail "prefix list: $(isng prefix list)"
	isng prefix add allow 10.200.2.0/24 --json | grep -q '"changed":1' || fail "prefix add allow"
	sp_client_exchange
	bg_wait server
	assert_received "$E2E_WORK/server.out" "$SEED_B" 1K "A received from B"
	assert_ge "$(isng_counter syn_prefix_allowed)" 1 "syn_prefix_allowed (B's SYN)"
	assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent (B's SYN not answered by isnguard)"
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 0 "cookie_handshake_to_stack"
	assert_ge "$(isng_counter synack_rewritten)" 1 "A's own SYN-ACK, rewritten at egress"
	log "figure: allowed: B's connection made by A's own SYN-ACK (synack_rewritten" \
		"$(isng_counter synack_rewritten), syn_prefix_allowed $(isng_counter syn_prefix_allowed))"
	isng prefix del 10.200.2.0/24 >/dev/null || fail "prefix del"
	isng prefix list --json | grep -q '"allow":\[\]' || fail "allow list not empty: $(isng prefix list --json)"
}

# Monitor mode on every port: status says so; B's connection is made by A's
# own SYN-ACK; a single-source flood over the limit and a denied prefix are
# counted (would answer, would limit, would drop) and every SYN reaches A,
# which answers them itself. Off again, the limit and the list apply.
test_policy_monitor_mode_counts_and_passes() {
	local flood synacks
	sp_setup --synproxy-monitor all --source-rate 100 --source-burst 100
	ip -n "$NS_A" route add 10.200.9.0/24 via "$M4A"	# A's own SYN-ACKs to the flood
	isng status | head -n 1 | grep -q "MONITOR mode on ports $SP_PORT" ||
		fail "status: no monitor mode in its first line: $(isng status | head -n 1)"
	sp_server 2 60	# B's connection now, and one at the end: a listener through the floods
	pol_count_synacks
	sp_client_exchange
	assert_ge "$(isng_counter syn_monitor_would_answer)" 1 "syn_monitor_would_answer (B's SYN)"
	assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent"
	assert_ge "$(isng_counter synack_rewritten)" 1 "A's own SYN-ACK, rewritten at egress"
	flood=$(pol_flood "$POL_SOURCE4/32" 5 3000 20000)
	log "flood: $flood"
	sleep 0.5
	synacks=$(pol_synacks)
	isng_log_counters
	log "figure: monitor: 3000 SYNs from one source: would answer" \
		"$(isng_counter syn_monitor_would_answer), would limit" \
		"$(isng_counter syn_monitor_would_limit), cookie_sent $(isng_counter cookie_sent)," \
		"$synacks SYN-ACKs (A's own) at the flooder's side"
	assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent"
	assert_ge "$(isng_counter syn_monitor_would_limit)" 2500 "syn_monitor_would_limit"
	# A random port of the flood's that meets one of its earlier tuples finds A's
	# socket (SYN-RECV) and is the stack's, as without monitor mode.
	assert_eq "$(( $(isng_counter syn_monitor_would_answer) + $(isng_counter syn_monitor_would_limit) +
		$(isng_counter syn_passed_socket) ))" 3001 "SYNs decided: B's and the flood's"
	assert_eq "$(isng_counter syn_source_limited)" 0 "syn_source_limited (none dropped)"
	assert_ge "$synacks" 2900 "A's own SYN-ACKs to the flood: every SYN reached A"
	isng prefix add deny 10.200.9.0/24 >/dev/null || fail "prefix add deny"
	flood=$(pol_flood 10.200.9.0/24 5 500 20000)
	log "flood: $flood"
	assert_eq "$(isng_counter syn_monitor_would_drop)" 500 "syn_monitor_would_drop (denied)"
	assert_eq "$(isng_counter syn_prefix_denied)" 0 "syn_prefix_denied (none dropped)"
	isng synproxy --monitor off | grep -q MONITOR && fail "synproxy --monitor off still says MONITOR"
	isng status | head -n 1 | grep -q MONITOR && fail "status still says MONITOR"
	flood=$(pol_flood 10.200.9.0/24 5 500 20000)
	log "flood: $flood"
	assert_eq "$(isng_counter syn_prefix_denied)" 500 "syn_prefix_denied once monitor mode is off"
	sp_client_exchange
	bg_wait server
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "B's second connection, by a cookie"
}

# The config file's keys: apply sets the limits, monitor mode and both lists;
# a second apply changes nothing; an edited list is made the file's.
test_policy_config_keys_applied_and_a_second_apply_changes_nothing() {
	local conf=$E2E_WORK/isnguard.conf out
	sp_topology
	cat >"$conf" <<-EOF
	[global]
	synproxy = $SP_PORT,443
	synproxy-monitor = 443
	source-rate = 500
	source-burst = 800
	source-prefix6 = 56
	total-rate = 100000
	deny = 198.51.100.0/24
	deny = 2001:db8:dead::/48
	allow = 192.0.2.0/24

	[interface $IF_A]
	EOF
	isng config check "$conf" || fail "config check"
	isng apply -c "$conf" || fail "apply"
	out=$(isng apply -c "$conf") || fail "second apply"
	[[ "$out" == *"nothing to change"* ]] || fail "second apply changed something: $out"
	out=$(isng synproxy --json)
	for kv in '"source_rate":500' '"source_burst":800' '"source_prefix6":56' \
		'"total_rate":100000' '"monitor":"ports"' '"monitor_ports":"443"'; do
		[[ "$out" == *"$kv"* ]] || fail "synproxy --json has no $kv: $out"
	done
	out=$(isng prefix list --json)
	assert_eq "$out" '{"deny":["198.51.100.0/24","2001:db8:dead::/48"],"denied_syns":0,"allow":["192.0.2.0/24"],"allowed_syns":0}' \
		"prefix list --json"
	sed -i '/^deny = 198/d; /^allow/d; s/^source-rate = 500/source-rate = 600/' "$conf"
	out=$(isng apply -c "$conf") || fail "apply of the edited file"
	log "apply: $out"
	[[ "$out" == *"prefix lists: 0 prefixes added, 2 removed"* ]] || fail "apply's plan: $out"
	assert_eq "$(isng prefix list --json)" '{"deny":["2001:db8:dead::/48"],"denied_syns":0,"allow":[],"allowed_syns":0}' \
		"prefix list --json after the edit"
	isng synproxy --json | grep -q '"source_rate":600' || fail "source-rate not applied"
	out=$(isng apply -c "$conf") || fail "apply again"
	[[ "$out" == *"nothing to change"* ]] || fail "apply after the edit, again, changed something: $out"
}

# Ports only watched need a SYN hook, not SYN-ACKs that reach the peer: on a
# veth whose peer has no XDP program, native XDP in monitor mode on every
# port is attached as asked and status calls it served (exit 0, MONITOR in
# its first line), where the same attach answering them is refused; turning
# monitor mode off there is refused too, since nothing would answer.
test_policy_monitor_only_ports_served_by_xdp_without_a_peer_program() {
	local out rc=0
	SP_PEER_XDP=0 sp_topology
	isng attach "$IF_A" --ingress xdp --synproxy "$SP_PORT" --synproxy-monitor all ||
		fail "attach --ingress xdp in monitor mode on a veth whose peer has no XDP"
	out=$(isng status) || rc=$?
	log "status: $(head -n 1 <<<"$out") (exit $rc)"
	assert_eq "$rc" 0 "status exit code"
	[[ "$(head -n 1 <<<"$out")" == "ok: "*"MONITOR mode on ports $SP_PORT"* ]] ||
		fail "status's first line: $(head -n 1 <<<"$out")"
	[[ "$out" == *"SYNs watched (monitor mode): xdp"* ]] || fail "status's interface line: $out"
	sp_server 1 30
	sp_client_exchange
	assert_ge "$(isng_counter syn_monitor_would_answer)" 1 "syn_monitor_would_answer"
	rc=0
	out=$(isng synproxy --monitor off 2>&1) || rc=$?
	assert_eq "$rc" 1 "synproxy --monitor off where no interface would answer: exit code"
	[[ "$out" == *"no attached interface would answer SYN cookies"* ]] || fail "its error: $out"
	assert_eq "$(isng status >/dev/null; echo $?)" 0 "status exit code, still only watching"
}
