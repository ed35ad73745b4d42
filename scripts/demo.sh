#!/usr/bin/env bash
# make demo: isnguard on the job. A protected namespace talks TCP to a peer
# through a router with 1% loss; the peer sees the keyed ISN, not the host's;
# the data arrives intact; a spoofed SYN flood is absorbed by SYN cookies while
# real clients connect; then the reference ISNs under each hash, the BPF
# functions agreeing with them, and what everything costs per packet.
#
# Every claim it makes is checked: "ok" and the claim, or "FAIL", the claim
# and why, on one line. A step the rest stands on (attach, the topology, a
# transfer) stops the demo when it fails. The last line is "N passed,
# N failed" of the checks; the exit status is 1 if any failed.
set -uo pipefail
build=$(readlink -f "${1:-build}")
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "isnguard demo: needs root for BPF and network namespaces (run 'sudo make demo')" >&2
	exit 1
fi

export ISNGUARD="$build/isnguard" TCP_XFER="$build/tcp_xfer" E2E_SUFFIX=demo$$
# shellcheck source=tests/e2e/lib.sh
. "$root/tests/e2e/lib.sh"
log() { :; }	# the demo narrates itself
cli=$ISNGUARD
checks_passed=0 checks_failed=0

ok() {
	checks_passed=$((checks_passed + 1))
	echo "   ok    $*"
}

miss() {
	checks_failed=$((checks_failed + 1))
	echo "   FAIL  $*"
}

# A miss the rest of the demo stands on: it stops here.
stop() {
	miss "$*"
	exit 1
}

# lib.sh's helpers fail or skip by these; a demo cannot skip a claim.
fail() { stop "$*"; }
skip() { stop "cannot run: $*"; }

finish() {
	local rc=$?
	trap - EXIT
	topo_down
	if [ "$rc" -ne 0 ] && [ "$checks_failed" -eq 0 ]; then
		# Ended by something no check caught (a signal, a shell error).
		miss "the demo ended unexpectedly (exit status $rc)"
	fi
	echo
	echo "$checks_passed passed, $checks_failed failed"
	[ "$checks_failed" -eq 0 ] || exit 1
	exit 0
}
trap finish EXIT

# Runs CMD with its stdout into FILE; stops the demo, naming WHAT and the
# last line of CMD's stderr, if it fails. Its stderr is shown either way.
step_to() { # FILE WHAT CMD...
	local out=$1 what=$2 rc err=$E2E_WORK/step.err
	shift 2
	"$@" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		sed 's/^/   /' "$err" >&2
		return 0
	fi
	sed 's/^/   /' "$out"
	sed '$d; s/^/   /' "$err" >&2
	stop "$what: $(tail -n 1 "$err") (exit status $rc)"
}

# The same with CMD's stdout shown, indented.
step() { # WHAT CMD...
	step_to "$E2E_WORK/step.out" "$@"
	sed 's/^/   /' "$E2E_WORK/step.out"
}

# Waits for a process of bg_start, shows its stderr; stops the demo if it failed.
wait_for() { # NAME
	local rc=0
	wait "${BG_PIDS[$1]}" || rc=$?
	unset "BG_PIDS[$1]"
	sed 's/^/   /' "$E2E_WORK/$1.err"
	[ "$rc" -eq 0 ] || stop "$1 exited $rc: $(tail -n 1 "$E2E_WORK/$1.err")"
}

is_num() { [[ "$1" =~ ^[0-9]+$ ]]; }

check_ge() { # ACTUAL MIN WHAT
	if is_num "$1" && [ "$1" -ge "$2" ]; then
		ok "$3: $1 (>= $2)"
	else
		miss "$3: expected >= $2, got '$1'"
	fi
}

check_eq() { # ACTUAL EXPECTED WHAT
	if [ "$1" = "$2" ]; then
		ok "$3: $1"
	else
		miss "$3: expected '$2', got '$1'"
	fi
}

# Each connection in OUT (tcp_xfer output) received BYTES of one of the
# streams 0..CONNS-1 of SEED, each once: SHA-256 as `tcp_xfer expect` says.
received_intact() { # OUT SEED BYTES CONNS
	local expected actual
	expected=$("$TCP_XFER" expect --bytes "$3" --seed "$2" --conns "$4" | awk '{print $4}' | sort)
	actual=$(awk '/^conn / {print $6}' "$1" | sort)
	[ -n "$actual" ] && [ "$expected" = "$actual" ]
}

