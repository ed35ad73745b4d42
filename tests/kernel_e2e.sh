#!/bin/sh
# make test-kernels, in the guest (busybox sh, iproute2's ip): a core of the
# end-to-end suite (tests/e2e) on the guest's own kernel, with real TCP
# stacks. Two namespaces joined by a veth:
#
#   A (protected, isnguard on a0) a0 10.200.1.1 --- b0 10.200.1.2 B (peer)
#
# b0 has an XDP_PASS program: a veth takes what its peer sends with XDP_TX
# (A's cookie SYN-ACKs) only when it has an XDP program of its own. One
# attach serves every check: the SYN proxy on $SP_PORT (the auto path:
# translate where the kernel lacks bpf_sk_assign_tcp_reqsk), keyed ISNs on
# every port. The wire ISN of A's side is read by B's own socket (tcp_xfer
# --peer-isn), the guest having no capture tool. The flood's spoofed
# sources are in $FLOOD_NET, B's own (on its lo, so the whole prefix is
# local there): the cookie SYN-ACKs sent to them end in B's stack, which
# answers each with a RST that A's stack ignores (the host suite gives the
# prefix to its router and drops them there with nft). Every check prints
# "ok   <what>" or "FAIL <what>: <why>"; the last line is "N passed, N
# failed". Run from the directory holding isnguard, tcp_xfer, syn_flood,
# xdp_pass.bpf.o and iproute2's ip.
dir=$(pwd)
isng=$dir/isnguard
xfer=$dir/tcp_xfer
kfunc=bpf_sk_assign_tcp_reqsk
NS_A=isng-k-a NS_B=isng-k-b
A4=10.200.1.1 B4=10.200.1.2
SP_PORT=5001 ISN_PORT=5002
FLOOD_NET=10.200.9.0/24
XFER_BYTES=1048576	# each way, in the ISN checks' transfers
SP_CONNS=20		# connections through the SYN proxy, before and during the flood
SP_BYTES=1024
FLOOD_SECONDS=3
FLOOD_RATE=20000	# SYNs per second: the flood's bound with the duration
work=/tmp/kernel-e2e
passed=0
failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# iproute2's, beside this script: busybox's sh would run its own applet.
ip() { "$dir/ip" "$@"; }
in_a() { nsenter --net=/run/netns/$NS_A -- "$@"; }
in_b() { nsenter --net=/run/netns/$NS_B -- "$@"; }
# isnguard in A: nsenter keeps the guest's bpffs, where the maps are pinned.
isng() { in_a "$isng" "$@"; }

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	isng detach a0 >/dev/null 2>&1
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
}

# The totals, and with a failure the counters that are not 0: what the datapath did.
finish() {
	if [ "$failed" != 0 ]; then
		echo "# isnguard's counters: $(isng stats --json 2>/dev/null | tr -d ' \n{}"' |
			tr ',' '\n' | sed 's/^counters://' | grep -v ':0$' | tr '\n' ' ')"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}

# The first number of "KEY": N in a JSON text on stdin.
json_num() {
	tr -d '\n' | grep -o "\"$1\" *: *[0-9]*" | head -n 1 | sed 's/.*: *//'
}

# TcpExt counter NAME of A's own stack (/proc/net is the reader's namespace's).
a_tcpext() {
	in_a cat /proc/net/netstat | awk -v name="$1" '
		$1 == "TcpExt:" && !header { for (i = 2; i <= NF; i++) col[$i] = i; header = 1; next }
		$1 == "TcpExt:" { print $col[name]; exit }'
}

