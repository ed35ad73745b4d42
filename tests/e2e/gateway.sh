# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of isnguard on a gateway (issue 9), sourced by run.sh
# (same topology, same helpers). isnguard runs in M, the router, attached to
# m1, the interface facing the clients (B); it protects A, the server behind
# it, whose packets it sees only as they are forwarded: B's arrive on m1's
# ingress (XDP, or tc with --ingress tc), A's leave through m1's tc egress.
# XDP cannot see a forwarded veth skb's partial checksum (docs/operations.md, --ingress
# tc): with XDP the senders compute checksums in full.
# `isng` runs in $NS_M for these tests (ISNG_NS), and topo_down detaches m1.

# The topology with isnguard on M's m1, and a key in $KEY (also in
# $E2E_WORK/key).
gw_setup() {
	topo_up
	# shellcheck disable=SC2034 # read by isng and topo_down (lib.sh)
	ISNG_NS=$NS_M ISNG_IF=$IF_MB
	KEY=$(new_key_file "$E2E_WORK/key")
	isng_attach "$IF_MB" --hash siphash
	isng key set --from-file "$E2E_WORK/key" || fail "isng key set --from-file"
}

# One connection through M, 20 MiB each way: A serves and B connects
# (passive), or A connects to B (active). The ISN of A's SYN-ACK or SYN as
# B sees it is the keyed one for A's endpoint and B's, and not the one A's
# stack chose (captured on a0). A and B verify every checksum in software;
# the senders compute them in full (csum_strict_on), or with PARTIAL=1 A
# and B leave them partial, as a host's stack does (csum_verified partial).
check_gw_open() { # active|passive FAMILY [PARTIAL(0|1)]
	local role=$1 fam=$2 partial=${3:-0} a b before after wire host local_ep remote_ep a_role
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	gw_setup
	if [ "$partial" = 1 ]; then csum_verified partial; else csum_strict_on; fi
	capture_start "$NS_B" "$IF_B" "tcp port $PORT" "$E2E_WORK/b.pcap"
	capture_start "$NS_A" "$IF_A" "tcp port $PORT" "$E2E_WORK/a.pcap"
	before=$(mono_ns)
	if [ "$role" = active ]; then
		transfer "$NS_B" "$NS_A" "$(ep "$fam" "$b" $PORT)" 20M 60 --local-port $CPORT
		local_ep=$(ep "$fam" "$a" $CPORT) remote_ep=$(ep "$fam" "$b" $PORT) a_role=client
	else
		transfer "$NS_A" "$NS_B" "$(ep "$fam" "$a" $PORT)" 20M 60 --local-port $CPORT
		local_ep=$(ep "$fam" "$a" $PORT) remote_ep=$(ep "$fam" "$b" $CPORT) a_role=server
	fi
	bg_wait client
	after=$(mono_ns)
	bg_wait server
	capture_stop
	log "on b0:"
	log_syns "$E2E_WORK/b.pcap"
	log "on a0:"
	log_syns "$E2E_WORK/a.pcap"
	nstat_report "$NS_A" A
	nstat_report "$NS_B" B
	assert_transfer_intact 20M "$a_role"
	wire=$(syn_isn_from_capture "$E2E_WORK/b.pcap" "$a")
	host=$(syn_isn_from_capture "$E2E_WORK/a.pcap" "$a")
	assert_isn "$wire" siphash "$KEY" "$local_ep" "$remote_ep" "$before" "$after"
	[[ "$host" =~ ^[0-9]+$ ]] || fail "no SYN/SYN-ACK from A in the capture on a0 (got '$host')"
	[ "$wire" != "$host" ] || fail "ISN on b0 ($wire) is the one A sent on a0 ($host): not rewritten"
	log "ok: ISN on b0 $wire, A's own on a0 $host"
	assert_no_csum_errors "$NS_A" A
	assert_no_csum_errors "$NS_B" B
	assert_no_csum_errors "$NS_M" M
	if [ "$role" = active ]; then
		assert_ge "$(isng_counter syn_rewritten)" 1 "counter syn_rewritten (on M)"
	else
		assert_ge "$(isng_counter synack_rewritten)" 1 "counter synack_rewritten (on M)"
	fi
	assert_gt "$(isng_counter seq_translated)" 0 "counter seq_translated (on M)"
	assert_gt "$(isng_counter ack_translated)" 0 "counter ack_translated (on M)"
}

