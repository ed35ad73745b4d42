# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# The kernel's own SYN proxy (netfilter SYNPROXY through nftables), the
# baseline scripts/bench-synflood.sh and scripts/bench-conn.sh measure
# isnguard against; sourced by both. SYNs to the port are untracked in
# prerouting and answered with a cookie on the given hook (input on the
# server, forward on a gateway); the cookie ACK becomes the proxy's own
# handshake with the server, conntrack and seqadj translating the rest.
# The options are the servers' here: MSS 1460, window scale 7, timestamps,
# SACK. The caller sets nf_conntrack_tcp_loose 0 as well: a cookie ACK must
# stay invalid for SYNPROXY, not be taken up mid-stream as established.

# The ruleset, for nft -f: table TABLE (ip), a chain named by HOOK.
nft_synproxy_ruleset() { # TABLE HOOK PORT
	cat <<-EOF
	table ip $1 {
		chain pre {
			type filter hook prerouting priority raw; policy accept;
			tcp dport $3 tcp flags syn notrack
		}
		chain $2 {
			type filter hook $2 priority filter; policy accept;
			tcp dport $3 ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
			ct state invalid drop
		}
	}
	EOF
}
