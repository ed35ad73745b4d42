# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of the SYN proxy, sourced by run.sh (same topology, same
# helpers). A, the protected host, listens on $SP_PORT; B's real kernel TCP
# connects through M. XDP_TX sends A's cookie SYN-ACKs back to M, and a veth
# delivers what its peer sends with XDP_TX only when it has an XDP program
# of its own: M's side gets an XDP_PASS program (test set-up only). Floods
# come from M (syn_flood on m0) with sources in $FLOOD_NET4/$FLOOD_NET6,
# subnets assigned to M's loopback, so nothing leaves the namespaces; every
# flood is bounded in time and count.

SYN_FLOOD=${SYN_FLOOD:-$E2E_ROOT/build/syn_flood}
XDP_PASS_OBJ=${XDP_PASS_OBJ:-$E2E_ROOT/build/xdp_pass.bpf.o}
SP_PORT=5001
SP_OTHER_PORT=5002
FLOOD_NET4=10.200.9.0/24
FLOOD_NET6=fd00:200:9::/120
# Where the SYN proxy runs: "host", on A's a0 (these tests), or "gateway",
# on M's m1 in front of A (gateway.sh). Which way a valid cookie ACK opens
# the server side: "local", handed to A's stack (a0 with the kernel's
# bpf_sk_assign_tcp_reqsk), or "translate", turned into a SYN to A and the
# connection translated from then on (a gateway's only way; gateway.sh).
SP_WHERE=host
SP_PATH=local
# check_synproxy_transfer: checksums as the veths leave them (""), computed
# in full by the senders ("strict": csum_strict_on), or left partial by A
# and B and completed by M ("partial": csum_verified partial); A and B verify
# them in software with either.
SP_CSUM=

# A's server for $1 1K exchanges, listening before it returns (timeout $2 s).
sp_server() {
	bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:$SP_PORT" --conns "$1" --send 1K \
		--recv --seed "$SEED_A" --timeout "$2"
	wait_listen "$NS_A" "$SP_PORT"
}

# One 1K exchange from B with sp_server's server, waited for.
sp_client_exchange() {
	bg_start client "$NS_B" "$TCP_XFER" client --connect "$A4:$SP_PORT" --send 1K --recv \
		--seed "$SEED_B" --timeout 30
	bg_wait client
}

# The topology with the SYN proxy on A's port (extra attach options in "$@"),
# on A's a0, or on M's m1 with SP_WHERE=gateway.
sp_setup() {
	sp_topology
	if [ "$SP_WHERE" = gateway ]; then
		# shellcheck disable=SC2034 # read by isng and topo_down (lib.sh)
		ISNG_NS=$NS_M ISNG_IF=$IF_MB
		isng_attach "$IF_MB" --synproxy "$SP_PORT" "$@"
	else
		isng_attach "$IF_A" --synproxy "$SP_PORT" "$@"
	fi
	isng key set --from-file "$E2E_WORK/key" || fail "isng key set"
}

# The topology and M's flood set-up, nothing attached. The veth peer of the
# interface isnguard runs on (M's m0, or B's b0 with SP_WHERE=gateway) gets
# the XDP_PASS program that lets it take the cookie SYN-ACKs sent by XDP_TX,
# unless SP_PEER_XDP=0 (--syn-hook tc sends them from tc, and needs none).
sp_topology() {
	[ -x "$SYN_FLOOD" ] || fail "no $SYN_FLOOD (make build/syn_flood)"
	[ -f "$XDP_PASS_OBJ" ] || fail "no $XDP_PASS_OBJ (make)"
	topo_up
	if [ "${SP_PEER_XDP:-1}" = 0 ]; then
		:
	elif [ "$SP_WHERE" = gateway ]; then
		ip -n "$NS_B" link set dev "$IF_B" xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags ||
			fail "XDP_PASS program on $NS_B/$IF_B"
	else
		ip -n "$NS_M" link set dev "$IF_MA" xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags ||
			fail "XDP_PASS program on $NS_M/$IF_MA"
	fi
	ip -n "$NS_M" addr add 10.200.9.1/24 dev lo
	ip -n "$NS_M" addr add fd00:200:9::1/120 dev lo
	# A's cookie SYN-ACKs to spoofed sources end here, not in M's stack.
	in_ns "$NS_M" nft -f - <<-EOF || fail "nft in $NS_M"
	table inet isng_e2e_flood {
		chain input {
			type filter hook input priority 0; policy accept;
			ip daddr 10.200.9.0/24 tcp flags & (syn | ack) == syn | ack drop
			ip6 daddr fd00:200:9::/120 tcp flags & (syn | ack) == syn | ack drop
		}
	}
	EOF
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	KEY=$(new_key_file "$E2E_WORK/key")
}