wait_listen() { # NS-RUNNER PORT
	i=0
	while [ $i -lt 200 ]; do
		$1 netstat -ltn | grep -q ":$2 " && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# OUT SEED BYTES CONNS: OUT (tcp_xfer's output) has CONNS connections, each
# having received BYTES of one of the streams 0..CONNS-1 of SEED, each once.
received_ok() {
	actual=$(awk '/^conn / { print $4, $6 }' "$1" | sort)
	expected=$("$xfer" expect --bytes "$3" --seed "$2" --conns "$4" |
		awk -v bytes="$3" '{ print bytes, $4 }' | sort)
	[ -n "$actual" ] && [ "$actual" = "$expected" ]
}

# WHAT SEQ LOCAL REMOTE BEFORE AFTER: the wire ISN SEQ is M + F, F of the
# reference for the tuple under the key, M = CLOCK_MONOTONIC / 4 us between
# BEFORE and AFTER (RFC 6528 section 3).
check_isn() {
	what=$1 seq=$2
	f=$("$isng" isn --hash siphash --key "$KEY" --local "$3" --remote "$4" --ticks 0 --json |
		json_num f)
	case $seq$f in
	*[!0-9]* | "")
		fail "$what" "no ISN (tcp_xfer: '$seq') or no F (isnguard isn: '$f')"
		return
		;;
	esac
	m=$(((seq - f) & 0xffffffff))
	lo=$((($5 / 4000) & 0xffffffff))
	hi=$((($6 / 4000) & 0xffffffff))
	if [ $(((m - lo) & 0xffffffff)) -le $(((hi - lo) & 0xffffffff)) ]; then
		ok "$what: wire ISN $seq = F $f + M $m, M in [$lo, $hi]"
	else
		fail "$what" "wire ISN $seq - F $f = M $m, expected M in [$lo, $hi] (4 us ticks around the connect)"
	fi
}

# ---- set-up: the namespaces, the veth, B's XDP_PASS, the attach ----

trap cleanup EXIT
mkdir -p $work
topology_up() {
	ip netns add $NS_A && ip netns add $NS_B &&
		ip link add a0 netns $NS_A type veth peer name b0 netns $NS_B &&
		ip -n $NS_A addr add $A4/24 dev a0 && ip -n $NS_B addr add $B4/24 dev b0 &&
		ip -n $NS_A link set lo up && ip -n $NS_B link set lo up &&
		ip -n $NS_A link set a0 up && ip -n $NS_B link set b0 up &&
		ip -n $NS_B link set dev b0 xdpdrv obj "$dir/xdp_pass.bpf.o" sec xdp.frags &&
		ip -n $NS_B addr add ${FLOOD_NET%.0/24}.1/24 dev lo
}
if topology_up; then
	ok "namespaces A and B, veth a0-b0, XDP_PASS on b0"
else
	fail "namespaces A and B, veth a0-b0, XDP_PASS on b0" "ip failed (above)"
	finish
fi

od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >$work/key
chmod 0600 $work/key
KEY=$(cat $work/key)
in_a sysctl -qw net.ipv4.tcp_syncookies=1
if grep -q " $kfunc\$" /proc/kallsyms; then path=local; else path=translate; fi
if out=$(isng attach --synproxy $SP_PORT --key-file $work/key --json a0 2>&1) &&
	printf '%s' "$out" | grep -q '"syn_hook":"xdp"'; then
	ok "attach a0: XDP, the SYN proxy on $SP_PORT, auto path ($path here)"
else
	fail "attach a0 with the SYN proxy on $SP_PORT" "$out"
	finish
fi

# ---- keyed ISNs: a transfer each way, A's wire ISN against the reference ----

# WHAT SERVER-NS SERVER-ADDR CLIENT-NS B-ROLE SEED: one connection from
# CLIENT-NS's local port $CPORT to SERVER-ADDR:$ISN_PORT in SERVER-NS (in_a
# or in_b), $XFER_BYTES each way, the server's stream SEED, the client's
# SEED+1. B's end (B-ROLE: server or client) puts the wire ISN of A's SYN or
# SYN-ACK in $peer_isn; $before and $after are CLOCK_MONOTONIC around it.
isn_transfer() {
	what=$1 srv_run=$2 srv_addr=$3 cli_run=$4 b_role=$5 seed=$6
	srv_isn='' cli_isn=''
	if [ "$b_role" = server ]; then srv_isn=--peer-isn; else cli_isn=--peer-isn; fi
	$srv_run "$xfer" server --listen "$srv_addr:$ISN_PORT" --send $XFER_BYTES --seed "$seed" \
		--timeout 60 $srv_isn >$work/server.out 2>$work/server.err &
	server=$!
	wait_listen "$srv_run" $ISN_PORT
	before=$("$xfer" mono)
	$cli_run "$xfer" client --connect "$srv_addr:$ISN_PORT" --local-port $CPORT \
		--send $XFER_BYTES --recv --seed $((seed + 1)) --timeout 60 $cli_isn \
		>$work/client.out 2>$work/client.err
	client_rc=$?
	after=$("$xfer" mono)
	wait $server
	server_rc=$?
	peer_isn=$(awk '/^conn / { print $NF }' "$work/$b_role.out")
	what="$what: $XFER_BYTES bytes each way"
	if [ $client_rc != 0 ] || [ $server_rc != 0 ]; then
		fail "$what" "client exit $client_rc, server exit $server_rc: $(cat $work/client.err $work/server.err)"
	elif received_ok $work/server.out $((seed + 1)) $XFER_BYTES 1 &&
		received_ok $work/client.out "$seed" $XFER_BYTES 1; then
		ok "$what, SHA-256 as expected on both ends"
	else
		fail "$what" "SHA-256 differs: server $(cat $work/server.out), client $(cat $work/client.out)"
	fi
}