test_gateway_passive_open_ipv4() { check_gw_open passive 4; }
test_gateway_passive_open_ipv6() { check_gw_open passive 6; }
test_gateway_active_open_ipv4() { check_gw_open active 4; }
test_gateway_active_open_ipv6() { check_gw_open active 6; }
# The ingress program on clsact (attach --ingress tc), the one for a host
# that forwards what a veth gives it: partial checksums are kept right only
# there (docs/operations.md, --ingress tc), so only these tests leave them partial.
test_gateway_passive_open_tc_ingress_ipv4() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" check_gw_open passive 4
}
test_gateway_active_open_tc_ingress_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" check_gw_open active 6
}
test_gateway_passive_open_tc_ingress_partial_checksums_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" check_gw_open passive 6 1
}
test_gateway_active_open_tc_ingress_partial_checksums_ipv4() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" check_gw_open active 4 1
}

# ---- the SYN proxy on the gateway: needs the translate path ----
#
# `attach m1 --synproxy PORT` on M: A's port is a forwarded destination, so
# the default --synproxy-path auto takes the translate path. XDP on m1
# answers B's SYN with a cookie SYN-ACK (XDP_TX, taken by B's b0 through its
# XDP_PASS program: sp_topology), a valid cookie ACK becomes a SYN from M
# to A with the client's ISN and options, A's SYN-ACK is caught at m1's tc
# egress and turned into the ACK that opens A's side, and from then on
# seq/ack, SACK, timestamps and windows are translated per flow. The
# synproxy.sh checks run with SP_WHERE=gateway and SP_PATH=translate;
# floods come from M's flood subnets, sent on b0 into m1.

# CMD with the SYN proxy on M's m1, translating.
gw_sp() { SP_WHERE=gateway SP_PATH=translate "$@"; }

# A's window shift far from the one M offers: the windows A and B announce
# are rescaled per flow (proxy_window_rewritten).
GW_A_SMALL_RMEM="4096 65536 262144"

# needs the translate path
test_gateway_synproxy_ipv4_timestamps_sack() { gw_sp check_synproxy_transfer 4 1 1 0; }
# needs the translate path
test_gateway_synproxy_ipv4_no_timestamps() { gw_sp check_synproxy_transfer 4 0 1 0; }
# needs the translate path
test_gateway_synproxy_ipv4_no_timestamps_wscale_8() { gw_sp check_synproxy_transfer 4 0 1 1; }
# needs the translate path
test_gateway_synproxy_ipv4_no_sack() { gw_sp check_synproxy_transfer 4 1 0 0; }
# needs the translate path
test_gateway_synproxy_ipv6_timestamps_sack() { gw_sp check_synproxy_transfer 6 1 1 0; }
# needs the translate path
test_gateway_synproxy_ipv6_no_timestamps_no_sack() { gw_sp check_synproxy_transfer 6 0 0 1; }
# needs the translate path
test_gateway_synproxy_server_window_scale_differs_ipv4() {
	gw_sp check_synproxy_transfer 4 1 1 0 "$GW_A_SMALL_RMEM"
}
# Without timestamps the cookie keeps a client shift of 8 only (B's, with
# WSCALE8=1): the SYN to A carries it, and A's own shift differs from the
# one the cookie SYN-ACK offered. needs the translate path
test_gateway_synproxy_server_window_scale_differs_no_timestamps_ipv6() {
	gw_sp check_synproxy_transfer 6 0 1 1 "$GW_A_SMALL_RMEM"
}
# Every checksum the translation touched (seq, ack, TSval/TSecr, windows)
# verified by A and B: computed in full by the senders with XDP; left
# partial, as forwarded veth skbs carry them, with --ingress tc.
# needs the translate path
test_gateway_synproxy_checksums_verified_ipv4() {
	SP_CSUM=strict gw_sp check_synproxy_transfer 4 1 1 0 "$GW_A_SMALL_RMEM"
}
# needs the translate path
test_gateway_synproxy_tc_ingress_partial_checksums_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" SP_CSUM=partial \
		gw_sp check_synproxy_transfer 6 1 1 0 "$GW_A_SMALL_RMEM"
}
# needs the translate path
test_gateway_synproxy_server_speaks_first() { gw_sp test_synproxy_server_speaks_first; }

