# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests with the programs users run (issue 17): nginx on A behind
# isnguard; B's clients are wrk (one connection per request, a few seconds),
# ab and curl. Sourced by run.sh (same topology and helpers; the SYN proxy's
# set-up is synproxy.sh's). They check correctness, never timing: every
# request is answered 200 with the whole body, with no socket error or
# timeout, and A's stack opens exactly the connections B's opened
# (TcpPassiveOpens in A against TcpActiveOpens in B). A cookie handshake
# that gives the listener two request sockets for one connection (issue 17:
# the first request right after the cookie ACK) shows as a passive open in
# A that no active open in B matches, and, since the kernel then drops the
# segment the second one came with, as a retransmission by B: on these
# lossless veths B retransmits nothing otherwise.

NGX_WRK_SECONDS=3
NGX_WRK_CONNS=16
NGX_AB_REQUESTS=2000
NGX_CURLS=5

# Where nginx's worker runs; B's clients run on CPU 0. With the worker on
# CPU 1, A's stack can take the ACK that completes a handshake and the
# first request on two CPUs at once. When both find the request socket in
# A's table, the kernel makes a child for each, keeps one and counts both
# as passive opens: without isnguard (ISNG_BASELINE=1), 1 or 2 more than
# B's active opens in 4 of 21 runs of 8k-57k connections here. That cannot
# happen behind isnguard on A: A's a0 then has an XDP program, so its
# packets are taken in one NAPI context, one at a time. The local path
# needs the two CPUs to show the second request socket (none in 3 runs
# with everything on CPU 0). The translate path runs on M, A's a0 has no
# XDP program: there, and without isnguard, nginx shares CPU 0 with the
# clients and the count stays exact, but for the ACKs the translate path
# sends A twice (it answers a SYN-ACK A resent): M forwards them on either
# CPU, and two at once may each make a child (1 in 33,164 connections, in
# 2 of 15 runs here). The count may exceed B's by those, no more.
NGX_CPU_SHARED=0
NGX_CPU_OWN=1

# TcpPassiveOpens of A, TcpActiveOpens and TcpRetransSegs of B, now; and
# the ACKs the translate path sent A beyond one per connection it opened
# (proxy_own_ack_passed - flow_created, all of whose flows it opened
# there; 0 without isnguard, and on the other paths, which send none).
ngx_counters() {
	local extra=0 own stats

	if ! is_baseline; then
		stats=$(isng stats --json) || return 1	# one read for both counters
		own=$(json_num proxy_own_ack_passed <<<"$stats")
		[ "$own" -gt 0 ] && extra=$((own - $(json_num flow_created <<<"$stats")))
	fi
	echo "$(nstat_get "$NS_A" TcpPassiveOpens) $(nstat_get "$NS_B" TcpActiveOpens)" \
		"$(nstat_get "$NS_B" TcpRetransSegs) $extra"
}