# The flood, sources in M's flood subnets, to A's port: sent on M's side of
# the A-M link, or with SP_WHERE=gateway on B's b0 into M's m1, where
# isnguard runs. Args: FAMILY TYPE SECONDS COUNT [RATE].
sp_flood() {
	local fam=$1 type=$2 secs=$3 count=$4 rate=${5:-0} src dst mac smac
	local ns=$NS_M iface=$IF_MA peer_ns=$NS_A peer_iface=$IF_A
	[ "$SP_WHERE" = gateway ] && ns=$NS_B iface=$IF_B peer_ns=$NS_M peer_iface=$IF_MB
	if [ "$fam" = 6 ]; then src=$FLOOD_NET6 dst=$A6; else src=$FLOOD_NET4 dst=$A4; fi
	mac=$(ip -n "$peer_ns" -br link show "$peer_iface" | awk '{print $3}')
	smac=$(ip -n "$ns" -br link show "$iface" | awk '{print $3}')
	in_ns "$ns" taskset -c 0 "$SYN_FLOOD" --iface "$iface" --dst-mac "$mac" --src-mac "$smac" \
		--src "$src" --dst "$dst" --dport "$SP_PORT" --type "$type" --duration "$secs" \
		--count "$count" --rate "$rate"
}

# N cookie handshakes opened the server side, by the path in use: handed to
# A's stack (local), or turned into SYNs to A whose SYN-ACKs became the
# ACKs that open A's side (translate). On the translate path a client
# segment that comes while A has not answered is sent as a SYN again, and
# A answers a repeated SYN with its SYN-ACK again: at least N of each.
sp_assert_handshakes() { # N
	if [ "$SP_PATH" = translate ]; then
		assert_ge "$(isng_counter proxy_syn_to_server)" "$1" "proxy_syn_to_server"
		assert_ge "$(isng_counter proxy_server_synack)" "$1" "proxy_server_synack"
		assert_eq "$(isng_counter cookie_handshake_to_stack)" 0 \
			"cookie_handshake_to_stack (the local path) with the translate path"
	else
		assert_eq "$(isng_counter cookie_handshake_to_stack)" "$1" "cookie_handshake_to_stack"
	fi
}

# Host A's own TCP counters that must not move: its SYN queue never saw the flood.
assert_host_syn_queue_untouched() {
	local c v recv
	for c in TcpExtSyncookiesSent TcpExtListenOverflows TcpExtListenDrops; do
		v=$(nstat_get "$NS_A" "$c")
		assert_eq "${v:-0}" 0 "$c on A"
	done
	recv=$(in_ns "$NS_A" ss -Htn state syn-recv "sport = :$SP_PORT" | wc -l)
	assert_eq "$recv" 0 "SYN-RECV sockets for port $SP_PORT on A"
}

# One transfer from B to A's protected port, client options set in B's stack.
# WSCALE8=1 gives B a receive buffer whose window shift is 8, the one a
# cookie without timestamps keeps (Windows'); else B's shift is the
# default's. Without timestamps the cookie has one option bit: the SYN-ACK
# offers SACK and window scaling together, when B offered SACK and shift 8,
# or neither (include/isnguard.h).
# A_RMEM sets A's net.ipv4.tcp_rmem (its window shift) before it listens.
# On the translate path, A's side of the handshake is checked too
# (sp_check_server_side).
check_synproxy_transfer() { # FAMILY TIMESTAMPS(0|1) SACK(0|1) WSCALE8(0|1) [A_RMEM]
	local fam=$1 tstamps=$2 sack=$3 wscale8=$4 a_rmem=${5:-} a synack offer_sack=$3 offer_ws=1
	if [ "$tstamps" = 0 ]; then
		offer_ws=0
		[ "$sack" = 1 ] && [ "$wscale8" = 1 ] && offer_ws=1
		offer_sack=$offer_ws
	fi
	a=$(addr_of A "$fam")
	sp_setup
	in_ns "$NS_B" sysctl -qw net.ipv4.tcp_timestamps="$tstamps" net.ipv4.tcp_sack="$sack"
	[ "$wscale8" = 1 ] && in_ns "$NS_B" sysctl -qw net.ipv4.tcp_rmem="4096 131072 8388608"
	[ -n "$a_rmem" ] && in_ns "$NS_A" sysctl -qw net.ipv4.tcp_rmem="$a_rmem"
	case $SP_CSUM in
	strict) csum_strict_on ;;
	partial) csum_verified partial ;;
	esac
	# tcpdump's tcp[] offsets are IPv4-only: capture the port, read the SYNs out.
	capture_start "$NS_B" "$IF_B" "tcp port $SP_PORT" "$E2E_WORK/b.pcap"
	[ "$SP_PATH" = translate ] && sp_capture_host_handshake "$E2E_WORK/a.pcap"
	transfer "$NS_A" "$NS_B" "$(ep "$fam" "$a" $SP_PORT)" 20M 60
	bg_wait client
	bg_wait server
	capture_stop
	assert_transfer_intact 20M server
	synack=$(tcpdump -r "$E2E_WORK/b.pcap" -nn -v -c 20 2>/dev/null | grep -A1 'Flags \[S\.' | tr '\n' ' ')
	log "SYN-ACK at B: $synack"
	[[ "$synack" == *"Flags [S."* ]] || fail "no SYN-ACK in the capture"
	if [ "$tstamps" = 1 ]; then
		[[ "$synack" == *"TS val"* ]] || fail "client offered timestamps, the SYN-ACK has none"
	else
		[[ "$synack" == *"TS val"* ]] && fail "client offered no timestamps, the SYN-ACK has them"
	fi
	if [ "$offer_sack" = 1 ]; then
		[[ "$synack" == *"sackOK"* ]] || fail "client offered SACK, the SYN-ACK has none"
	else
		[[ "$synack" == *"sackOK"* ]] &&
			fail "client offered no SACK (or, without timestamps, not with shift 8), the SYN-ACK has it"
	fi
	if [ "$offer_ws" = 1 ]; then
		[[ "$synack" == *"wscale"* ]] || fail "no window scale in the SYN-ACK"
	else
		[[ "$synack" == *"wscale"* ]] &&
			fail "without timestamps only a client with SACK and shift 8 gets window scaling"
	fi
	assert_ge "$(isng_counter cookie_sent)" 1 "cookie_sent"
	sp_assert_handshakes 1
	assert_host_syn_queue_untouched
	if [ -n "$SP_CSUM" ]; then
		assert_no_csum_errors "$NS_A" A
		assert_no_csum_errors "$NS_B" B
	fi
	[ "$SP_PATH" = translate ] && sp_check_server_side "$fam" "$tstamps" "$offer_sack" "$a_rmem"
	return 0
}