# M has a wildcard listener of its own on the port it forwards to A, and the
# kernel has bpf_sk_assign_tcp_reqsk, so auto takes the local path for M's
# own listeners. The socket lookup finds M's listener for B's SYN to A, but
# A's address is one M forwards (bpf/route.h): the cookie ACK takes the
# translate path to A, and the connection opens and carries data (issue 17,
# item 4: the ACK went to M's listener, and it never opened).
test_gateway_synproxy_own_wildcard_listener_on_the_forwarded_port() {
	local a
	a=$(addr_of A 4)
	SP_WHERE=gateway sp_setup
	isng synproxy | grep -q "forwarded servers translated" ||
		skip "this kernel lacks bpf_sk_assign_tcp_reqsk: auto translates every connection"
	bg_start m_listener "$NS_M" "$TCP_XFER" server --listen "0.0.0.0:$SP_PORT" --send 1K \
		--seed "$SEED_A" --timeout 60
	wait_listen "$NS_M" "$SP_PORT"
	transfer "$NS_A" "$NS_B" "$(ep 4 "$a" $SP_PORT)" 1M 30
	bg_wait client
	bg_wait server
	assert_transfer_intact 1M server
	SP_PATH=translate sp_assert_handshakes 1
	assert_eq "$(isng_counter syn_not_local)" 0 "syn_not_local"
}
# needs the translate path
test_gateway_synproxy_data_on_the_third_ack_reaches_the_application() {
	gw_sp test_synproxy_data_on_the_third_ack_reaches_the_application
}
# needs the translate path
test_gateway_synproxy_flood_while_1000_connections_succeed() {
	gw_sp test_synproxy_flood_while_1000_connections_succeed
}

# nft in NS drops the first packet of its own that MATCH takes (an nft
# match on the output hook), as a loss on the way would: table TABLE, its
# counter read by nft_first_dropped.
nft_drop_first_output() { # NS TABLE MATCH
	in_ns "$1" nft -f - <<-EOF || fail "nft in $1"
	table inet $2 {
		chain output {
			type filter hook output priority 0; policy accept;
			$3 quota until 100 bytes counter drop
		}
	}
	EOF
}

# How many packets nft_drop_first_output's table TABLE in NS dropped.
nft_first_dropped() { # NS TABLE
	in_ns "$1" nft list table inet "$2" | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'
}

# A's side opens late: A's stack drops its own first SYN-ACK (nft, in A),
# so A's side opens only with the SYN-ACK it retransmits a second later (or
# isnguard's resent SYN brings). The client, whose side the cookie opened,
# has its data ready at once, but the cookie SYN-ACK's zero window holds it
# until isnguard passes it A's window: it retransmits nothing (its window
# probes, dropped while A's side opens, are no retransmissions), and every
# byte arrives. Both ends on one CPU (TRANSFER_CPU), and a retransmission A
# reported as a duplicate (DSACK) is not counted: the machine's veth
# reorders segments of two CPUs, and B then resent 60 segments A had (one
# CI run), which says nothing of the window. needs the translate path
check_synproxy_data_while_the_server_side_opens() { # FAMILY
	local fam=$1 a retrans dsack
	a=$(addr_of A "$fam")
	require_cmd nft
	sp_setup
	nft_drop_first_output "$NS_A" isng_e2e_slow_open \
		"tcp sport $SP_PORT tcp flags & (syn | ack) == syn | ack"
	TRANSFER_CPU=0 transfer "$NS_A" "$NS_B" "$(ep "$fam" "$a" "$SP_PORT")" 1M 30
	bg_wait client
	bg_wait server
	nstat_report "$NS_B" B
	assert_eq "$(nft_first_dropped "$NS_A" isng_e2e_slow_open)" 1 \
		"A's SYN-ACKs dropped in A (its first)"
	assert_transfer_intact 1M server
	assert_eq "$(isng_counter proxy_client_window_opened)" 1 \
		"proxy_client_window_opened (A's window passed to B once A's side was open)"
	retrans=$(nstat_get "$NS_B" TcpRetransSegs)
	dsack=$(nstat_get "$NS_B" TcpExtTCPDSACKRecv)
	assert_eq "$((retrans > dsack ? retrans - dsack : 0))" 0 \
		"B's retransmitted segments A had not received (it waited for the window; $retrans resent, $dsack of them duplicates)"
	sp_assert_handshakes 1
	assert_host_syn_queue_untouched
}
# needs the translate path
test_gateway_synproxy_data_while_the_server_side_opens_ipv4() {
	gw_sp check_synproxy_data_while_the_server_side_opens 4
}
# needs the translate path
test_gateway_synproxy_data_while_the_server_side_opens_ipv6() {
	gw_sp check_synproxy_data_while_the_server_side_opens 6
}

