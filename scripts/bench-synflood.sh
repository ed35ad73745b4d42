#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make bench, third part: one spoofed-SYN flood from a namespace F, answered
# in turn by isnguard --synproxy, by the kernel's own syncookies (no
# isnguard) and by nftables synproxy, in one of two topologies this script
# creates:
#
#   host     F - H on a veth pair; H is the protected host, listening on
#            port 5001, and answers (isnguard on H's veth, syncookies=2, nft
#            synproxy on H's input hook).
#   gateway  F - G - S (--gateway): G forwards between the clients (F) and
#            the server S listening on port 5001; isnguard (its translate
#            path, chosen by itself for a forwarded server) and nft synproxy
#            (forward hook) answer on G; the third row has nothing on G, S's
#            own syncookies (tcp_syncookies=1, the default) answer.
#
# For each: the flood rate sent, the SYN-ACKs per second that came back to F
# (an nft counter on F's input, which then drops them), the CPUs the whole
# machine kept busy (user, system, irq and softirq time from /proc/stat) and
# that divided by the SYN rate: CPU ns per SYN, generator and veth included,
# which is what each answer costs the machine. On a veth the receiver's work
# runs on the sender's CPU, so the generator is pinned to CPU 0 and the rate
# it reaches is itself a measure of the receiver.
#
# Then what the server's own stack (H, or S) saw of the same flood, from its
# namespace's counters (nstat; per-namespace CPU time cannot be told apart,
# so these stand for it): IP packets received (IpInReceives), SYN-RECV
# sockets sampled halfway through the flood, TcpPassiveOpens,
# TcpExtSyncookiesSent and TcpExtListenOverflows; and whether one real
# connection (256 KiB each way, echoed and compared; its time) completed
# through the answer just before the flood.
#
# Sources come only from 10.222.9.0/24, assigned to F's loopback; every
# flood lasts SECONDS (default 5).
#
# Usage: bench-synflood.sh [--gateway] BUILD_DIR [SECONDS]    (as root)
set -uo pipefail
# shellcheck source=scripts/nft-synproxy.sh
. "$(dirname "$(readlink -f "$0")")/nft-synproxy.sh"
gateway=0
if [ "${1:-}" = --gateway ]; then
	gateway=1
	shift
fi
build=$(readlink -f "${1:-build}")
secs=${2:-5}
suffix=$$
PIN=/sys/fs/bpf/isnguard-flood-$suffix
PORT=5001
F=isng-flood-f-$suffix
# A answers on AIF (facing F's FIF); S listens on DST. In host mode S is A.
if [ "$gateway" = 1 ]; then
	A=isng-flood-g-$suffix AIF=gf0 FIF=fg0 S=isng-flood-s-$suffix DST=10.222.1.2
	namespaces=("$F" "$A" "$S")
	title="SYN flood through a gateway F - G - S"
	on=" on G"
	own_cookies=1 own_name="nothing on G: S's syncookies=1"
	nft_hook=forward nft_name="nftables synproxy on G (forward)"
	rows=(row_isnguard row_nft row_own)	# S's SYN-RECV sockets outlive its row: last
else
	A=isng-flood-h-$suffix AIF=hf0 FIF=fh0 S=$A DST=10.222.0.1
	namespaces=("$F" "$A")
	title="SYN flood on a veth pair F - H"
	on=""
	own_cookies=2 own_name="kernel syncookies (syncookies=2)"
	nft_hook=input nft_name="nftables synproxy"
	rows=(row_isnguard row_own row_nft)
fi
tmp=$(mktemp -d)