# The tcpdump -tt lines from SRC in PCAP that contain the text WHAT.
sp_lines() { # PCAP SRC WHAT
	tcpdump -r "$1" -tt -nn -S 2>/dev/null | WHAT=$3 awk -v src="$2" '
		{ from = $3; sub(/\.[0-9]+$/, "", from) }
		from == src && index($0, ENVIRON["WHAT"])'
}

sp_first_line() { # PCAP SRC WHAT
	sp_lines "$@" | head -n 1
}

# The SYNs and SYN-ACKs of $SP_PORT as A's stack takes and sends them, into
# FILE: netfilter's view (NFLOG), not a0's, whose capture tap sees the
# cookie ACK before tc ingress (with isnguard on a0) turns it into the SYN,
# and A's SYN-ACK after tc egress turned it into the ACK back in. Each
# message is sent at once (queue-threshold 1), not held up to a second.
sp_capture_host_handshake() { # FILE
	require_cmd nft
	in_ns "$NS_A" nft -f - <<-EOF || fail "nft log rules in $NS_A"
	table inet isng_e2e_seen {
		chain prerouting {
			type filter hook prerouting priority 0; policy accept;
			tcp dport $SP_PORT tcp flags & syn == syn counter log group 7 queue-threshold 1
		}
		chain output {
			type filter hook output priority 0; policy accept;
			tcp sport $SP_PORT tcp flags & syn == syn counter log group 7 queue-threshold 1
		}
	}
	EOF
	capture_start "$NS_A" nflog:7 "" "$1"
}