# nginx on A's $SP_PORT behind whatever the caller attached, its worker on
# SERVER_CPU, and B's clients against it over FAMILY. B's ports range over
# 1024-65535, so few SYNs meet a TIME_WAIT socket of an earlier connection
# on A (those the SYN proxy leaves to A's stack: syn_passed_socket).
# RETRANS: "none" asserts that B retransmitted nothing, "any" logs it (the
# translate path drops what the client sends while the server's side
# opens, by design: docs/design.md, "The translate path").
check_nginx_clients() { # FAMILY SERVER_CPU RETRANS(none|any)
	local fam=$1 cpu=$2 retrans=$3 url req secs econn eread ewrite etimeout non2xx
	local p0 a0 r0 x0 p1 a1 r1 x1 passive active twice complete failed out i counts
	require_cmd nginx wrk ab curl
	is_baseline && cpu=$NGX_CPU_SHARED
	url=$(http_url "$(addr_of A "$fam")" "$SP_PORT")
	in_ns "$NS_B" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
	nginx_start "$NS_A" "$SP_PORT" "$cpu"

	# wrk: as many connections as it opens in NGX_WRK_SECONDS s. Those it
	# still has in SYN-SENT when it stops are active opens A never sees,
	# so A may count up to NGX_WRK_CONNS fewer, never more.
	counts=$(ngx_counters) || fail "counters: isng stats --json"
	read -r p0 a0 r0 x0 <<<"$counts"
	wrk_run "$NS_B" "$url" close "$NGX_WRK_CONNS" "$NGX_WRK_SECONDS" "$E2E_WORK/wrk.out" ||
		fail "wrk: $(tail -n 1 "$E2E_WORK/wrk.out")"
	counts=$(ngx_counters) || fail "counters: isng stats --json"
	read -r p1 a1 r1 x1 <<<"$counts"
	sed 's/^/# wrk: /' "$E2E_WORK/wrk.out"
	read -r req secs econn eread ewrite etimeout non2xx <<<"$(wrk_figures "$E2E_WORK/wrk.out")"
	passive=$((p1 - p0)) active=$((a1 - a0))
	log "wrk: $req requests in $secs s; passive opens in A $passive, active opens in B $active," \
		"segments B retransmitted $((${r1:-0} - ${r0:-0}))"
	assert_gt "$req" 0 "requests wrk completed"
	assert_eq "$econn $eread $ewrite $etimeout" "0 0 0 0" "wrk socket errors (connect read write timeout)"
	assert_eq "$non2xx" 0 "wrk responses other than 2xx/3xx"
	assert_ge "$active" "$req" "active opens in B during wrk (one connection per request)"
	# The translate path answers a SYN-ACK A resent (to a SYN it resent: on
	# the client's retransmitted cookie ACK or zero-window probe, or the
	# tick's) with its ACK again. The two ACKs reach A's stack through M's forwarding, on either
	# CPU: when both find the request socket at once, A counts two passive
	# opens for one connection (the kernel's race above). Those, no more.
	twice=$((x1 - x0))
	[ "$passive" -le $((active + twice)) ] ||
		fail "passive opens in A during wrk: expected <= B's $active active opens + $twice ACKs the translate path sent twice, actual $passive ($((passive - active)) more: connections A's side opened twice)"
	[ "$twice" -eq 0 ] || log "ACKs the translate path sent A twice (a SYN-ACK resent): $twice"
	[ $((active - passive)) -le "$NGX_WRK_CONNS" ] ||
		fail "passive opens in A during wrk: expected >= B's $active active opens - $NGX_WRK_CONNS (left in SYN-SENT), actual $passive"
	log "ok: passive opens in A during wrk = $passive (B's $active active opens, less at most $NGX_WRK_CONNS left in SYN-SENT)"

	# ab and curl complete every connection they open: as many on each side.
	counts=$(ngx_counters) || fail "counters: isng stats --json"
	read -r p0 a0 _ x0 <<<"$counts"
	in_ns "$NS_B" timeout 60 taskset -c 0 ab -q -n "$NGX_AB_REQUESTS" -c "$NGX_WRK_CONNS" "$url" \
		>"$E2E_WORK/ab.out" 2>&1 || fail "ab: $(tail -n 2 "$E2E_WORK/ab.out" | tr '\n' ' ')"
	complete=$(awk '/^Complete requests:/ {print $3}' "$E2E_WORK/ab.out")
	failed=$(awk '/^Failed requests:/ {print $3}' "$E2E_WORK/ab.out")
	non2xx=$(awk '/^Non-2xx responses:/ {print $3}' "$E2E_WORK/ab.out")
	assert_eq "$complete" "$NGX_AB_REQUESTS" "requests ab completed"
	assert_eq "$failed" 0 "requests ab counted failed (connect, receive, length, exceptions)"
	assert_eq "${non2xx:-0}" 0 "ab responses other than 2xx"
	for ((i = 1; i <= NGX_CURLS; i++)); do
		out=$(in_ns "$NS_B" taskset -c 0 curl -sS --max-time 10 -o "$E2E_WORK/curl.body" \
			-w '%{http_code}' "$url" 2>"$E2E_WORK/curl.err") || fail "curl $url: $(cat "$E2E_WORK/curl.err")"
		assert_eq "$out $(wc -c <"$E2E_WORK/curl.body")" "200 $NGINX_BODY_BYTES" \
			"curl $i: status and body bytes"
	done
	counts=$(ngx_counters) || fail "counters: isng stats --json"
	read -r p1 a1 r1 x1 <<<"$counts"
	# ab opens a few more connections than requests (2005-2020 here).
	if [ "$x1" -eq "$x0" ]; then
		assert_eq "$((p1 - p0))" "$((a1 - a0))" "passive opens in A for ab and curl (B's active opens)"
	else	# as for wrk: ACKs sent twice may each count once more
		[ $((p1 - p0)) -ge $((a1 - a0)) ] && [ $((p1 - p0)) -le $((a1 - a0 + x1 - x0)) ] ||
			fail "passive opens in A for ab and curl: expected B's $((a1 - a0)) active opens (+ up to $((x1 - x0)) ACKs sent twice), actual $((p1 - p0))"
	fi
	if [ "$retrans" = none ]; then
		assert_eq "$((r1 - r0))" 0 "segments B retransmitted over lossless veths (wrk, ab, curl)"
	else
		log "segments B retransmitted (wrk, ab, curl): $((r1 - r0))"
	fi
	isng_log_counters
}