# The client's cookie ACK is lost (nft in B drops its first pure ACK to the
# port, as a flood's congestion did for 28 of 1,000 connections once).
# Held by the cookie SYN-ACK's zero window, the client sends no data that
# would carry the cookie again, only zero-window probes (seq: its ISN); a
# probe opens the server's side as the ACK would have, and every byte
# arrives. needs the translate path
check_synproxy_lost_cookie_ack_probe_opens() { # FAMILY
	local fam=$1 a
	a=$(addr_of A "$fam")
	require_cmd nft
	sp_setup
	nft_drop_first_output "$NS_B" isng_e2e_lost_ack "tcp dport $SP_PORT tcp flags == ack"
	transfer "$NS_A" "$NS_B" "$(ep "$fam" "$a" "$SP_PORT")" 1M 30
	bg_wait client
	bg_wait server
	nstat_report "$NS_B" B
	assert_eq "$(nft_first_dropped "$NS_B" isng_e2e_lost_ack)" 1 \
		"B's cookie ACKs dropped in B (its first)"
	assert_transfer_intact 1M server
	assert_eq "$(isng_counter cookie_ack_valid)" 1 "cookie_ack_valid (the probe's)"
	assert_eq "$(isng_counter proxy_syn_to_server)" 1 "proxy_syn_to_server (one SYN, from the probe)"
	assert_eq "$(isng_counter proxy_client_window_opened)" 1 "proxy_client_window_opened"
	sp_assert_handshakes 1
	assert_host_syn_queue_untouched
}
# needs the translate path
test_gateway_synproxy_lost_cookie_ack_probe_opens_ipv4() {
	gw_sp check_synproxy_lost_cookie_ack_probe_opens 4
}
# needs the translate path
test_gateway_synproxy_lost_cookie_ack_probe_opens_ipv6() {
	gw_sp check_synproxy_lost_cookie_ack_probe_opens 6
}

# 20 MiB each way through 1% loss in M's forward chain (the segments to and
# from A, and the handshake's too when the draw falls on them): SACK and
# retransmissions through the translation. The client speaks first: the
# cookie opens its side before A's, and it sends at once.
# needs the translate path
check_synproxy_transfer_with_loss() { # FAMILY
	local a
	a=$(addr_of A "$1")
	require_cmd nft
	sp_setup
	loss_on 1
	transfer "$NS_A" "$NS_B" "$(ep "$1" "$a" "$SP_PORT")" 20M 120
	bg_wait client
	bg_wait server
	log "$(loss_dropped) packets dropped by M"
	nstat_report "$NS_A" A
	nstat_report "$NS_B" B
	assert_transfer_intact 20M server
	assert_gt "$(loss_dropped)" 0 "packets dropped by the loss rule"
	assert_gt "$(nstat_get "$NS_A" TcpRetransSegs)" 0 "A's retransmitted segments"
	assert_gt "$(isng_counter sack_blocks_translated)" 0 "sack_blocks_translated"
	sp_assert_handshakes 1
	assert_host_syn_queue_untouched
	assert_gt "$(isng_counter seq_translated)" 0 "seq_translated"
	assert_gt "$(isng_counter ack_translated)" 0 "ack_translated"
}
# needs the translate path
test_gateway_synproxy_transfer_with_loss_ipv4() { gw_sp check_synproxy_transfer_with_loss 4; }
# needs the translate path
test_gateway_synproxy_transfer_with_loss_ipv6() { gw_sp check_synproxy_transfer_with_loss 6; }

