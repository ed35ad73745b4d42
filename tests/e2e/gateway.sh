# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# End-to-end tests of isnguard on a gateway (issue 9), sourced by run.sh
# (same topology, same helpers). isnguard runs in M, the router, attached to
# m1, the interface facing the clients (B); it protects A, the server behind
# it, whose packets it sees only as they are forwarded: B's arrive on m1's
# ingress (XDP, or tc with --ingress tc), A's leave through m1's tc egress.
# XDP cannot see a forwarded veth skb's partial checksum (README, --ingress
# tc): with XDP the senders compute checksums in full.
# `isng` runs in $NS_M for these tests (ISNG_NS), and topo_down detaches m1.

# The topology with isnguard on M's m1 (extra attach options in "$@"), and
# a key in $KEY (also in $E2E_WORK/key).
gw_setup() {
	topo_up
	ISNG_NS=$NS_M ISNG_IF=$IF_MB
	KEY=$(new_key_file "$E2E_WORK/key")
	isng_attach "$IF_MB" --hash siphash "$@"
	isng key set --from-file "$E2E_WORK/key" || fail "isng key set --from-file"
}

# Partial checksums through the datapath, verified after it: A and B hand
# their segments to the veth with partial checksums (tx offload on), so M
# forwards them partial and the datapath rewrites them so; M's devices
# complete them in software as they leave (tx off, after tc egress), and A
# and B verify in software what arrives (rx off). A checksum the datapath
# left wrong shows as TcpInCsumErrors on A or B.
gw_csum_partial_on() {
	require_cmd ethtool
	in_ns "$NS_A" ethtool -K "$IF_A" tx on rx off >/dev/null || fail "ethtool on $IF_A"
	in_ns "$NS_B" ethtool -K "$IF_B" tx on rx off >/dev/null || fail "ethtool on $IF_B"
	in_ns "$NS_M" ethtool -K "$IF_MA" tx off >/dev/null || fail "ethtool on $IF_MA"
	in_ns "$NS_M" ethtool -K "$IF_MB" tx off >/dev/null || fail "ethtool on $IF_MB"
	log "checksums: left partial by A and B, completed by M's devices, verified by A and B"
}

# One connection through M, 20 MiB each way: A serves and B connects
# (passive), or A connects to B (active). The ISN of A's SYN-ACK or SYN as
# B sees it is the keyed one for A's endpoint and B's, and not the one A's
# stack chose (captured on a0). A and B verify every checksum in software;
# the senders compute them in full (csum_strict_on), or with PARTIAL=1 A
# and B leave them partial, as a host's stack does (gw_csum_partial_on).
check_gw_open() { # active|passive FAMILY [PARTIAL(0|1)]
	local role=$1 fam=$2 partial=${3:-0} a b before after wire host local_ep remote_ep a_role
	a=$(addr_of A "$fam") b=$(addr_of B "$fam")
	gw_setup
	if [ "$partial" = 1 ]; then gw_csum_partial_on; else csum_strict_on; fi
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
# there (README, --ingress tc), so only these tests leave them partial.
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