# The translate path on the server's side (A's stack): A's first SYN carries
# the client's ISN and the options the client offered, and comes only after
# the client's ACK completed the cookie handshake (at b0; one clock, one
# machine); every SYN A took is one the proxy sent. SACK: what the cookie
# SYN-ACK offered. Without timestamps the MSS is the cookie's class: 1300
# (IPv4) with SACK and scaling, else 536; 1220 for IPv6. With A_RMEM, A's window
# shift differs from the one the cookie SYN-ACK offered, and the datapath
# rewrote windows.
sp_check_server_side() { # FAMILY TIMESTAMPS SACK A_RMEM
	local fam=$1 tstamps=$2 sack=$3 a_rmem=$4 a b client_syn client_ack server_syn cookie server_synack
	local host_ws wire_ws syns want_mss
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	client_syn=$(sp_first_line "$E2E_WORK/b.pcap" "$b" 'Flags [S]')
	client_ack=$(sp_first_line "$E2E_WORK/b.pcap" "$b" 'Flags [.]')
	cookie=$(sp_first_line "$E2E_WORK/b.pcap" "$a" 'Flags [S.]')
	server_syn=$(sp_first_line "$E2E_WORK/a.pcap" "$b" 'Flags [S]')
	server_synack=$(sp_first_line "$E2E_WORK/a.pcap" "$a" 'Flags [S.]')
	log "client SYN at b0: $client_syn"
	log "cookie SYN-ACK at b0: $cookie"
	log "client ACK at b0: $client_ack"
	log "SYN A's stack took: $server_syn"
	log "SYN-ACK A's stack sent: $server_synack"
	[ -n "$server_syn" ] || fail "no SYN reached A"
	[ -n "$client_ack" ] || fail "no ACK from the client in the capture on b0"
	assert_eq "$(sp_field "$server_syn" seq)" "$(sp_field "$client_syn" seq)" \
		"seq of the SYN A got (the client's ISN)"
	awk -v syn="${server_syn%% *}" -v ack="${client_ack%% *}" 'BEGIN { exit !(syn >= ack) }' ||
		fail "A got a SYN at ${server_syn%% *}, before the client's ACK at ${client_ack%% *}"
	log "ok: A's first SYN (${server_syn%% *}) came after the client's ACK (${client_ack%% *})"
	want_mss=$(sp_field "$client_syn" mss)
	if [ "$tstamps" = 0 ]; then
		want_mss=1220
		[ "$fam" = 4 ] && { [ "$sack" = 1 ] && want_mss=1300 || want_mss=536; }
	fi
	assert_eq "$(sp_field "$server_syn" mss)" "$want_mss" "MSS of the SYN A got"
	if [ "$sack" = 1 ]; then
		[[ "$server_syn" == *sackOK* ]] || fail "the client offered SACK, the SYN to A has none"
	else
		[[ "$server_syn" == *sackOK* ]] && fail "the client offered no SACK, the SYN to A has it"
	fi
	if [ "$tstamps" = 1 ]; then
		[[ "$server_syn" == *"TS val"* ]] || fail "the client offered timestamps, the SYN to A has none"
	else
		[[ "$server_syn" == *"TS val"* ]] && fail "the client offered no timestamps, the SYN to A has them"
	fi
	log "ok: the SYN to A carries the client's SACK ($sack) and timestamps ($tstamps)"
	# Scaling is on only if both SYNs carry the option (RFC 7323 2.2): A may
	# scale only where the cookie SYN-ACK told the client to.
	if [[ "$cookie" == *wscale* ]]; then
		assert_eq "$(sp_field "$server_syn" wscale)" "$(sp_field "$client_syn" wscale)" \
			"window shift of the SYN A got (the client's)"
	else
		[[ "$server_syn" == *wscale* ]] &&
			fail "the cookie SYN-ACK offered no window scale, the SYN to A has one: $server_syn"
		log "ok: no window scale in the cookie SYN-ACK, none in the SYN to A"
	fi
	syns=$(sp_lines "$E2E_WORK/a.pcap" "$b" 'Flags [S]' | wc -l)
	assert_eq "$syns" "$(isng_counter proxy_syn_to_server)" \
		"SYNs A's stack took (each one the proxy sent: proxy_syn_to_server)"
	[ -n "$a_rmem" ] || return 0
	host_ws=$(sp_field "$server_synack" wscale) wire_ws=$(sp_field "$cookie" wscale)
	[ -n "$server_synack" ] || fail "no SYN-ACK from A's stack in the capture"
	[ "${host_ws:-none}" != "${wire_ws:-none}" ] ||
		fail "precondition: A's window shift (${host_ws:-none}) equals the cookie SYN-ACK's;" \
			"set another A_RMEM"
	log "ok: A's window shift ${host_ws:-none}, the cookie SYN-ACK's ${wire_ws:-none}"
	assert_gt "$(isng_counter proxy_window_rewritten)" 0 "proxy_window_rewritten"
}

# The number after NAME in a tcpdump line (seq, mss, wscale, "TS val").
sp_field() { # LINE NAME
	sed -n "s/.*[ ,\[]$2 \([0-9]*\).*/\1/p" <<<"$1"
}

test_synproxy_ipv4_timestamps_sack() { check_synproxy_transfer 4 1 1 0; }
test_synproxy_ipv4_no_timestamps_wscale_8() { check_synproxy_transfer 4 0 1 1; }
test_synproxy_ipv4_no_timestamps_other_wscale() { check_synproxy_transfer 4 0 1 0; }
test_synproxy_ipv4_no_sack() { check_synproxy_transfer 4 1 0 0; }
test_synproxy_ipv6_timestamps_sack() { check_synproxy_transfer 6 1 1 0; }
test_synproxy_ipv6_no_timestamps_no_sack() { check_synproxy_transfer 6 0 0 1; }

# The server speaks first (an SMTP or SSH banner): the client sends nothing
# until it has read 1 MiB from the server.
test_synproxy_server_speaks_first() {
	sp_setup
	bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:$SP_PORT" --send 1M --seed "$SEED_A" \
		--timeout 30
	wait_listen "$NS_A" "$SP_PORT"
	bg_start client "$NS_B" "$TCP_XFER" client --connect "$A4:$SP_PORT" --recv --timeout 30
	bg_wait client
	bg_wait server
	assert_received "$E2E_WORK/client.out" "$SEED_A" 1M "B received the server's banner stream"
	sp_assert_handshakes 1
}

# Data on the ACK that completes a cookie handshake reaches the application:
# a hand-made client (tcp_craft.py) puts 11 bytes on its third ACK. The
# translate path does not hold that data (the SYN to A carries none): the
# client sends it again every 0.5 s, as its RTO would.
test_synproxy_data_on_the_third_ack_reaches_the_application() {
	local sport=40888 acked got retransmit=()
	require_cmd python3
	[ "$SP_PATH" = translate ] && retransmit=(--retransmit 10)
	sp_setup
	craft_quiet_stack "$NS_B" "$sport"
	bg_start server "$NS_A" python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$A4', $SP_PORT)); s.listen(8); s.settimeout(20)
c, _ = s.accept(); c.settimeout(5); print(c.recv(100).decode(), end='')"
	wait_listen "$NS_A" "$SP_PORT"
	in_ns "$NS_B" python3 "$E2E_DIR/tcp_craft.py" data-on-third-ack --src "$B4" --dst "$A4" \
		--sport $sport --dport "$SP_PORT" "${retransmit[@]}" >"$E2E_WORK/craft.out" 2>&1 ||
		fail "tcp_craft.py: $(tail -n 3 "$E2E_WORK/craft.out")"
	bg_wait server
	sed 's/^/# craft: /' "$E2E_WORK/craft.out"
	acked=$(awk '$1 == "data_acked" {print $2}' "$E2E_WORK/craft.out")
	got=$(cat "$E2E_WORK/server.out")
	assert_eq "$acked" yes "A acknowledged the data on the third ACK"
	assert_eq "$got" "third-ack!" "what the application read"
	sp_assert_handshakes 1
}