# A flow's field from `isnguard flows --json`, the flow named by its ends.
flow_field() { # JSON LOCAL REMOTE FIELD
	tr '{' '\n' <<<"$1" | grep -F "\"local\":\"$2\",\"remote\":\"$3\"" | json_num "$4"
}

echo "== 1. A protected host (namespace A) talks to a peer (B) through a router (M, 1% loss)"
topo_up
key=$(new_key_file "$E2E_WORK/key")
step "attach isnguard to A's $IF_A (XDP ingress, tc egress)" isng attach "$IF_A"
step "set the key" isng key set --from-file "$E2E_WORK/key"
echo "   isnguard attached to A's $IF_A, key $key (set with 'isnguard key set')"
loss_on 1

capture_start "$NS_B" "$IF_B" "tcp[tcpflags] & tcp-syn != 0" "$E2E_WORK/syn.pcap"
bg_start server "$NS_B" "$TCP_XFER" server --listen "$B4:5001" --send 50M --seed 2
wait_listen "$NS_B" 5001
before=$(mono_ns)
bg_start client "$NS_A" "$TCP_XFER" client --connect "$B4:5001" --local-port 40001 \
	--send 50M --recv --seed 1
sleep 0.5
after=$(mono_ns)
echo
echo "== 2. The flow as isnguard tracks it (host ISN -> wire ISN)"
step "isnguard flows" isng flows
flows=$(isng flows --json)
flow_host_isn=$(flow_field "$flows" "$A4:40001" "$B4:5001" host_isn)
flow_wire_isn=$(flow_field "$flows" "$A4:40001" "$B4:5001" wire_isn)
if is_num "$flow_wire_isn"; then
	ok "isnguard tracks $A4:40001 -> $B4:5001"
	if [ "$flow_host_isn" != "$flow_wire_isn" ]; then
		ok "the host's ISN $flow_host_isn leaves as $flow_wire_isn"
	else
		miss "the host's ISN $flow_host_isn leaves unchanged"
	fi
else
	miss "isnguard tracks $A4:40001 -> $B4:5001: no such flow in 'isnguard flows --json'"
fi
wait_for client
wait_for server
capture_stop
wire=$(syn_isn_from_capture "$E2E_WORK/syn.pcap" "$A4")
is_num "$wire" || stop "A's SYN seen on B: none in the capture"
f=$(isn_f siphash "$key" "$A4:40001" "$B4:5001")
is_num "$f" || stop "F from 'isnguard isn': got '$f'"
m=$(((wire - f) & 0xffffffff))
lo=$(((before / 4000) & 0xffffffff))
hi=$(((after / 4000) & 0xffffffff))
echo
echo "== 3. What the peer saw: the SYN's seq is M + F, F from the OpenSSL reference"
echo "   wire ISN on B      $wire"
echo "   F (siphash, key)   $f   ($cli isn --key $key --local $A4:40001 --remote $B4:5001)"
echo "   wire - F = M       $m"
# Modulo 2^32, as the clock wraps (RFC 6528 section 3).
if (( ((m - lo) & 0xffffffff) <= ((hi - lo) & 0xffffffff) )); then
	ok "M $m is within [$lo, $hi] (4-us ticks around the connect)"
else
	miss "M $m is not within [$lo, $hi] (4-us ticks around the connect): B saw another ISN than M + F"
fi
check_eq "$wire" "$flow_wire_isn" "the wire ISN on B is the one 'isnguard flows' showed"
echo
echo "== 4. 50 MiB each way through 1% loss: SHA-256 on both ends"
if received_intact "$E2E_WORK/server.out" 1 50M 1; then
	ok "A -> B  $(awk '/^conn /{print $6}' "$E2E_WORK/server.out")  intact"
else
	miss "A -> B: B did not receive A's 50 MiB intact: $(grep '^conn ' "$E2E_WORK/server.out")"
fi
if received_intact "$E2E_WORK/client.out" 2 50M 1; then
	ok "B -> A  $(awk '/^conn /{print $6}' "$E2E_WORK/client.out")  intact"
else
	miss "B -> A: A did not receive B's 50 MiB intact: $(grep '^conn ' "$E2E_WORK/client.out")"
