# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of what an operator runs: the SYN proxy's default on a
# veth whose peer has no XDP program, status as a health check, a restart
# over kept state, detach undoing attach, and apply with a config file and
# a key file across a simulated reboot. Sourced by run.sh.

OP_PORT=8080
ISN_TICK=isnguard-tick	# ISN_TICK_DEV (include/isnguard.h)

# A's server on OP_PORT answering each connection with a line, for LIMIT seconds.
op_server() { # LIMIT
	require_cmd python3
	bg_start server "$NS_A" timeout "$1" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", '"$OP_PORT"'))
s.listen(128)
while True:
    c, _ = s.accept()
    c.sendall(b"hello\n")
    c.close()
'
	wait_listen "$NS_A" "$OP_PORT"
}

# How many of N connects from B to A's server got its line.
op_connects() { # N
	local i ok=0
	for ((i = 0; i < $1; i++)); do
		in_ns "$NS_B" timeout 3 bash -c "exec 3<>/dev/tcp/$A4/$OP_PORT && head -n 1 <&3" |
			grep -q hello && ok=$((ok + 1))
	done
	echo "$ok"
}

# Status's exit code, its first line logged.
op_status_rc() {
	local rc=0 out
	out=$(isng status) || rc=$?
	log "status: $(echo "$out" | head -n 1) (exit $rc)" >&2
	echo "$rc"
}

test_synproxy_default_on_a_veth_without_peer_xdp_answers_every_connect() {
	local err
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	# a0's peer m0 has no XDP program: a native XDP_TX SYN-ACK would be dropped there.
	err=$(isng attach "$IF_A" --synproxy $OP_PORT 2>&1 >/dev/null) || fail "attach: $err"
	log "attach said: $err"
	[[ "$err" == *"veth peer $IF_MA has no XDP program"*"--syn-hook tc"* ]] ||
		fail "attach did not say that SYN cookies go to tc: '$err'"
	isng status --json | grep -q '"syn_hook":"tc"' || fail "status --json: no \"syn_hook\":\"tc\""
	op_server 60
	assert_eq "$(op_connects 20)" 20 "connects through the SYN proxy"
	assert_ge "$(isng_counter cookie_sent)" 20 "cookie SYN-ACKs sent"
	assert_eq "$(op_status_rc)" 0 "status exit code, all served"
}

test_synproxy_on_a_veth_without_peer_xdp_refuses_the_named_xdp_hook() {
	local rc=0 err
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	err=$(isng attach "$IF_A" --ingress xdp --synproxy $OP_PORT 2>&1) || rc=$?
	assert_eq "$rc" 1 "exit code of attach --ingress xdp --synproxy on such a veth"
	[[ "$err" == *"no XDP program"*"--syn-hook tc"* ]] || fail "the error names no fix: '$err'"
	isng status >/dev/null && fail "status says ok after a refused attach"
	assert_eq "$(op_status_rc)" 3 "status exit code after a refused attach"
}

test_status_after_detach_keep_state_and_a_restart_that_keeps_the_tick() {
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	isng attach "$IF_A" --synproxy $OP_PORT || fail "attach"
	in_ns "$NS_A" ip link show "$ISN_TICK" >/dev/null || fail "no $ISN_TICK after attach"
	assert_eq "$(op_status_rc)" 0 "status exit code while attached"
	isng detach --keep-state "$IF_A" || fail "detach --keep-state"
	assert_eq "$(op_status_rc)" 3 "status exit code after detach --keep-state"
	isng status | head -n 1 | grep -q '^not attached' || fail "status's first line"
	isng status --json | grep -q '"health":"not-attached"' || fail "status --json health"
	# Detach removed the clsact qdisc its attach made.
	in_ns "$NS_A" tc qdisc show dev "$IF_A" | grep -q clsact && fail "clsact left on $IF_A"
	# The documented restart: no options, the kept state's SYN proxy and its tick come back.
	isng attach "$IF_A" || fail "attach over kept state"
	in_ns "$NS_A" ip link show "$ISN_TICK" >/dev/null || fail "no $ISN_TICK after the restart"
	assert_eq "$(op_status_rc)" 0 "status exit code after the restart"
	op_server 60
	assert_eq "$(op_connects 5)" 5 "connects after the restart"
}