# A's server for tcp_craft.py's first-data modes: accepts $1 connections and
# prints how many of them first read "first-data\n" (within 1 s each).
sp_first_data_server() { # CONNS
	bg_start server "$NS_A" python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$A4', $SP_PORT)); s.listen(64); s.settimeout(20)
good = 0
for i in range($1):
    c, _ = s.accept(); c.settimeout(1)
    try:
        good += c.recv(100) == b'first-data\\n'
    except socket.timeout:
        pass
print(good)"
	wait_listen "$NS_A" "$SP_PORT"
}

# tcp_craft.py MODE from B, CONNS connections from port SPORT on, run under
# PREFIX (taskset ...), against sp_first_data_server, which it waits for;
# its output in $E2E_WORK/craft.out, A's segments in a.pcap of the work dir
# (kept with a failed run's).
sp_craft_first_data() { # MODE SPORT CONNS [PREFIX...]
	local mode=$1 sport=$2 conns=$3
	shift 3
	capture_start "$NS_A" "$IF_A" "tcp port $SP_PORT" "$E2E_WORK/a.pcap"
	in_ns "$NS_B" "$@" python3 "$E2E_DIR/tcp_craft.py" "$mode" --src "$B4" --dst "$A4" \
		--sport "$sport" --dport "$SP_PORT" --count "$conns" >"$E2E_WORK/craft.out" 2>&1 ||
		fail "tcp_craft.py: $(tail -n 3 "$E2E_WORK/craft.out")"
	bg_wait server
	capture_stop
	isng_log_counters
	sed 's/^/# craft: /' "$E2E_WORK/craft.out"
}

# A client's cookie ACK and its first data come in the same receive batch:
# tc sees both before the stack has made the connection of the first (the
# stack takes a batch's segments through its hooks first, then through TCP).
# The data must reach the connection the ACK made, not be judged a second
# cookie ACK (a second request socket, which the stack drops with the data):
# one passive open per connection, every first data acknowledged at once.
# A hand-made client (tcp_craft.py) sends each ACK and its data back to back
# on CPU 1, where A's receive runs as a thread (threaded NAPI) that only
# gets the CPU when the client waits: both are queued for it together.
test_synproxy_ack_and_first_data_in_one_batch_make_one_connection() {
	local conns=${SP_BATCH_CONNS:-40} sport=41000 opens acked got pids pid
	require_cmd python3
	sp_setup
	in_ns "$NS_A" sh -c "echo 1 >/sys/class/net/$IF_A/threaded" ||
		fail "threaded NAPI on $NS_A/$IF_A"
	pids=$(pgrep "^napi/$IF_A-") || fail "no NAPI thread of $IF_A"
	for pid in $pids; do
		taskset -p 2 "$pid" >/dev/null && chrt --idle -p 0 "$pid" ||
			fail "pin $IF_A's NAPI thread $pid to CPU 1 at idle priority"
	done
	craft_quiet_stack "$NS_B" "$sport-$((sport + conns - 1))"
	sp_first_data_server "$conns"
	sp_craft_first_data ack-then-data "$sport" "$conns" taskset -c 1
	opens=$(nstat_get "$NS_A" TcpPassiveOpens)
	acked=$(awk '$1 == "data_acked" {print $2}' "$E2E_WORK/craft.out")
	got=$(cat "$E2E_WORK/server.out")
	assert_eq "${opens:-0}" "$conns" "A's passive opens (one per connection)"
	assert_eq "$acked" "$conns" "first data acknowledged at once"
	assert_eq "$got" "$conns" "connections whose first data the application read"
	sp_assert_handshakes "$conns"
}