fi
check_ge "$(loss_dropped)" 1 "packets dropped by the router"
echo
echo "== 5. The datapath's counters"
step_to "$E2E_WORK/stats.out" "isnguard stats" isng stats
grep -Ev ' 0$' "$E2E_WORK/stats.out" | sed 's/^/   /'
stats=$(isng stats --json)
check_ge "$(json_num syn_rewritten <<<"$stats")" 1 "syn_rewritten"
check_ge "$(json_num seq_translated <<<"$stats")" 1 "seq_translated"
check_ge "$(json_num ack_translated <<<"$stats")" 1 "ack_translated"
check_ge "$(json_num flow_created <<<"$stats")" 1 "flow_created"
step_to /dev/null "detach isnguard from A's $IF_A" isng detach "$IF_A"
loss_off

echo
echo "== 6. A SYN flood absorbed: SYN cookies on A's port 5001, 5 s of spoofed SYNs from M"
# XDP_TX reaches M through the veth only when M's end has an XDP program too (test set-up).
step "XDP_PASS program on M's $IF_MA" \
	ip -n "$NS_M" link set dev "$IF_MA" xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags
step "the flood's sources on M" ip -n "$NS_M" addr add 10.200.9.1/24 dev lo
step "nft table on M" in_ns "$NS_M" nft add table inet flood
step "nft chain on M" in_ns "$NS_M" nft add chain inet flood input \
	'{ type filter hook input priority 0; }'
step "nft rule on M" in_ns "$NS_M" nft add rule inet flood input ip daddr 10.200.9.0/24 drop
# A route back to the spoofed sources: without one, A's stack drops the
# flood's SYNs unanswered (counting only TcpExtListenDrops), isnguard or
# not, and its untouched SYN queue below would prove nothing.
step "A's route to the flood's sources" ip -n "$NS_A" route add 10.200.9.0/24 via "$M4A"
step "SYN cookies on in A" in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
step "attach isnguard to A's $IF_A with --synproxy 5001" isng attach "$IF_A" --synproxy 5001
bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:5001" --conns 500 --send 64K --recv \
	--seed 2 --timeout 60
wait_listen "$NS_A" 5001
amac=$(ip -n "$NS_A" -br link show "$IF_A" | awk '{print $3}')
mmac=$(ip -n "$NS_M" -br link show "$IF_MA" | awk '{print $3}')
in_ns "$NS_M" taskset -c 0 "$build/syn_flood" --iface "$IF_MA" --dst-mac "$amac" \
	--src-mac "$mmac" --src 10.200.9.0/24 --dst "$A4" --dport 5001 --duration 5 \
	--count 100000000 >"$E2E_WORK/flood.out" &
flood=$!
sleep 1
bg_start client "$NS_B" taskset -c 1 "$TCP_XFER" client --connect "$A4:5001" --parallel 500 \
	--send 64K --recv --seed 1 --timeout 60
wait_for client
wait_for server
wait "$flood" || stop "the flood from M: syn_flood exited $?"
flood_sent=$(sed -n 's/^sent \([0-9]*\) .*/\1/p' "$E2E_WORK/flood.out")
completed=$(grep -c '^conn ' "$E2E_WORK/client.out")
syn_recv=$(in_ns "$NS_A" ss -Htn state syn-recv 'sport = :5001' | wc -l)
cookies_sent=$(nstat_get "$NS_A" TcpExtSyncookiesSent)
overflows=$(nstat_get "$NS_A" TcpExtListenOverflows)
listen_drops=$(nstat_get "$NS_A" TcpExtListenDrops)
echo "   flood from M: $(cat "$E2E_WORK/flood.out")"
echo "   meanwhile B completed $completed of 500 connections, 64 KiB each way"
echo "   A's own SYN queue: $syn_recv SYN-RECV sockets, TcpExtSyncookiesSent ${cookies_sent:-0}," \
	"TcpExtListenOverflows ${overflows:-0}"
step_to "$E2E_WORK/stats.out" "isnguard stats" isng stats
grep -E 'syn_seen|cookie_|synproxy' "$E2E_WORK/stats.out" | grep -Ev ' 0$' | sed 's/^/   /'
stats=$(isng stats --json)
step "isnguard synproxy" isng synproxy
check_ge "$flood_sent" 1 "SYNs the flood sent"
check_eq "$completed" 500 "connections B completed"
if received_intact "$E2E_WORK/client.out" 2 64K 500 &&
	received_intact "$E2E_WORK/server.out" 1 64K 500; then
	ok "64 KiB each way intact on all 500 connections (SHA-256)"