test_synproxy_refused_where_no_interface_would_answer_cookies() {
	local rc=0 err
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	# tc ingress without --synproxy loads no SYN hook: cookies switched on would reach nobody.
	isng attach "$IF_A" --ingress tc || fail "attach --ingress tc"
	err=$(isng synproxy $OP_PORT 2>&1) || rc=$?
	assert_eq "$rc" 1 "exit code of synproxy $OP_PORT with no SYN hook"
	[[ "$err" == *"no attached interface would answer SYN cookies ($IF_A: no SYN hook)"* ]] ||
		fail "synproxy's error: '$err'"
	isng synproxy | grep -q '^synproxy  off' || fail "the refused synproxy changed the settings"
	assert_eq "$(op_status_rc)" 0 "status exit code, the proxy still off"
}

test_status_degraded_by_a_missing_tick_and_a_gone_interface() {
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	isng attach "$IF_A" --synproxy $OP_PORT 2>/dev/null || fail "attach --synproxy"
	assert_eq "$(op_status_rc)" 0 "status exit code while all is served"
	in_ns "$NS_A" ip link del "$ISN_TICK" || fail "ip link del $ISN_TICK"
	assert_eq "$(op_status_rc)" 4 "status exit code without the tick"
	isng status | grep -q "problem: the resend tick is missing" || fail "status names no tick problem"
	isng status --json | grep -q '"health":"degraded"' || fail "status --json health"
	# Saying the ports again puts the tick back from the pinned tick program.
	isng synproxy $OP_PORT >/dev/null || fail "synproxy $OP_PORT"
	in_ns "$NS_A" ip link show "$ISN_TICK" >/dev/null || fail "synproxy did not make $ISN_TICK"
	assert_eq "$(op_status_rc)" 0 "status exit code with the tick back"
	# A second interface, then gone under isnguard.
	ip -n "$NS_A" link add x0 type veth peer name x1 || fail "veth x0"
	ip -n "$NS_A" link set x0 up
	ip -n "$NS_A" link set x1 up
	isng attach x0 --ingress tc --syn-hook tc || fail "attach x0"
	ip -n "$NS_A" link del x0 || fail "ip link del x0"
	assert_eq "$(op_status_rc)" 4 "status exit code with an interface gone"
	isng status | grep -q "problem: x0: the interface is gone" || fail "status names no gone interface"
	# As the problem line says: detach forgets it.
	isng detach x0 | grep -q "the interface is gone" || fail "detach x0 (gone)"
	assert_eq "$(op_status_rc)" 0 "status exit code once the gone interface is forgotten"
}

# One passive open to A; the SYN-ACK's ISN checked against KEY.
op_isn_is_keyed() { # KEY WHAT
	local before after seq
	capture_start "$NS_B" "$IF_B" "tcp port $PORT" "$E2E_WORK/b.pcap"
	before=$(mono_ns)
	transfer "$NS_A" "$NS_B" "$A4:$PORT" 64K 30 --local-port $CPORT
	bg_wait client
	after=$(mono_ns)
	bg_wait server
	capture_stop
	seq=$(syn_isn_from_capture "$E2E_WORK/b.pcap" "$A4")
	assert_isn "$seq" siphash "$1" "$A4:$PORT" "$B4:$CPORT" "$before" "$after"
	log "ok: $2"
}