cleanup() {
	ip netns pids "$S" 2>/dev/null | xargs -r kill 2>/dev/null
	for ns in "${namespaces[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$PIN" "$tmp"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench-synflood: needs root" >&2; exit 1; }
for f in isnguard syn_flood xdp_pass.bpf.o; do
	[ -e "$build/$f" ] || { echo "bench-synflood: no $build/$f (make bench builds it)" >&2; exit 1; }
done

# A veth pair NS1:IF1 (ADDR1) - NS2:IF2 (ADDR2), both ends up.
veth() {
	ip link add "$2" netns "$1" type veth peer name "$5" netns "$4" &&
		ip -n "$1" addr add "$3" dev "$2" && ip -n "$4" addr add "$6" dev "$5" &&
		ip -n "$1" link set "$2" up && ip -n "$4" link set "$5" up
}

for ns in "${namespaces[@]}"; do
	ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1
done
veth "$A" "$AIF" 10.222.0.1/24 "$F" "$FIF" 10.222.0.2/24 || exit 1
ip -n "$F" addr add 10.222.9.1/24 dev lo
ip -n "$A" route add 10.222.9.0/24 via 10.222.0.2 || exit 1
if [ "$gateway" = 1 ]; then
	veth "$A" gs0 10.222.1.1/24 "$S" sg0 10.222.1.2/24 || exit 1
	ip -n "$F" route add 10.222.1.0/24 via 10.222.0.1 || exit 1
	ip -n "$S" route add default via 10.222.1.1 || exit 1
	ip netns exec "$A" sysctl -qw net.ipv4.ip_forward=1 || exit 1
fi
ip -n "$F" link set dev "$FIF" xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags || exit 1
ip netns exec "$F" nft -f - <<-EOF || exit 1
table inet flood {
	chain input {
		type filter hook input priority 0; policy accept;
		ip daddr 10.222.9.0/24 tcp flags & (syn | ack) == syn | ack counter drop
	}
}
EOF
# S's syncookies stay at 1 but in the row where they answer: behind nft
# synproxy, a listener that always sends cookies (2) came out with the
# client's window unscaled (63 or 252 bytes) and the check's echo crawled.
ip netns exec "$S" sysctl -qw net.ipv4.tcp_syncookies=1 net.core.somaxconn=4096
# The server: echoes what each connection sends, until its end.
ip netns exec "$S" python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $PORT)); s.listen(4096)
while True:
    c, _ = s.accept(); c.settimeout(10); data = b''
    try:
        while d := c.recv(65536): data += d
        c.sendall(data)
    except OSError: pass
    c.close()" &
sleep 0.5
amac=$(ip -n "$A" -br link show "$AIF" | awk '{print $3}')
fmac=$(ip -n "$F" -br link show "$FIF" | awk '{print $3}')

synacks() {
	ip netns exec "$F" nft list table inet flood | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'
}

# Busy CPU ticks of the whole machine (user, system, irq, softirq), in USER_HZ.
busy_ticks() {
	awk '/^cpu / {print $2 + $4 + $7 + $8}' /proc/stat
}

# The server namespace's counters, in this order.
SRV_COUNTERS="IpInReceives TcpPassiveOpens TcpExtSyncookiesSent TcpExtListenOverflows"
srv_counters() {
	ip netns exec "$S" nstat -asz | awk -v want="$SRV_COUNTERS" '
		{ v[$1] = $2 }
		END { n = split(want, w, " "); for (i = 1; i <= n; i++) printf "%d ", v[w[i]] }'
}

# One real connection from F's own address through the answer: ok and how long, or why not.
conn_check() {
	ip netns exec "$F" timeout 15 python3 -c "
import os, socket, time
d = os.urandom(262144); t = time.monotonic()
c = socket.create_connection(('$DST', $PORT), timeout=10)
c.sendall(d); c.shutdown(socket.SHUT_WR); r = b''
while x := c.recv(65536): r += x
print('%s in %.1f ms' % ('ok' if r == d else 'MISMATCH: %d bytes back' % len(r), (time.monotonic() - t) * 1e3))" \
		2>&1 | tail -n1
}