CPORT=40001
isn_transfer "passive open (B to A)" in_a $A4 in_b client 1
check_isn "passive open: A's SYN-ACK keyed" "$peer_isn" $A4:$ISN_PORT $B4:$CPORT "$before" "$after"
isn_transfer "active open (A to B)" in_b $B4 in_a server 3
check_isn "active open: A's SYN keyed" "$peer_isn" $A4:$CPORT $B4:$ISN_PORT "$before" "$after"

# ---- the SYN proxy: real connections, then a flood while more connect ----

# SEED: A's server for $SP_CONNS connections on $SP_PORT, sending $SP_BYTES
# of stream SEED on each, listening when this returns. It closes its
# listener once all are done.
sp_server() {
	in_a "$xfer" server --listen $A4:$SP_PORT --conns $SP_CONNS --send $SP_BYTES --recv \
		--seed "$1" --timeout 90 >$work/sp-server.out 2>$work/sp-server.err &
	server=$!
	wait_listen in_a $SP_PORT
}

# LABEL SEED [HOLD]: $SP_CONNS connections from B to sp_server's server,
# $SP_BYTES of stream SEED+1 each way, held open HOLD seconds before
# sending; both ends' streams checked.
sp_connections() {
	in_b "$xfer" client --connect $A4:$SP_PORT --parallel $SP_CONNS --send $SP_BYTES --recv \
		--seed $(($2 + 1)) --hold "${3:-0}" --timeout 90 >$work/sp-client.out 2>$work/sp-client.err
	client_rc=$?
	wait $server
	server_rc=$?
	what="$1: $SP_CONNS connections to A's $SP_PORT, $SP_BYTES bytes each way"
	if [ $client_rc != 0 ] || [ $server_rc != 0 ]; then
		fail "$what" "client exit $client_rc, server exit $server_rc: $(cat $work/sp-client.err $work/sp-server.err)"
	elif received_ok $work/sp-server.out $(($2 + 1)) $SP_BYTES $SP_CONNS &&
		received_ok $work/sp-client.out "$2" $SP_BYTES $SP_CONNS; then
		ok "$what, SHA-256 as expected on both ends"
	else
		fail "$what" "SHA-256 differs (A $(grep -c '^conn ' $work/sp-server.out), B $(grep -c '^conn ' $work/sp-client.out) connections)"
	fi
}

# NAME BEFORE AFTER: how much counter NAME grew between two `stats --json` files.
grew() { echo $(($(json_num "$1" <"$3") - $(json_num "$1" <"$2"))); }