test_apply_with_a_key_file_survives_a_simulated_reboot() {
	local key conf="$E2E_WORK/isnguard.conf" out ids_before ids_after
	topo_up
	key=$(new_key_file "$E2E_WORK/key")
	chmod 600 "$E2E_WORK/key"
	printf '[global]\nkey-file = %s\ntimeout-closed = 60\n\n[interface %s]\ningress = tc\n' \
		"$E2E_WORK/key" "$IF_A" >"$conf"
	isng config check "$conf" || fail "config check"
	isng apply --dry-run -c "$conf" | grep -q "attach $IF_A" || fail "apply --dry-run: no plan"
	in_ns "$NS_A" tc qdisc show dev "$IF_A" | grep -q clsact && fail "the dry run attached"
	isng apply -c "$conf" || fail "apply"
	ids_before=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	out=$(isng apply -c "$conf") || fail "second apply"
	[[ "$out" == *"nothing to change"* ]] || fail "second apply changed something: $out"
	ids_after=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	assert_eq "$ids_after" "$ids_before" "program ids after the second apply"
	assert_eq "$(isng status --json | json_num closed)" 60 "timeout-closed from the file"
	op_isn_is_keyed "$key" "the file's key on the wire"
	# A reboot: the pinned state and the attachment are gone; the service applies again.
	isng detach "$IF_A" || fail "detach"
	isng purge || fail "purge"
	assert_eq "$(op_status_rc)" 3 "status exit code with no state"
	isng apply -c "$conf" || fail "apply after the reboot"
	op_isn_is_keyed "$key" "the same key on the wire after the reboot"
	# A key file others can read is refused before anything changes.
	chmod 644 "$E2E_WORK/key"
	isng detach "$IF_A" || fail "detach (2)"
	isng apply -c "$conf" 2>"$E2E_WORK/apply.err" && fail "apply took a key file others can read"
	grep -q "readable by group or others" "$E2E_WORK/apply.err" || fail "no such error"
	in_ns "$NS_A" tc qdisc show dev "$IF_A" | grep -q clsact && fail "a refused apply attached"
	true
}

# One Exec line of the installed isnguard.service, its binary the build's, run in A.
op_unit_exec() { # UNIT_FILE KEY
	local line
	line=$(sed -n "s/^$2=//p" "$1")
	[ -n "$line" ] || fail "$2 missing from $1"
	log "$2: $line"
	# shellcheck disable=SC2086 # the unit's words, as systemd splits them
	set -- $line
	shift
	ISNGUARD_CONFIG=$OP_CONF isng "$@"
}

test_service_unit_start_reload_stop() {
	local prefix unit ids_before ids_after
	OP_CONF="$E2E_WORK/isnguard.conf"
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	prefix="$E2E_WORK/prefix"
	make -s -C "$E2E_ROOT" install PREFIX="$prefix" SYSCONFDIR="$prefix/etc" \
		>"$E2E_WORK/install.log" 2>&1 || fail "make install: $(tail -n 3 "$E2E_WORK/install.log")"
	unit="$prefix/lib/systemd/system/isnguard.service"
	require_cmd systemd-analyze
	systemd-analyze verify --man=no "$unit" >"$E2E_WORK/verify.log" 2>&1 ||
		fail "systemd-analyze verify: $(cat "$E2E_WORK/verify.log")"
	# tc hooks: the SYN proxy can then be switched on live (no XDP_TX on this veth).
	printf '[global]\ntimeout-closed = 30\n\n[interface %s]\ningress = tc\nsyn-hook = tc\n' \
		"$IF_A" >"$OP_CONF"
	op_unit_exec "$unit" ExecStart || fail "ExecStart"
	assert_eq "$(op_status_rc)" 0 "status after start"
	ids_before=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	# Reload with the SYN proxy on: a live change, no re-attach.
	sed -i "s/^timeout-closed = 30\$/&\nsynproxy = $OP_PORT/" "$OP_CONF"
	op_unit_exec "$unit" ExecReload | grep -q "synproxy always, ports $OP_PORT" || fail "ExecReload"
	ids_after=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	assert_eq "$ids_after" "$ids_before" "program ids after the reload"
	op_server 60
	assert_eq "$(op_connects 5)" 5 "connects through the SYN proxy the reload switched on"
	op_unit_exec "$unit" ExecStop || fail "ExecStop"
	assert_eq "$(op_status_rc)" 3 "status after stop (state kept)"
	op_unit_exec "$unit" ExecStart >/dev/null || fail "ExecStart again"
	assert_eq "$(op_status_rc)" 0 "status after the second start"
	assert_eq "$(isng status --json | json_num closed)" 30 "timeout-closed kept and applied"
	# Attached by another build (here: one before the build record): reload puts this
	# build's programs in place, without a detach; then nothing is left to change.
	ids_before=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	rm "$PIN_DIR/isn_builds" || fail "rm isn_builds"
	op_unit_exec "$unit" ExecReload | grep -q "replace $IF_A: this build's programs, in place" ||
		fail "ExecReload did not replace the other build's programs"
	ids_after=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	[ "$ids_after" != "$ids_before" ] || fail "the programs were not replaced ($ids_after)"
	op_unit_exec "$unit" ExecReload | grep -q "nothing to change" || fail "second reload changed"
	assert_eq "$(op_status_rc)" 0 "status after the replacing reload"
}