# No listener on A's port. On the gateway: A answers the SYN M sends it
# with a RST, and the client, whose side the cookie handshake opened, is
# reset. On A itself the datapath sees that no socket listens, and A's
# stack refuses the SYN as without isnguard. No flow is left for the
# connection. needs the translate path
check_synproxy_server_refuses() { # FAMILY
	local fam=$1 a b out refused
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	require_cmd python3
	sp_setup
	in_ns "$NS_B" timeout 20 python3 -c "
import errno, socket, sys
s = socket.socket(socket.AF_INET6 if '$fam' == '6' else socket.AF_INET)
s.bind(('$b', $CPORT)); s.settimeout(10)
try:
    s.connect(('$a', $SP_PORT))
    print('connected')
    s.sendall(b'hello')
    data = s.recv(100)
    print('eof' if not data else 'data')
except ConnectionResetError:
    print('reset')
except ConnectionRefusedError:
    print('refused')
except socket.timeout:
    print('timeout')
" >"$E2E_WORK/client.out" 2>&1
	out=$(tr '\n' ' ' <"$E2E_WORK/client.out")
	log "client: $out"
	[[ "$out" == *reset* || "$out" == *refused* ]] ||
		fail "client: expected ECONNRESET or ECONNREFUSED, actual: $out"
	log "ok: the client was $(tail -n 1 "$E2E_WORK/client.out")"
	if [ "$SP_WHERE" = gateway ]; then
		refused=$(isng_counter proxy_server_refused)
		assert_ge "$refused" 1 "proxy_server_refused"
	else
		assert_eq "$(tail -n 1 "$E2E_WORK/client.out")" refused "the client's connect on A's closed port"
		assert_ge "$(isng_counter syn_no_listener)" 1 "syn_no_listener"
		assert_eq "$(isng_counter cookie_sent)" 0 "cookie_sent for a port nothing listens on"
	fi
	isng flows --json >"$E2E_WORK/flows.json" || fail "isng flows --json"
	grep -F -e "\"$(ep "$fam" "$b" $CPORT)\"" "$E2E_WORK/flows.json" &&
		fail "a flow is left for $(ep "$fam" "$b" $CPORT): $(cat "$E2E_WORK/flows.json")"
	log "ok: no flow left for $(ep "$fam" "$b" $CPORT) ($(json_num count <"$E2E_WORK/flows.json") flows in all)"
	assert_host_syn_queue_untouched
}
# needs the translate path
test_gateway_synproxy_server_refuses_client_is_reset_ipv4() { gw_sp check_synproxy_server_refuses 4; }
# needs the translate path
test_gateway_synproxy_server_refuses_client_is_reset_ipv6() { gw_sp check_synproxy_server_refuses 6; }

# ---- a closed proxied connection's tuple, taken by a new connection ----

