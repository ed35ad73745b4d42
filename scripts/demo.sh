#!/usr/bin/env bash
# make demo: isnguard on the job. A protected namespace talks TCP to a peer
# through a router with 1% loss; the peer sees the keyed ISN, not the host's;
# the data arrives intact; a spoofed SYN flood is absorbed by SYN cookies while
# real clients connect; then the reference ISNs under each hash, the BPF
# functions agreeing with them, and what everything costs per packet.
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
trap topo_down EXIT
log() { :; }	# the demo narrates itself
cli=$ISNGUARD

echo "== 1. A protected host (namespace A) talks to a peer (B) through a router (M, 1% loss)"
topo_up
key=$(new_key_file "$E2E_WORK/key")
isng attach "$IF_A" 2>/dev/null
isng key set --from-file "$E2E_WORK/key" 2>/dev/null
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
isng flows 2>/dev/null | sed 's/^/   /'
bg_wait client >/dev/null
bg_wait server >/dev/null
capture_stop
wire=$(syn_isn_from_capture "$E2E_WORK/syn.pcap" "$A4")
f=$(isn_f siphash "$key" "$A4:40001" "$B4:5001")
m=$(((wire - f) & 0xffffffff))
echo
echo "== 3. What the peer saw: the SYN's seq is M + F, F from the OpenSSL reference"
echo "   wire ISN on B      $wire"
echo "   F (siphash, key)   $f   ($cli isn --key $key --local $A4:40001 --remote $B4:5001)"
echo "   wire - F = M       $m, within [$(((before / 4000) & 0xffffffff)), $(((after / 4000) & 0xffffffff))] (4-us ticks around the connect)"
echo
echo "== 4. 50 MiB each way through 1% loss: SHA-256 on both ends"
exp_a=$("$TCP_XFER" expect --bytes 50M --seed 1 --conns 1 | awk '{print $4}')
exp_b=$("$TCP_XFER" expect --bytes 50M --seed 2 --conns 1 | awk '{print $4}')
got_b=$(awk '/^conn /{print $6}' "$E2E_WORK/server.out")
got_a=$(awk '/^conn /{print $6}' "$E2E_WORK/client.out")
[ "$got_b" = "$exp_a" ] && ok_b=intact || ok_b=CORRUPT
[ "$got_a" = "$exp_b" ] && ok_a=intact || ok_a=CORRUPT
echo "   A -> B  $got_b  $ok_b"
echo "   B -> A  $got_a  $ok_a"
echo "   packets dropped by the router: $(loss_dropped)"
echo
echo "== 5. The datapath's counters"
isng stats 2>/dev/null | grep -Ev ' 0$' | sed 's/^/   /'
isng detach "$IF_A" >/dev/null 2>&1
loss_off

echo
echo "== 6. A SYN flood absorbed: SYN cookies on A's port 5001, 5 s of spoofed SYNs from M"
# XDP_TX reaches M through the veth only when M's end has an XDP program too (test set-up).
ip -n "$NS_M" link set dev "$IF_MA" xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags
ip -n "$NS_M" addr add 10.200.9.1/24 dev lo
in_ns "$NS_M" nft add table inet flood
in_ns "$NS_M" nft add chain inet flood input '{ type filter hook input priority 0; }'
in_ns "$NS_M" nft add rule inet flood input ip daddr 10.200.9.0/24 drop
in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
isng attach "$IF_A" --synproxy 5001 2>/dev/null | sed 's/^/   /'
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
bg_wait client >/dev/null
bg_wait server >/dev/null
wait "$flood"
echo "   flood from M: $(cat "$E2E_WORK/flood.out")"
echo "   meanwhile B completed $(grep -c '^conn ' "$E2E_WORK/client.out") of 500 connections, 64 KiB each way"
echo "   A's own SYN queue: $(in_ns "$NS_A" ss -Htn state syn-recv 'sport = :5001' | wc -l) SYN-RECV sockets," \
	"TcpExtSyncookiesSent $(nstat_get "$NS_A" TcpExtSyncookiesSent)," \
	"TcpExtListenOverflows $(nstat_get "$NS_A" TcpExtListenOverflows)"
isng stats 2>/dev/null | grep -E 'syn_seen|cookie_|synproxy' | grep -Ev ' 0$' | sed 's/^/   /'
isng synproxy 2>/dev/null | sed 's/^/   /'
isng detach "$IF_A" >/dev/null 2>&1

echo
echo "== 7. Reference ISNs of a few tuples under each hash, with the same key (ISN = M + F)"
printf '   %-8s %-20s %-20s %10s %10s %10s\n' hash local remote F M ISN
for hash in siphash md5 none; do
	for pair in "10.0.0.1:80 10.0.0.2:40000" "10.0.0.1:80 10.0.0.2:40001" \
		    "[2001:db8::1]:443 [2001:db8::2]:51000"; do
		# shellcheck disable=SC2086 # split the pair into its two endpoints
		set -- $pair
		out=$("$cli" isn --hash "$hash" --key "$key" --local "$1" --remote "$2" --json)
		printf '   %-8s %-20s %-20s %10s %10s %10s\n' "$hash" "$1" "$2" \
			"$(json_num f <<<"$out")" "$(json_num m <<<"$out")" "$(json_num isn <<<"$out")"
	done
done
echo "   Neighbouring ports get unrelated F under siphash and md5; 'none' is the clock alone."
echo
echo "== 8. The BPF hash functions agree with OpenSSL (random keys and tuples)"
"$build/test_runner" differential | sed 's/^/   /'
echo
echo "== 9. Cost per call and per packet in BPF"
"$build/bench" --repeat 500000 --rounds 5
[ "$ok_a" = intact ] && [ "$ok_b" = intact ]