test_check_reports_the_veth_peer_and_an_attach_names_the_xdp_holder() {
	local out rc=0 err
	topo_up
	out=$(isng check "$IF_A") || fail "check $IF_A"
	[[ "$out" == *"veth peer        $IF_MA, without an XDP program"* ]] || fail "check: no veth peer line"
	[[ "$out" == *"note: veth peer $IF_MA has no XDP program"* ]] || fail "check: no note on the peer"
	isng check "$IF_A" --json | grep -q '"veth_peer_xdp":false' || fail "check --json: veth_peer_xdp"
	# Another tool's XDP program, without libxdp's dispatcher, on a0.
	ip -n "$NS_A" link set dev "$IF_A" xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags || fail "XDP_PASS on a0"
	isng check "$IF_A" --json | grep -q '"name":"xdp_pass","mode":"native"' ||
		fail "check --json: the XDP program on $IF_A"
	err=$(isng attach "$IF_A" 2>&1) || rc=$?
	assert_eq "$rc" 1 "exit code of an attach over another tool's XDP program"
	[[ "$err" == *"held by XDP program "*" (xdp_pass, native mode)"*"bpftool net show dev $IF_A"* ]] ||
		fail "the error names no holder: '$err'"
	in_ns "$NS_A" tc qdisc show dev "$IF_A" | grep -q clsact && fail "the failed attach left clsact"
	assert_eq "$(op_status_rc)" 3 "status exit code after the failed attach"
}

# What the completion offers after the words given (the last one being completed).
op_complete() { # WORDS...
	local script=$1
	shift
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _isnguard; echo "${COMPREPLY[*]}"' \
		_ "$script" "$@"
}

test_bash_completion_offers_each_command_its_own() {
	local script="$E2E_WORK/completion" got
	E2E_WORK=${E2E_WORK:-$(mktemp -d)}
	mkdir -p "$E2E_WORK"
	"$ISNGUARD" completion bash >"$script" || fail "isnguard completion bash"
	bash -n "$script" || fail "completion: syntax"
	got=$(op_complete "$script" isnguard attach --)
	[[ " $got " == *" --key-file "* && " $got " != *" --keep-state "* ]] ||
		fail "attach's options: '$got'"
	got=$(op_complete "$script" isnguard detach --)
	[[ " $got " == *" --keep-state "* && " $got " == *" --all "* ]] || fail "detach's options: '$got'"
	assert_eq "$(op_complete "$script" isnguard attach --synproxy-path "")" "auto local translate" \
		"attach --synproxy-path values"
	assert_eq "$(op_complete "$script" isnguard synproxy --path "")" "auto local translate" \
		"synproxy --path values"
	assert_eq "$(op_complete "$script" isnguard key "")" "rotate set" "key's words"
	assert_eq "$(op_complete "$script" isnguard config "")" "check example" "config's words"
	got=$(op_complete "$script" isnguard attach "")
	[[ " $got " == *" lo "* ]] || fail "attach's interfaces: '$got'"
}