# B's client from port $CPORT, as LABEL: connect, send a line, read its
# echo, then close with a RST (SO_LINGER 0), so neither end keeps the
# tuple (no TIME_WAIT) and M's entry is closed. Prints LABEL and what it
# read, or the error.
gw_reuse_client() { # FAMILY LABEL
	local fam=$1 a b
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	in_ns "$NS_B" timeout 20 python3 -c "
import socket, struct
s = socket.socket(socket.AF_INET6 if '$fam' == '6' else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$b', $CPORT)); s.settimeout(6)
try:
    s.connect(('$a', $SP_PORT))
    s.sendall(b'hello')
    data = s.recv(100)
    print('$2', data.decode() if data else 'eof')
except OSError as e:
    print('$2', type(e).__name__)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
s.close()" >>"$E2E_WORK/client.out" 2>&1
}

# A connection through the SYN proxy on M ends (B's RST: the entry at M is
# closed); the proxy is switched off and B connects again from the same
# port. Its SYN reaches A directly, and A's SYN-ACK meets the closed
# proxied entry at m1's tc egress: it must retire it and go out as a new
# flow's (its keyed ISN), not be taken for an answer to the proxy's SYN.
# Before, it was dropped there (drop_error) until the entry expired, 90 s
# on: the connect timed out. needs the translate path
check_synproxy_closed_tuple_reused() { # FAMILY
	local fam=$1 a
	a=$(addr_of A "$fam")
	require_cmd python3
	sp_setup
	bg_start server "$NS_A" python3 -c "
import socket
s = socket.socket(socket.AF_INET6 if '$fam' == '6' else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$a', $SP_PORT)); s.listen(8); s.settimeout(40)
for _ in range(2):
    c, _ = s.accept(); c.settimeout(10)
    c.sendall(c.recv(100))
    try:
        c.recv(100)
    except OSError:
        pass
    c.close()"
	wait_listen "$NS_A" "$SP_PORT"
	: >"$E2E_WORK/client.out"
	gw_reuse_client "$fam" proxied
	assert_eq "$(isng_counter proxy_server_synack)" 1 "proxy_server_synack: the first connection proxied"
	isng flows --json >"$E2E_WORK/flows.json" || fail "isng flows --json"
	grep -q '"phase": *"closed"' "$E2E_WORK/flows.json" ||
		fail "no closed entry for the first connection: $(cat "$E2E_WORK/flows.json")"
	isng synproxy off | grep -q 'synproxy  off' || fail "synproxy off"
	gw_reuse_client "$fam" direct
	assert_eq "$(tr '\n' ' ' <"$E2E_WORK/client.out")" "proxied hello direct hello " \
		"what B's two connections on one tuple read"
	bg_wait server
	assert_eq "$(isng_counter proxy_server_synack)" 1 "proxy_server_synack: the second one direct"
	assert_ge "$(isng_counter synack_rewritten)" 1 "synack_rewritten: A's SYN-ACK as a new flow's"
	assert_eq "$(isng_counter drop_error)" 0 "drop_error"
}
# needs the translate path
test_gateway_synproxy_closed_tuple_reused_by_a_direct_syn_ipv4() {
	gw_sp check_synproxy_closed_tuple_reused 4
}
# needs the translate path
test_gateway_synproxy_closed_tuple_reused_by_a_direct_syn_tc_ingress_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" gw_sp check_synproxy_closed_tuple_reused 6
}

# ---- a stale server socket on the tuple: its challenge ACK answered ----

# A keeps a socket of an earlier connection from B's port that B has lost
# (B's RST dropped on its way out, as if B had rebooted) and that isnguard
# no longer tracks (detached and attached again: the entry gone, as when it
# expires). B connects again from that port through the SYN proxy: A
# answers the proxy's SYN with a challenge ACK (RFC 5961 4), which isnguard
# answers with the RST B's SYN-SENT stack would send (RFC 9293 3.10.7.3),
# clearing A's stale socket; the SYN's resend a second later opens the
# connection. Before, the challenge ACK was dropped, every resend drew
# another, and B's connection was reset at the connect timeout.
# needs the translate path
check_synproxy_stale_server_socket_cleared() { # FAMILY
	local fam=$1 a b
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	require_cmd python3 nft
	sp_setup
	bg_start server "$NS_A" python3 -c "
import socket
s = socket.socket(socket.AF_INET6 if '$fam' == '6' else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$a', $SP_PORT)); s.listen(8); s.settimeout(40)
for _ in range(2):
    c, _ = s.accept(); c.settimeout(30)
    try:
        c.sendall(c.recv(100))
        c.recv(100)
    except OSError:
        pass
    c.close()"
	wait_listen "$NS_A" "$SP_PORT"
	in_ns "$NS_B" nft -f - <<-EOF2 || fail "nft: drop B's RSTs"
	table inet isng_e2e_norst {
		chain output {
			type filter hook output priority 0; policy accept;
			tcp dport $SP_PORT tcp flags & rst == rst counter drop
		}
	}
	EOF2
	: >"$E2E_WORK/client.out"
	gw_reuse_client "$fam" first
	in_ns "$NS_A" ss -Htn state established "sport = :$SP_PORT" | grep -q . ||
		fail "A has no socket left from B's first connection"
	in_ns "$NS_B" nft delete table inet isng_e2e_norst || fail "nft: B's RSTs again"
	isng detach "$IF_MB" || fail "isng detach"
	isng_attach "$IF_MB" --synproxy "$SP_PORT"
	isng key set --from-file "$E2E_WORK/key" || fail "isng key set"
	gw_reuse_client "$fam" second
	assert_eq "$(tr '\n' ' ' <"$E2E_WORK/client.out")" "first hello second hello " \
		"what B's two connections on one tuple read"
	bg_wait server
	assert_ge "$(isng_counter proxy_server_challenge_reset)" 1 \
		"proxy_server_challenge_reset: A's challenge ACK answered with a RST"
	assert_ge "$(isng_counter proxy_syn_resent)" 1 "proxy_syn_resent: the SYN again, to a clear tuple"
	assert_eq "$(isng_counter proxy_server_gave_up)" 0 "proxy_server_gave_up"
}
# needs the translate path
test_gateway_synproxy_stale_server_socket_cleared_ipv4() {
	gw_sp check_synproxy_stale_server_socket_cleared 4
}
# needs the translate path
test_gateway_synproxy_stale_server_socket_cleared_tc_ingress_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" gw_sp check_synproxy_stale_server_socket_cleared 6
}

# ---- the translate path forced on the host: isnguard on A's a0 ----

# CMD with the SYN proxy on A's a0, translating although the local path
# would do (attach --synproxy-path translate).
host_translate() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --synproxy-path translate" SP_PATH=translate "$@"
}