# The SYN proxy's way to A's stack: request sockets (local) or
# connections isnguard opened (translate), at least one per ab request.
ngx_assert_path() { # local|translate
	is_baseline && return 0
	if [ "$1" = translate ]; then
		assert_ge "$(isng_counter proxy_server_synack)" "$NGX_AB_REQUESTS" "proxy_server_synack"
		assert_eq "$(isng_counter cookie_handshake_to_stack)" 0 "cookie_handshake_to_stack (local path)"
	else
		assert_ge "$(isng_counter cookie_handshake_to_stack)" "$NGX_AB_REQUESTS" "cookie_handshake_to_stack"
	fi
}

# B's stack offers none of timestamps, SACK and window scaling.
ngx_bare_client() {
	in_ns "$NS_B" sysctl -qw net.ipv4.tcp_timestamps=0 net.ipv4.tcp_sack=0 net.ipv4.tcp_window_scaling=0
}

# nginx behind ISN rewriting alone, on A's a0.
test_nginx_isn_rewriting_ipv4() {
	setup_guarded
	check_nginx_clients 4 "$NGX_CPU_OWN" none
	is_baseline && return 0
	assert_ge "$(isng_counter synack_rewritten)" "$NGX_AB_REQUESTS" "synack_rewritten"
}

# nginx behind SYN cookies on A's own a0, the local path.
check_nginx_synproxy_local() { # FAMILY [bare]
	sp_setup --synproxy-path local
	[ "${2:-}" = bare ] && ngx_bare_client
	check_nginx_clients "$1" "$NGX_CPU_OWN" none
	ngx_assert_path local
	assert_host_syn_queue_untouched
}
test_nginx_synproxy_local_ipv4() { check_nginx_synproxy_local 4; }

# --syn-hook tc: SYNs answered at tc ingress, no XDP program on the device
# nor on its veth peer (an XDP_TX frame would need one there): the cookie
# SYN-ACKs, sent by tc, reach the client all the same.
ngx_assert_syn_hook_tc() { # NETNS IFACE
	local progs
	progs=$(ip -n "$1" -d link show dev "$2") || fail "ip link show $2"
	[[ "$progs" == *xdp* ]] && fail "an XDP program on $2 with --syn-hook tc: $progs"
	is_baseline && return 0
	assert_ge "$(isng_counter cookie_sent)" "$NGX_AB_REQUESTS" "cookie_sent"
	isng status --json | grep -q '"syn_hook":"tc"' || fail "status --json: no \"syn_hook\":\"tc\""
}
test_nginx_synproxy_local_tc_syn_hook_ipv6() {
	SP_PEER_XDP=0 E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc --syn-hook tc" \
		check_nginx_synproxy_local 6
	ngx_assert_syn_hook_tc "$NS_A" "$IF_A"
}
test_nginx_synproxy_local_ipv6() { check_nginx_synproxy_local 6; }
test_nginx_synproxy_local_client_without_timestamps_sack_wscale_ipv4() {
	check_nginx_synproxy_local 4 bare
}

# nginx behind the local path with A's TIME_WAIT table full
# (tcp_max_tw_buckets 256, as busy web servers overflow it): a connection
# nginx closed first is gone from A as soon as B acknowledges nginx's FIN
# (TCPTimeWaitOverflow), and when B's own FIN comes after that ACK, only
# A's RST to it ends B's LAST-ACK. B acknowledges at once (its route to A
# has quickack), so nearly every connection's FIN comes so, a few thousand
# a second. Each fails the cookie check on the tuple of a closed connection
# isnguard still holds, and goes to A's stack: so many per connection, not
# as many a second as --invalid-ack-rate, here 100 to stand for a server
# that closes more connections a second than the rate. 1 s after wrk, B
# has no socket left in LAST-ACK.
test_nginx_synproxy_local_late_fins_past_a_full_time_wait_table() {
	local req left overflow
	sp_setup --synproxy-path local --invalid-ack-rate 100
	in_ns "$NS_A" sysctl -qw net.ipv4.tcp_max_tw_buckets=256
	in_ns "$NS_B" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
	ip -n "$NS_B" route replace 10.200.1.0/24 via "$M4B" quickack 1 || fail "B's route with quickack"
	nginx_start "$NS_A" "$SP_PORT" "$NGX_CPU_OWN"
	wrk_run "$NS_B" "$(http_url "$A4" "$SP_PORT")" close "$NGX_WRK_CONNS" "$NGX_WRK_SECONDS" \
		"$E2E_WORK/wrk.out" || fail "wrk: $(tail -n 1 "$E2E_WORK/wrk.out")"
	sleep 1
	left=$(in_ns "$NS_B" ss -Htn state last-ack | wc -l)
	sed 's/^/# wrk: /' "$E2E_WORK/wrk.out"
	read -r req _ <<<"$(wrk_figures "$E2E_WORK/wrk.out")"
	overflow=$(nstat_get "$NS_A" TcpExtTCPTimeWaitOverflow)
	isng_log_counters
	assert_gt "$req" 0 "requests wrk completed"
	assert_gt "${overflow:-0}" 0 "connections A closed without a TIME_WAIT socket (TcpExtTCPTimeWaitOverflow)"
	assert_eq "$left" 0 "B's sockets in LAST-ACK 1 s after wrk"
	is_baseline && return 0
	assert_gt "$(isng_counter cookie_ack_invalid_to_stack)" "$((req / 2))" \
		"late FINs passed to A's stack (cookie_ack_invalid_to_stack), of $req connections"
}