# BEFORE AFTER: what the SYN proxy's counters show of $SP_CONNS handshakes
# (and of a flood's cookies): a cookie SYN-ACK and a valid cookie ACK for
# each; on the translate path a SYN from isnguard to A and A's SYN-ACK for
# each, nothing handed to A's listener directly; on the local path each
# handed to it.
check_cookie_counters() {
	sent=$(grew cookie_sent "$1" "$2")
	valid=$(grew cookie_ack_valid "$1" "$2")
	to_server=$(grew proxy_syn_to_server "$1" "$2")
	server_synack=$(grew proxy_server_synack "$1" "$2")
	to_stack=$(grew cookie_handshake_to_stack "$1" "$2")
	what="$3: cookie_sent +$sent, cookie_ack_valid +$valid"
	if [ "$sent" -ge "$SP_CONNS" ] && [ "$valid" -ge "$SP_CONNS" ]; then
		ok "$what"
	else
		fail "$what" "expected both >= $SP_CONNS"
	fi
	what="$3, $path path: proxy_syn_to_server +$to_server, proxy_server_synack +$server_synack, cookie_handshake_to_stack +$to_stack"
	if [ $path = translate ] && [ "$to_server" -ge "$SP_CONNS" ] &&
		[ "$server_synack" -ge "$SP_CONNS" ] && [ "$to_stack" = 0 ]; then
		ok "$what"
	elif [ $path = local ] && [ "$to_stack" -ge "$SP_CONNS" ] && [ "$to_server" = 0 ]; then
		ok "$what"
	else
		fail "$what" "expected the $path path's counters >= $SP_CONNS, the other path's 0"
	fi
}

# A's own stack answered no SYN with a cookie and dropped none: only
# isnguard saw the flood.
check_a_syn_queue() {
	cookies=$(a_tcpext SyncookiesSent)
	drops=$(a_tcpext ListenDrops)
	overflows=$(a_tcpext ListenOverflows)
	what="$1: A's stack sent no SYN cookie and dropped no SYN (TcpExt SyncookiesSent $cookies, ListenDrops $drops, ListenOverflows $overflows)"
	if [ "$cookies$drops$overflows" = 000 ]; then ok "$what"; else fail "$what" "expected 0 each"; fi
}

isng stats --json >$work/stats-0.json
sp_server 10
sp_connections "SYN proxy" 10
isng stats --json >$work/stats-1.json
check_cookie_counters $work/stats-0.json $work/stats-1.json "SYN proxy, $SP_CONNS connections"

# The flood: spoofed SYNs sent on b0 to A's port, bounded by time and rate;
# after its first second, the connections again, held until it is over: A
# listens from before its first SYN to after its last (a SYN that finds no
# listener is isnguard's to drop, not to answer).
a_mac=$(ip -n $NS_A -br link show a0 | awk '{ print $3 }')
b_mac=$(ip -n $NS_B -br link show b0 | awk '{ print $3 }')
sp_server 20
in_b "$dir/syn_flood" --iface b0 --dst-mac "$a_mac" --src-mac "$b_mac" --src $FLOOD_NET \
	--dst $A4 --dport $SP_PORT --type syn --duration $FLOOD_SECONDS \
	--count $((FLOOD_SECONDS * FLOOD_RATE)) --rate $FLOOD_RATE >$work/flood.out 2>&1 &
flood=$!
sleep 1
sp_connections "during a SYN flood" 20 $FLOOD_SECONDS
wait $flood
flood_rc=$?
isng stats --json >$work/stats-2.json
flood_sent=$(sed -n 's/^sent \([0-9]*\) .*/\1/p' $work/flood.out)
what="SYN flood from $FLOOD_NET to A's $SP_PORT: $(cat $work/flood.out)"
if [ $flood_rc = 0 ] && [ "${flood_sent:-0}" -gt 0 ]; then ok "$what"; else fail "$what" "syn_flood exit $flood_rc"; fi
# Every SYN that reached a0 (a veth drops what overflows its ring: syn_flood's
# send errors) is answered with a cookie, A's stack seeing none of them.
seen=$(grew syn_seen $work/stats-1.json $work/stats-2.json)
cookies=$(grew cookie_sent $work/stats-1.json $work/stats-2.json)
what="SYN flood: each SYN answered with a cookie: syn_seen +$seen, cookie_sent +$cookies ($flood_sent spoofed, $SP_CONNS real)"
if [ "$cookies" = "$seen" ] && [ "$seen" -ge $((${flood_sent:-0} + SP_CONNS)) ]; then
	ok "$what"
else
	fail "$what" "expected cookie_sent = syn_seen >= $((${flood_sent:-0} + SP_CONNS))"
fi
check_cookie_counters $work/stats-1.json $work/stats-2.json "SYN proxy during the flood"
check_a_syn_queue "SYN proxy and flood"
finish