# needs the translate path
test_synproxy_translate_path_ipv4_timestamps_sack() { host_translate check_synproxy_transfer 4 1 1 0; }
# needs the translate path
test_synproxy_translate_path_ipv4_no_timestamps() { host_translate check_synproxy_transfer 4 0 1 0; }
# needs the translate path
test_synproxy_translate_path_ipv6_no_timestamps_no_sack() {
	host_translate check_synproxy_transfer 6 0 0 1
}
# needs the translate path
test_synproxy_translate_path_server_speaks_first() { host_translate test_synproxy_server_speaks_first; }
# needs the translate path
test_synproxy_translate_path_flood_while_1000_connections_succeed() {
	host_translate test_synproxy_flood_while_1000_connections_succeed
}
# needs the translate path
test_synproxy_translate_path_data_while_the_server_side_opens_ipv4() {
	host_translate check_synproxy_data_while_the_server_side_opens 4
}
# needs the translate path
test_synproxy_translate_path_closed_port_is_refused_ipv4() {
	host_translate check_synproxy_server_refuses 4
}

# ---- a SYN to A lost: isnguard resends it (bpf/resend.h) ----

# A drops SYNs from B to the SYN proxy's port: the first one only (an
# nftables set remembers B), or all of them.
gw_drop_syns_from_b() { # first|all
	local remember=
	require_cmd nft
	[ "$1" = first ] && remember="ip saddr != @seen add @seen { ip saddr }"
	in_ns "$NS_A" nft -f - <<-EOF2 || fail "nft: the SYN drop rule in A"
	table inet isng_e2e_drop {
		set seen { type ipv4_addr; flags dynamic; }
		chain input {
			type filter hook input priority -10; policy accept;
			ip saddr $B4 tcp dport $SP_PORT tcp flags & (syn | ack) == syn $remember counter drop
		}
	}
	EOF2
}

# SYNs A dropped.
gw_syns_dropped() {
	in_ns "$NS_A" nft list chain inet isng_e2e_drop input |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'
}

# A server that speaks first, as SMTP does: a banner line, then it closes.
gw_banner_server() {
	require_cmd python3
	bg_start server "$NS_A" python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$A4', $SP_PORT)); s.listen(8); s.settimeout(30)
c, _ = s.accept(); c.sendall(b'220 isnguard e2e\\r\\n'); c.close()"
	wait_listen "$NS_A" "$SP_PORT"
}

# Its client: sends nothing at all (no data, no FIN) and prints what it
# reads, or how the connection ended.
gw_banner_client() { # TIMEOUT
	bg_start client "$NS_B" python3 -c "
import socket
s = socket.create_connection(('$A4', $SP_PORT), timeout=$1)
try:
    print(s.recv(100).decode().strip())
except ConnectionResetError:
    print('reset')
except socket.timeout:
    print('timeout')"
}

# The server speaks first and A drops the first SYN from B: B's client
# sends nothing after its cookie ACK, so only isnguard can send the SYN
# again (a second later, proxy_syn_resent), and the banner arrives. Before,
# the SYN was resent only on the client's retransmissions: it waited for ever.
# needs the translate path
test_gateway_synproxy_server_speaks_first_lost_syn_resent() {
	gw_sp sp_setup
	gw_drop_syns_from_b first
	gw_banner_server
	gw_banner_client 8
	bg_wait client
	bg_wait server
	assert_eq "$(cat "$E2E_WORK/client.out")" "220 isnguard e2e" "what the client read"
	assert_eq "$(gw_syns_dropped)" 1 "SYNs A dropped"
	assert_eq "$(isng_counter proxy_syn_resent)" 1 "proxy_syn_resent"
	assert_eq "$(isng_counter proxy_server_gave_up)" 0 "proxy_server_gave_up"
}