# Segments A and B retransmitted because one was lost: all retransmissions
# less those the receiver reported as duplicates (DSACK), which prove the
# original arrived (a tail loss probe fired by a late ACK, say).
op_retrans() {
	local ns n=0
	for ns in "$NS_A" "$NS_B"; do
		n=$((n + $(nstat_get "$ns" TcpRetransSegs) - $(nstat_get "$ns" TcpExtTCPDSACKRecvSegs)))
	done
	echo "$n"
}

# A paced transfer through isnguard while the datapath is swapped in place
# (replace) or restarted (restart) three times; OP_RETRANS: the retransmissions.
op_upgrade_during_transfer() { # replace|restart
	local before after i ids_before ids_after
	setup_guarded
	TRANSFER_CPU=0
	in_ns "$NS_A" nstat -n
	in_ns "$NS_B" nstat -n
	before=$(op_retrans)
	ids_before=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	transfer "$NS_B" "$NS_A" "$B4:$PORT" 64M 100 --local-port $CPORT --rate 8M
	# The loads (the verifier's second a program) on the other CPU than the transfer's.
	taskset -pc 1 $BASHPID >/dev/null || fail "taskset"
	for i in 1 2 3; do
		sleep 0.3
		if [ "$1" = replace ]; then
			isng attach --replace "$IF_A" >/dev/null || fail "attach --replace ($i)"
		else
			isng detach --keep-state "$IF_A" >/dev/null || fail "detach --keep-state ($i)"
			isng attach "$IF_A" >/dev/null || fail "attach ($i)"
		fi
	done
	bg_running client || fail "the transfer ended before the upgrades were done: make it longer"
	bg_wait client
	bg_wait server
	assert_transfer_intact 64M client
	after=$(op_retrans)
	nstat_report "$NS_A" A
	nstat_report "$NS_B" B
	ids_after=$(isng status --json | grep -o '"ingress_prog_id":[0-9]*,"egress_prog_id":[0-9]*')
	[ "$ids_after" != "$ids_before" ] || fail "the programs were not replaced ($ids_after)"
	OP_RETRANS=$((after - before))
	log "figure: $1 x3 during a 64 MiB transfer at 8 MB/s: $OP_RETRANS segments retransmitted (less those DSACKed)"
}

test_upgrade_in_place_during_a_transfer_loses_nothing() {
	op_upgrade_during_transfer replace
	# Lossless veths, both ends on one CPU: a run without any upgrade loses nothing.
	# A restart (detach --keep-state, attach) in its place loses hundreds of segments.
	assert_eq "$OP_RETRANS" 0 "segments lost through three in-place upgrades"
}

# An in-place upgrade from a build whose source-bucket table had another
# size (16384 sets): the table, soft state, is made anew and pinned in the
# old one's place, and --replace goes on, where a layout change of state
# that matters (flows, counters) needs the detach and attach of an upgrade.
test_upgrade_in_place_over_a_bucket_table_of_another_size() {
	local out
	is_baseline && skip "needs the datapath (ISNG_BASELINE=1)"
	setup_guarded
	rm -f "$PIN_DIR/isn_syn_buckets"
	bpftool map create "$PIN_DIR/isn_syn_buckets" type array key 4 value 64 entries 16384 \
		name isn_syn_buckets || fail "bpftool: an old isn_syn_buckets"
	isng attach --replace "$IF_A" >"$E2E_WORK/replace.out" 2>&1 ||
		fail "attach --replace over an old bucket table: $(cat "$E2E_WORK/replace.out")"
	out=$(bpftool map show pinned "$PIN_DIR/isn_syn_buckets") || fail "bpftool map show isn_syn_buckets"
	[[ "$out" =~ "max_entries "([0-9]+) ]] && [ "${BASH_REMATCH[1]}" != 16384 ] ||
		fail "isn_syn_buckets still the old one: $out"
	log "ok: isn_syn_buckets made anew: max_entries ${BASH_REMATCH[1]}"
	assert_eq "$(isng stats --json | json_num source_buckets_max)" 8192 \
		"stats: source_buckets_max, the new table's"
}