srv_rows=()
run() { # NAME
	local name=$1 before after t0 t1 out rate answered cpu per conn c0 c1 synrecv pid i
	conn=$(conn_check)
	before=$(synacks)
	read -ra c0 <<<"$(srv_counters)"
	t0=$(busy_ticks)
	ip netns exec "$F" taskset -c 0 "$build/syn_flood" --iface "$FIF" --dst-mac "$amac" --src-mac "$fmac" \
		--src 10.222.9.0/24 --dst "$DST" --dport "$PORT" --duration "$secs" \
		--count 100000000 >"$tmp/flood" &
	pid=$!
	sleep "$(awk -v s="$secs" 'BEGIN {print s / 2}')"
	synrecv=$(ip netns exec "$S" ss -Htn state syn-recv | wc -l)
	wait "$pid"
	t1=$(busy_ticks)
	sleep 0.5
	after=$(synacks)
	read -ra c1 <<<"$(srv_counters)"
	out=$(cat "$tmp/flood")
	rate=$(sed -n 's/.*: \([0-9]*\) per second.*/\1/p' <<<"$out")
	answered=$(((after - before) / secs))
	cpu=$(awk -v t=$((t1 - t0)) -v s="$secs" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / s / hz}')
	per=$(awk -v c="$cpu" -v r="$rate" 'BEGIN {printf "%.0f", r ? c * 1e9 / r : 0}')
	printf '%-34s %12s %14s %10s %12s\n' "$name" "$rate" "$answered" "$cpu" "$per"
	for i in "${!c1[@]}"; do
		c1[i]=$((c1[i] - c0[i]))
	done
	srv_rows+=("$(printf '%-34s %12s %10s %12s %12s %12s  %s' "$name" "${c1[0]}" "$synrecv" \
		"${c1[1]}" "${c1[2]}" "${c1[3]}" "$conn")")
}

isng() {
	ISNGUARD_PIN_DIR=$PIN nsenter --net="/run/netns/$A" "$build/isnguard" "$@"
}

row_isnguard() {
	isng attach "$AIF" --synproxy "$PORT" >/dev/null || exit 1
	run "isnguard --synproxy$on (XDP)"
	isng stats --json >"$tmp/isng_stats"
	isng detach "$AIF" >/dev/null
}

row_own() {
	ip netns exec "$S" sysctl -qw net.ipv4.tcp_syncookies=$own_cookies
	run "$own_name"
	ip netns exec "$S" sysctl -qw net.ipv4.tcp_syncookies=1
}

row_nft() {
	if nft_synproxy_ruleset sp "$nft_hook" "$PORT" | ip netns exec "$A" nft -f - 2>/dev/null; then
		# A cookie ACK must stay invalid for synproxy, not be picked up
		# mid-stream as established (through G the connection is then reset).
		ip netns exec "$A" sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 2>/dev/null
		run "$nft_name"
		ip netns exec "$A" nft delete table ip sp
	else
		printf '%-34s %s\n' "$nft_name" "not available on this kernel"
	fi
}

printf '\n%s, %s s each (CPUs busy: of %s)\n' "$title" "$secs" "$(nproc)"
printf '%-34s %12s %14s %10s %12s\n' "answered by" "SYN/s sent" "SYN-ACK/s back" "CPUs busy" \
	"CPU ns/SYN"
for row in "${rows[@]}"; do
	"$row"
done

printf '\nWhat the server %s'"'"'s own stack saw of each flood (counter deltas; SYN-RECV halfway)\n' \
	"$([ "$gateway" = 1 ] && echo S || echo H)"
printf '%-34s %12s %10s %12s %12s %12s  %s\n' "answered by" "IP pkts in" "SYN-RECV" "PassiveOpen" \
	"CookiesSent" "ListenOverfl" "real connection"
printf '%s\n' "${srv_rows[@]}"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['counters']
print('\nisnguard$on: ' + ', '.join('%s %d' % (k, c[k]) for k in
      ('syn_seen', 'cookie_sent', 'cookie_ack_valid', 'proxy_syn_to_server', 'proxy_server_synack',
       'proxy_dropped_while_opening', 'cookie_handshake_to_stack')))" "$tmp/isng_stats"