# A drops every SYN from B: the SYN is resent at 1, 3 and 7 s, and at the
# connect timeout (10 s) the client gets a RST it accepts (its recv fails:
# connection reset) and the entry goes.
# needs the translate path
test_gateway_synproxy_silent_server_client_reset() {
	gw_sp sp_setup
	gw_drop_syns_from_b all
	gw_banner_server
	gw_banner_client 20
	bg_wait client
	assert_eq "$(cat "$E2E_WORK/client.out")" reset "how the client's connection ended"
	assert_eq "$(gw_syns_dropped)" 4 "SYNs A dropped (the first and 3 resends)"
	assert_eq "$(isng_counter proxy_syn_resent)" 3 "proxy_syn_resent"
	assert_eq "$(isng_counter proxy_server_gave_up)" 1 "proxy_server_gave_up"
	assert_eq "$(isng_counter proxy_syn_to_server)" 1 "proxy_syn_to_server (the client resent nothing)"
}

# More connections at once than a run of the tick takes
# (SYNPROXY_RESEND_BATCH, 128), all to a server whose SYNs A drops: the
# first tick past their first second resends every one, its runs handing
# over to each other through the tick device's ingress
# (resend_runs_chained), not a few dozen a second. Counted from when the
# last connection was up to 2.5 s after: a second for the resend to come
# due, a second of ticks, and margin, but not the 3 s of the next resend.
# needs the translate path
test_gateway_synproxy_many_silent_servers_resent_on_time() {
	local n=400 up resent=0 i
	gw_sp sp_setup
	gw_drop_syns_from_b all
	bg_start server "$NS_A" python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$A4', $SP_PORT)); s.listen(8); time.sleep(60)"
	wait_listen "$NS_A" "$SP_PORT"
	bg_start clients "$NS_B" python3 -c "
import select, socket, time
socks = []
for i in range($n):
    s = socket.socket(); s.setblocking(False); s.connect_ex(('$A4', $SP_PORT)); socks.append(s)
pending, deadline = set(socks), time.time() + 5
while pending and time.time() < deadline:
    _, ready, _ = select.select([], list(pending), [], 0.5)
    pending -= set(ready)
print(len(socks) - len(pending), flush=True)
time.sleep(60)"
	for ((i = 0; i < 100; i++)); do
		up=$(head -n 1 "$E2E_WORK/clients.out" 2>/dev/null)
		[ -n "$up" ] && break
		sleep 0.1
	done
	assert_eq "$up" "$n" "B's connections up (the cookie handshake)"
	for ((i = 0; i < 25; i++)); do
		sleep 0.1
		resent=$(isng_counter proxy_syn_resent)
		[ "$resent" -ge "$n" ] && break
	done
	log "resent $resent after $(((i + 1) * 100)) ms; runs $(isng_counter resend_runs)," \
		"handed over $(isng_counter resend_runs_chained), over 1 ms $(isng_counter resend_runs_over_1ms)"
	assert_eq "$resent" "$n" "proxy_syn_resent within 2.5 s of the last connection"
	assert_eq "$(gw_syns_dropped)" "$((2 * n))" "SYNs A dropped (the first and one resend each)"
	assert_gt "$(isng_counter resend_runs_chained)" 0 "runs that handed over to the next (resend_runs_chained)"
}

# The same under --ingress tc: the resent SYN, coming in at m1 again,
# passes tc ingress untouched (proxy_own_ack_passed) and is not held.
# needs the translate path
test_gateway_synproxy_server_speaks_first_lost_syn_resent_tc_ingress() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" \
		test_gateway_synproxy_server_speaks_first_lost_syn_resent
}

# And with --syn-hook tc, where the SYN proxy at tc ingress sees the
# resent SYN first and finds its tuple busy: it goes on as above.
# needs the translate path
test_gateway_synproxy_server_speaks_first_lost_syn_resent_tc_syn_hook() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc --syn-hook tc" \
		test_gateway_synproxy_server_speaks_first_lost_syn_resent
}