else
	miss "64 KiB each way on 500 connections: some arrived damaged or not at all (SHA-256)"
fi
check_eq "$syn_recv" 0 "SYN-RECV sockets on A's port 5001"
check_eq "${cookies_sent:-0}" 0 "TcpExtSyncookiesSent on A"
check_eq "${overflows:-0}" 0 "TcpExtListenOverflows on A"
check_eq "${listen_drops:-0}" 0 "TcpExtListenDrops on A"
# The flood met isnguard, not A's stack; the bar for cookies is the end-to-end test's.
is_num "$flood_sent" && check_ge "$(json_num syn_seen <<<"$stats")" "$flood_sent" \
	"SYNs isnguard saw (every one the flood sent, and B's)"
check_ge "$(json_num cookie_sent <<<"$stats")" 100000 "cookie SYN-ACKs isnguard sent"
step_to /dev/null "detach isnguard from A's $IF_A" isng detach "$IF_A"

echo
echo "== 7. Reference ISNs of a few tuples under each hash, with the same key (ISN = M + F)"
printf '   %-8s %-20s %-20s %10s %10s %10s\n' hash local remote F M ISN
declare -A ref_f=()
sum_ok=1
for hash in siphash md5 none; do
	for pair in "10.0.0.1:80 10.0.0.2:40000" "10.0.0.1:80 10.0.0.2:40001" \
		    "[2001:db8::1]:443 [2001:db8::2]:51000"; do
		# shellcheck disable=SC2086 # split the pair into its two endpoints
		set -- $pair
		out=$("$cli" isn --hash "$hash" --key "$key" --local "$1" --remote "$2" --json) ||
			stop "isnguard isn --hash $hash --local $1 --remote $2 failed"
		rf=$(json_num f <<<"$out") rm=$(json_num m <<<"$out") risn=$(json_num isn <<<"$out")
		printf '   %-8s %-20s %-20s %10s %10s %10s\n' "$hash" "$1" "$2" "$rf" "$rm" "$risn"
		if ! is_num "$rf" || ! is_num "$rm" || ! is_num "$risn" ||
			[ "$risn" -ne $(((rm + rf) & 0xffffffff)) ]; then
			sum_ok=0
		fi
		ref_f["$hash $2"]=$rf
	done
done
if [ $sum_ok = 1 ]; then
	ok "ISN = M + F (mod 2^32) on every row"
else
	miss "ISN = M + F (mod 2^32): not on every row"
fi
for hash in siphash md5; do
	if [ "${ref_f["$hash 10.0.0.2:40000"]}" != "${ref_f["$hash 10.0.0.2:40001"]}" ]; then
		ok "$hash: neighbouring ports 40000 and 40001 get different F"
	else
		miss "$hash: neighbouring ports 40000 and 40001 get the same F"
	fi
done
none_fs=
for remote in 10.0.0.2:40000 10.0.0.2:40001 "[2001:db8::2]:51000"; do
	none_fs+=${ref_f["none $remote"]}
done
if [ "$none_fs" = 000 ]; then
	ok "none: F = 0 on every row, the ISN is the clock alone"
else
	miss "none: F is not 0 on every row"
fi
echo
echo "== 8. The BPF hash functions agree with OpenSSL (random keys and tuples)"
"$build/test_runner" differential >"$E2E_WORK/differential.out"
rc=$?
sed 's/^/   /' "$E2E_WORK/differential.out"
result=$(tail -n 1 "$E2E_WORK/differential.out")
if [ "$rc" -eq 0 ] && [[ "$result" =~ ^[1-9][0-9]*\ passed,\ 0\ failed$ ]]; then
	ok "the BPF hash functions agree with OpenSSL ($result)"
else
	miss "the BPF hash functions agree with OpenSSL: test_runner exited $rc, '$result'"
fi
echo
echo "== 9. Cost per call and per packet in BPF"
"$build/bench" --repeat 500000 --rounds 5
rc=$?
if [ "$rc" -eq 0 ]; then
	ok "bench measured every case"
else
	miss "bench exited $rc (its error is above)"
fi
