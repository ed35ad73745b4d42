#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Writes isnguard(8) on stdout from the binary's own --help texts, so the
# manual page lists exactly the commands and options the CLI has.
# Usage: gen-man.sh ISNGUARD_BINARY
set -euo pipefail
bin=$1

cat <<'HEAD'
.TH ISNGUARD 8 "" "isnguard" "System Administration"
.SH NAME
isnguard \- keyed TCP initial sequence numbers and SYN cookies for a host, in eBPF
.SH SYNOPSIS
.B isnguard
.I COMMAND
.RI [ options ]
.SH DESCRIPTION
isnguard attaches an eBPF datapath to a network interface (XDP on ingress,
tc on egress). It gives every TCP connection of the host an unpredictable
keyed initial sequence number (RFC 6528), translating sequence numbers,
SACK blocks and ICMP-quoted headers per flow, and it can answer SYNs to
chosen ports with SYN cookies so that a SYN flood never reaches the
host's listener. The state (flow tables, key, settings) is pinned under
/sys/fs/bpf/isnguard and can be read with
.BR bpftool (8).
.PP
Every command takes
.B \-\-help
and
.BR \-\-json .
Under
.B \-\-json
errors are one JSON object on standard output. Bad usage exits 2, a
runtime failure 1.
.SH COMMANDS
HEAD

"$bin" --help | awk '/^  [a-z]/ {print $1}' | while read -r cmd; do
	[ "$cmd" = help ] && continue
	echo ".SS $cmd"
	"$bin" "$cmd" --help 2>/dev/null | awk '
		NR == 1 { sub(/^Usage: /, ""); print ".B " $0; next }
		/^Options:/ { opts = 1; next }
		opts && /^  / {
			line = $0; sub(/^  /, "", line)
			split(line, parts, /  +/)
			print ".TP"; print ".B " parts[1]
			n = index(line, "  "); rest = substr(line, n); sub(/^ +/, "", rest)
			print rest; next
		}
		# a text line starting with . or a quote would read as a request
		!opts && NF { if ($0 ~ /^[.\047]/) $0 = "\\&" $0; print; next }
		!opts && !NF { print ".PP" }
	'
done | sed -e 's/-/\\-/g'

cat <<'TAIL'
.SH FILES
.TP
.I /sys/fs/bpf/isnguard/
the pinned maps: isn_flows, isn_opening, isn_config, isn_key (write-only),
isn_stats, isn_links, isn_synproxy, isn_synproxy_ports, isn_syn_rate,
isn_sweeper, isn_sweep_flows, isn_sweep_opening, isn_sweep_long, isn_flow_count,
isn_syn_resend
.TP
.I isnguard@.service
a systemd template unit: attach on start, detach \-\-keep\-state on stop
.SH ENVIRONMENT
.TP
.B ISNGUARD_PIN_DIR
the state directory instead of /sys/fs/bpf/isnguard
.TP
.B ISNGUARD_DEBUG
libbpf and libxdp messages on standard error
.SH SEE ALSO
.BR bpftool (8),
.BR ip-netns (8),
.BR tc (8)
TAIL
