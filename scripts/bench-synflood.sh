#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make bench, third part: one spoofed-SYN flood on a veth pair between two
# namespaces this script creates (F floods, H is the protected host
# listening on port 5001), answered in turn by isnguard --synproxy, by the
# kernel's own syncookies (tcp_syncookies=2, no isnguard) and by nftables
# synproxy. For each: the flood rate sent, the SYN-ACKs per second that
# came back to F (an nft counter on F's input, which then drops them), the
# CPUs the whole machine kept busy (user, system, irq and softirq time from
# /proc/stat) and that divided by the SYN rate: CPU ns per SYN, generator
# and veth included, which is what each answer costs the machine. On a veth
# the receiver's work runs on the sender's CPU, so the generator is pinned
# to CPU 0 and the rate it reaches is itself a measure of the receiver.
# Sources come only from 10.222.9.0/24, assigned to F's loopback; every
# flood lasts --seconds (default 5).
#
# Usage: bench-synflood.sh BUILD_DIR [SECONDS]    (as root)
set -uo pipefail
build=$(readlink -f "${1:-build}")
secs=${2:-5}
suffix=$$
F=isng-flood-f-$suffix H=isng-flood-h-$suffix
PIN=/sys/fs/bpf/isnguard-flood-$suffix
PORT=5001

cleanup() {
	ip netns pids "$H" 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns del "$F" 2>/dev/null
	ip netns del "$H" 2>/dev/null
	rm -rf "$PIN"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench-synflood: needs root" >&2; exit 1; }
for f in isnguard syn_flood xdp_pass.bpf.o; do
	[ -e "$build/$f" ] || { echo "bench-synflood: no $build/$f (make bench builds it)" >&2; exit 1; }
done

ip netns add "$F" && ip netns add "$H" || exit 1
ip link add hf0 netns "$H" type veth peer name fh0 netns "$F" || exit 1
ip -n "$H" addr add 10.222.0.1/24 dev hf0
ip -n "$F" addr add 10.222.0.2/24 dev fh0
ip -n "$F" addr add 10.222.9.1/24 dev lo
for ns in "$F" "$H"; do
	ip -n "$ns" link set lo up
done
ip -n "$H" link set hf0 up
ip -n "$F" link set fh0 up
ip -n "$H" route add 10.222.9.0/24 via 10.222.0.2 || exit 1
ip -n "$F" link set dev fh0 xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags || exit 1
ip netns exec "$F" nft -f - <<-EOF || exit 1
table inet flood {
	chain input {
		type filter hook input priority 0; policy accept;
		ip daddr 10.222.9.0/24 tcp flags & (syn | ack) == syn | ack counter drop
	}
}
EOF
ip netns exec "$H" sysctl -qw net.ipv4.tcp_syncookies=2 net.core.somaxconn=4096
ip netns exec "$H" python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $PORT)); s.listen(4096); time.sleep(3600)" &
sleep 0.5
hmac=$(ip -n "$H" -br link show hf0 | awk '{print $3}')
fmac=$(ip -n "$F" -br link show fh0 | awk '{print $3}')

synacks() {
	ip netns exec "$F" nft list table inet flood | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'
}

# Busy CPU ticks of the whole machine (user, system, irq, softirq), in USER_HZ.
busy_ticks() {
	awk '/^cpu / {print $2 + $4 + $7 + $8}' /proc/stat
}

run() { # NAME
	local name=$1 before after t0 t1 out rate answered cpu per
	before=$(synacks)
	t0=$(busy_ticks)
	out=$(ip netns exec "$F" taskset -c 0 "$build/syn_flood" --iface fh0 --dst-mac "$hmac" --src-mac "$fmac" \
		--src 10.222.9.0/24 --dst 10.222.0.1 --dport "$PORT" --duration "$secs" \
		--count 100000000)
	t1=$(busy_ticks)
	sleep 0.5
	after=$(synacks)
	rate=$(sed -n 's/.*: \([0-9]*\) per second.*/\1/p' <<<"$out")
	answered=$(((after - before) / secs))
	cpu=$(awk -v t=$((t1 - t0)) -v s="$secs" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / s / hz}')
	per=$(awk -v c="$cpu" -v r="$rate" 'BEGIN {printf "%.0f", r ? c * 1e9 / r : 0}')
	printf '%-34s %12s %14s %10s %12s\n' "$name" "$rate" "$answered" "$cpu" "$per"
}

printf '\nSYN flood on a veth pair, %s s each (CPUs busy: of %s)\n' "$secs" "$(nproc)"
printf '%-34s %12s %14s %10s %12s\n' "answered by" "SYN/s sent" "SYN-ACK/s back" "CPUs busy" \
	"CPU ns/SYN"

ISNGUARD_PIN_DIR=$PIN nsenter --net="/run/netns/$H" "$build/isnguard" attach hf0 \
	--synproxy "$PORT" >/dev/null || exit 1
run "isnguard --synproxy (XDP)"
ISNGUARD_PIN_DIR=$PIN nsenter --net="/run/netns/$H" "$build/isnguard" detach hf0 >/dev/null

run "kernel syncookies (syncookies=2)"

if ip netns exec "$H" nft -f - 2>/dev/null <<-EOF; then
table ip sp {
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp dport $PORT tcp flags syn notrack
	}
	chain in {
		type filter hook input priority filter; policy accept;
		tcp dport $PORT ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
		ct state invalid drop
	}
}
EOF
	ip netns exec "$H" sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 2>/dev/null
	run "nftables synproxy"
else
	printf '%-34s %s\n' "nftables synproxy" "not available on this kernel"
fi