# With --syn-hook tc there is no XDP program, so a veth queues what it
# receives on the CPU that sent it: a client's cookie ACK and its first
# request, sent from two CPUs, reach TCP in either order. tc ingress gave
# the ACK its request socket and the connection its entry; a request on the
# other CPU that came first found only the listener, which answered with a
# RST (the rare read errors of bench-conn.sh's host row with the tc hook).
# It is judged as a cookie ACK itself now. Here A's firewall drops each bare
# ACK after tc ingress, so every first request comes before its socket, on
# the other CPU: tcp_craft.py sends the ACK from one CPU, the data from another.
# Every request must make its connection and reach the application.
test_synproxy_first_request_on_another_cpu_before_the_acks_socket_tc_syn_hook() {
	local conns=${SP_CPU_CONNS:-20} sport=42000 opens acked resets got before
	require_cmd python3
	[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
	SP_PEER_XDP=0 E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc --syn-hook tc" sp_setup
	craft_quiet_stack "$NS_B" "$sport-$((sport + conns - 1))"
	in_ns "$NS_A" nft -f - <<-EOF || fail "nft in $NS_A"
	table inet isng_e2e_bare_ack {
		chain input {
			type filter hook input priority 0; policy accept;
			tcp dport $SP_PORT tcp flags == ack ip length 40 counter drop
		}
	}
	EOF
	sp_first_data_server "$conns"
	before=$(nstat_get "$NS_A" TcpOutRsts)
	sp_craft_first_data ack-and-data-on-two-cpus "$sport" "$conns"
	in_ns "$NS_A" nft list table inet isng_e2e_bare_ack | grep -q "packets $conns " ||
		fail "A's firewall did not drop the $conns bare ACKs: $(in_ns "$NS_A" nft list \
			table inet isng_e2e_bare_ack | grep counter)"
	opens=$(nstat_get "$NS_A" TcpPassiveOpens)
	acked=$(awk '$1 == "data_acked" {print $2}' "$E2E_WORK/craft.out")
	resets=$(awk '$1 == "reset" {print $2}' "$E2E_WORK/craft.out")
	got=$(cat "$E2E_WORK/server.out")
	assert_eq "$resets" 0 "connections reset by A"
	assert_eq "$(( $(nstat_get "$NS_A" TcpOutRsts) - ${before:-0} ))" 0 "RSTs A sent"
	assert_eq "$acked" "$conns" "first requests acknowledged"
	assert_eq "${opens:-0}" "$conns" "A's passive opens (one per connection)"
	assert_eq "$got" "$conns" "connections whose first request the application read"
	assert_eq "$(isng_counter cookie_ack_before_socket)" "$conns" \
		"requests judged as the cookie ACK (cookie_ack_before_socket)"
	assert_eq "$(isng_counter cookie_handshake_to_stack)" "$((2 * conns))" \
		"request sockets given: the bare ACK's (dropped) and the request's"
}

# A listener that does not accept: once its queue is full, a valid cookie ACK
# would be dropped by the kernel without a trace, so the filter drops it and
# counts it (cookie_ack_queue_full); the client retransmits.
test_synproxy_full_accept_queue_is_counted() {
	local full
	require_cmd python3
	sp_setup
	bg_start server "$NS_A" python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$A4', $SP_PORT)); s.listen(1); time.sleep(30)"
	wait_listen "$NS_A" "$SP_PORT"
	in_ns "$NS_B" python3 -c "
import socket
conns = []
for i in range(6):
    c = socket.socket(); c.setblocking(False)
    c.connect_ex(('$A4', $SP_PORT)); conns.append(c)
import time; time.sleep(2)"
	full=$(isng_counter cookie_ack_queue_full)
	assert_ge "$full" 1 "cookie ACKs dropped for a full accept queue"
	assert_eq "$(in_ns "$NS_A" ss -Hltn "sport = :$SP_PORT" | awk '{print $2}')" 2 \
		"connections in the listener's queue (backlog 1 holds 2)"
}

# A spoofed-SYN flood at A's port while B completes 1000 connections: all of
# them succeed, and A's own SYN queue never sees a SYN.
test_synproxy_flood_while_1000_connections_succeed() {
	local flood rate reached
	sp_setup
	bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:$SP_PORT" --conns 1000 --send 4K \
		--recv --seed "$SEED_A" --timeout 60
	wait_listen "$NS_A" "$SP_PORT"
	capture_start "$NS_A" "$IF_A" "src net $FLOOD_NET4" "$E2E_WORK/a-flood.pcap"
	# The real client's segments, kept with the work dir of a failed run.
	capture_start "$NS_B" "$IF_B" "host $B4 and tcp port $SP_PORT" "$E2E_WORK/b.pcap"
	# The flood's SYN-ACKs leave by the way the client's come back (XDP_TX
	# out of the device the SYN came in on), into one veth ring with the
	# client's: at a few hundred thousand a second on two loaded CPUs that
	# ring drops some of both: in 2 of 11 gateway runs a client SYN whose
	# SYN-ACK was dropped 11 times in a row gave up after 6 s, while every
	# SYN isnguard saw was answered (cookie_sent = syn_seen); in another,
	# no SYN of 193 of the client's 1000 connections reached isnguard
	# (syn_seen counted the other 807, no retransmission), and one port's
	# 14 SYNs, 0.5 s apart, were all lost before its connect gave up after
	# 7 s: retries that linear timeouts (tcp_syn_linear_timeouts) keep
	# short. B's stack
	# tries as long as a SYN may (tcp_syn_retries 127, the client's own
	# --timeout bounds it), so a connect outlasts the flood's 10 s, as a
	# client would retry; every connection must still complete.
	in_ns "$NS_B" sysctl -qw net.ipv4.tcp_syn_retries=127
	sp_flood 4 syn 10 3000000 >"$E2E_WORK/flood.out" &
	BG_PIDS[flood]=$!
	sleep 1
	bg_start client "$NS_B" taskset -c 1 "$TCP_XFER" client --connect "$A4:$SP_PORT" --parallel 1000 \
		--send 4K --recv --seed "$SEED_B" --timeout 60
	bg_wait client
	bg_wait server
	wait "${BG_PIDS[flood]}"
	unset "BG_PIDS[flood]"
	capture_stop
	flood=$(cat "$E2E_WORK/flood.out")
	log "flood: $flood"
	isng_log_counters
	# A figure, not a check: once the server has its 1000 connections it
	# closes its listener, and the SYNs that find none are the stack's to
	# refuse. One that reached the listener shows in its counters below.
	reached=$(tcpdump -r "$E2E_WORK/a-flood.pcap" -nn 2>/dev/null | wc -l)
	log "packets from the flood's sources that reached $IF_A: $reached"
	rate=$(sed -n 's/.*: \([0-9]*\) per second.*/\1/p' <<<"$flood")
	assert_received "$E2E_WORK/server.out" "$SEED_B" 4K "A received from the 1000 connections"
	assert_received "$E2E_WORK/client.out" "$SEED_A" 4K "B received on its 1000 connections"
	assert_eq "$(grep -c '^conn ' "$E2E_WORK/client.out")" 1000 "connections B completed"
	assert_host_syn_queue_untouched
	assert_ge "$(isng_counter cookie_sent)" 100000 "cookie SYN-ACKs sent during the flood"
	sp_assert_handshakes 1000
	# The rate depends on the machine; the issue asks for >= 100k/s.
	if [ "${rate:-0}" -lt 100000 ]; then
		log "NOTE: the flood reached only $rate SYN/s on this machine"
	else
		log "ok: flood rate $rate SYN/s (>= 100000)"
	fi
}

# 100k forged ACKs make no connection; each is counted as an invalid cookie,
# and none reaches A's stack: their tuples had no connection on A.
test_synproxy_100k_forged_acks_make_no_connection() {
	local invalid before_invalid accepted
	sp_setup
	sp_server 1 30
	before_invalid=$(isng_counter cookie_ack_invalid_mac)
	log "forged ACKs: $(sp_flood 4 ack 20 100000)"
	assert_eq "$(isng_counter cookie_ack_invalid_to_stack)" 0 \
		"forged ACKs handed to A's stack (no connection on their tuples)"
	invalid=$(($(isng_counter cookie_ack_invalid_mac) - before_invalid))
	accepted=$(isng_counter cookie_handshake_to_stack)
	assert_eq "$accepted" 0 "connections made by 100000 forged ACKs"
	assert_ge "$invalid" 99000 "forged ACKs counted invalid (some may be lost on the veth)"
	assert_eq "$(in_ns "$NS_A" ss -Htn state established "sport = :$SP_PORT" | wc -l)" 0 \
		"established sockets on A"
	# The listener still works after it.
	sp_client_exchange
	bg_wait server
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "the real client's connection"
}

# A port not under --synproxy still gets keyed-ISN rewriting.
test_synproxy_unprotected_port_keeps_isn_rewriting() {
	sp_setup
	check_passive_open_isn "$A4" "$B4" "$SP_OTHER_PORT" "$IF_B" 1M
	assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent for the unprotected port"
}

# auto: below the threshold SYNs reach A's stack; a flood above it switches
# cookies on; once the flood stops, the next SYN switches them off again.
test_synproxy_auto_switches_around_threshold() {
	local on off passed
	sp_setup --synproxy-mode auto --syn-threshold 5000
	sp_server 2 60
	sp_client_exchange
	passed=$(isng_counter syn_passed_auto)
	assert_ge "$passed" 1 "SYNs passed to A below the threshold"
	log "flood: $(sp_flood 4 syn 3 1000000 50000)"
	on=$(isng_counter synproxy_auto_on)
	assert_ge "$on" 1 "synproxy_auto_on after 3 s at 50k SYN/s"
	assert_ge "$(isng_counter cookie_sent)" 1000 "cookies sent while on"
	sleep 1.2
	sp_client_exchange
	bg_wait server
	off=$(isng_counter synproxy_auto_off)
	assert_ge "$off" 1 "synproxy_auto_off once the flood stopped"
	assert_ge "$(isng_counter syn_passed_auto)" $((passed + 1)) "the next SYN went to A again"
}

# attach --synproxy refuses, with one line naming the sysctl, when the
# namespace takes no cookie connections; nothing is attached. A bad port
# list is bad usage.
test_synproxy_attach_refused_without_tcp_syncookies() {
	local out rc=0
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=0
	out=$(isng attach "$IF_A" --synproxy 80 2>&1 >/dev/null) || rc=$?
	out=$(grep -v '^# ' <<<"$out")
	assert_eq "$rc" 1 "exit status with tcp_syncookies=0"
	assert_eq "$(wc -l <<<"$out")" 1 "error lines"
	[[ "$out" == *"net.ipv4.tcp_syncookies is 0"*"sysctl -w net.ipv4.tcp_syncookies=1"* ]] ||
		fail "the error does not name the sysctl and its fix: $out"
	[[ "$(ip -n "$NS_A" -d link show "$IF_A")" =~ xdp ]] && fail "XDP left on $IF_A"
	[ ! -e "$PIN_DIR" ] || fail "pin dir $PIN_DIR left behind"
	assert_eq "$(in_ns "$NS_A" sysctl -n net.ipv4.tcp_syncookies)" 0 "tcp_syncookies left as it was"
	rc=0
	isng attach "$IF_A" --synproxy 80,9x >/dev/null 2>&1 || rc=$?
	assert_eq "$rc" 2 "exit status of a bad port list"
}

# Without the SYN proxy, A answers a spoofed flood itself and every SYN-ACK
# makes a handshake entry. Each used to arm a timer of its own, and under
# such a flood nearly every timer allocation failed (flow_timer_error rose
# with flow_created), leaving entries with no expiry. With the sweeper none
# is set up per flow.
test_flood_without_synproxy_every_entry_keeps_its_expiry() {
	local created errors
	sp_topology
	ip -n "$NS_A" route add 10.200.9.0/24 via "$M4A"	# A's SYN-ACKs to the spoofed sources
	isng_attach "$IF_A"
	bg_start server "$NS_A" "$TCP_XFER" server --listen "$A4:$SP_PORT" --timeout 20
	wait_listen "$NS_A" "$SP_PORT"
	log "flood: $(sp_flood 4 syn 3 600000)"
	created=$(isng_counter flow_created)
	errors=$(isng_counter flow_timer_error)
	assert_ge "$created" 50000 "handshake entries made by A's SYN-ACKs during the flood"
	assert_eq "$errors" 0 "flow_timer_error"
}

# `isnguard synproxy PORT` switches it on live on an interface attached
# without --synproxy; `synproxy off` gives the SYNs back to A's stack.
# The path switched live on A: translate (isnguard opens the connection to
# A's listener itself), then local again (a request socket of the listener).
test_synproxy_path_switched_live() {
	sp_setup
	sp_server 2 30
	isng synproxy --path translate --json | grep -q '"path":"translate"' ||
		fail "synproxy --path translate --json"
	sp_client_exchange
	assert_eq "$(isng_counter proxy_server_synack)" 1 "translated handshake, live"
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 0 "no request socket on the translate path"
	isng synproxy --path local | grep -q 'path local' || fail "synproxy --path local"
	sp_client_exchange
	bg_wait server
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "request socket once local again"
	assert_eq "$(isng_counter proxy_server_synack)" 1 "no more translated handshakes"
}

test_synproxy_switched_on_and_off_live() {
	topo_up
	ip -n "$NS_M" link set dev "$IF_MA" xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags ||
		fail "XDP_PASS program on $NS_M/$IF_MA"
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	isng_attach "$IF_A"
	isng synproxy "$SP_PORT" --json | grep -q '"mode":"always"' || fail "synproxy $SP_PORT --json"
	sp_server 2 30
	sp_client_exchange
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "handshake through the cookie, live"
	isng synproxy off | grep -q 'synproxy  off' || fail "synproxy off"
	sp_client_exchange
	bg_wait server
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "no cookie once off"
	assert_ge "$(isng_counter synack_rewritten)" 1 "A's own SYN-ACK, rewritten, once off"
}

# --syn-hook tc: tc ingress answers SYNs itself, so the SYN proxy switches
# on live there too (there is no XDP program to add), and off again; no
# XDP program on either end of the veth.
test_synproxy_switched_on_and_off_live_tc_syn_hook() {
	local link
	topo_up
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc --syn-hook tc" isng_attach "$IF_A"
	isng status | grep -q "SYN cookies: tc" || fail "status: no 'SYN cookies: tc': $(isng status)"
	isng synproxy "$SP_PORT" --json | grep -q '"mode":"always"' || fail "synproxy $SP_PORT --json"
	sp_server 2 30
	sp_client_exchange
	assert_eq "$(isng_counter cookie_sent)" 1 "cookie SYN-ACK sent from tc, live"
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "handshake through the cookie, live"
	isng synproxy off | grep -q 'synproxy  off' || fail "synproxy off"
	sp_client_exchange
	bg_wait server
	assert_eq "$(isng_counter cookie_sent)" 1 "no cookie once off"
	assert_ge "$(isng_counter synack_rewritten)" 1 "A's own SYN-ACK, rewritten, once off"
	for link in "$NS_A $IF_A" "$NS_M $IF_MA"; do
		# shellcheck disable=SC2086 # namespace and device
		[[ "$(ip -n ${link% *} -d link show dev ${link#* })" == *xdp* ]] &&
			fail "an XDP program on $link"
	done
	isng detach "$IF_A" || fail "isng detach"
	[ -z "$(tc -n "$NS_A" filter show dev "$IF_A" ingress)" ] || fail "tc ingress filter left"
	[ ! -e "$PIN_DIR" ] || fail "pin dir $PIN_DIR still there"
}