# One HTTP/1.1 request from B's local port PORT to nginx on A, the
# connection then aborted with a RST (SO_LINGER 0), as wrk ends its
# keep-alive connections. Prints the status and the body's bytes.
ngx_get_then_reset() { # PORT
	in_ns "$NS_B" taskset -c 0 python3 - "$A4" "$SP_PORT" "$1" <<-'EOF'
	import socket, struct, sys
	addr, port, sport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	s = socket.socket()
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("", sport))
	s.settimeout(10)
	s.connect((addr, port))
	s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	data = b""
	while b"\r\n\r\n" not in data:
	    chunk = s.recv(65536)
	    if not chunk:
	        sys.exit("connection closed before the response's header")
	    data += chunk
	head, body = data.split(b"\r\n\r\n", 1)
	length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n")
	              if l.lower().startswith(b"content-length:"))
	while len(body) < length:
	    chunk = s.recv(65536)
	    if not chunk:
	        sys.exit("connection closed before the whole body")
	    body += chunk
	s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
	s.close()
	print(head.split(b" ")[1].decode(), len(body))
	EOF
}

# A client that reuses the tuple of a connection it reset, once the SYN
# proxy is on (issue 18's bench saw this): the first connection was
# rewritten (A's own SYN-ACK), its RST left A no socket, so the second SYN
# gets a cookie, and its ACK must not be translated by the first
# connection's entry, or A's listener resets it.
test_nginx_synproxy_local_tuple_of_a_reset_connection() {
	local port=41999 out
	sp_topology
	isng_attach "$IF_A"
	isng key set --from-file "$E2E_WORK/key" || fail "isng key set"
	nginx_start "$NS_A" "$SP_PORT" "$NGX_CPU_OWN"
	out=$(ngx_get_then_reset "$port" 2>&1) || fail "first request from port $port: $out"
	assert_eq "$out" "200 $NGINX_BODY_BYTES" "first request: status and body bytes"
	is_baseline || assert_eq "$(isng_counter synack_rewritten)" 1 \
		"first connection rewritten (A's SYN-ACK)"
	is_baseline || isng synproxy "$SP_PORT" --json | grep -q '"mode":"always"' ||
		fail "synproxy $SP_PORT --json"
	out=$(ngx_get_then_reset "$port" 2>&1) || fail "second request from port $port: $out"
	assert_eq "$out" "200 $NGINX_BODY_BYTES" "second request, same tuple: status and body bytes"
	is_baseline && return 0
	assert_eq "$(isng_counter flow_reopened_by_cookie)" 1 "flow_reopened_by_cookie"
	assert_eq "$(isng_counter cookie_handshake_to_stack)" 1 "cookie_handshake_to_stack"
	isng_log_counters
}

# nginx on A behind the gateway M, SYN cookies on M's m1, the translate
# path. A and B verify every checksum: computed in full by the senders with
# XDP on m1, left partial with --ingress tc (gateway.sh).
check_nginx_gateway_translate() { # FAMILY [bare]
	# shellcheck disable=SC2034 # read by sp_setup and sp_topology (synproxy.sh)
	SP_WHERE=gateway
	sp_setup --synproxy-path translate
	if [[ "$E2E_ATTACH_ARGS" == *"--ingress tc"* ]]; then csum_verified partial; else csum_strict_on; fi
	[ "${2:-}" = bare ] && ngx_bare_client
	check_nginx_clients "$1" "$NGX_CPU_SHARED" any
	ngx_assert_path translate
	assert_host_syn_queue_untouched
	assert_no_csum_errors "$NS_A" A
	assert_no_csum_errors "$NS_B" B
}
test_nginx_gateway_synproxy_translate_ipv4() { check_nginx_gateway_translate 4; }
test_nginx_gateway_synproxy_translate_tc_ingress_ipv6() {
	E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc" check_nginx_gateway_translate 6
}
test_nginx_gateway_synproxy_translate_tc_syn_hook_ipv4() {
	SP_PEER_XDP=0 E2E_ATTACH_ARGS="$E2E_ATTACH_ARGS --ingress tc --syn-hook tc" \
		check_nginx_gateway_translate 4
	ngx_assert_syn_hook_tc "$NS_M" "$IF_MB"
}
test_nginx_gateway_synproxy_translate_client_without_timestamps_sack_wscale_ipv4() {
	check_nginx_gateway_translate 4 bare
}
