#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Writes isnguard(8) on stdout from the binary's own --help texts: the
# commands of `isnguard --help`, each with the synopsis, description and
# options of `isnguard CMD --help`, so a new command or option appears here
# without a change to this script. A command's --help may end with an
# "Exit status:" section of "  N  meaning" lines; it goes under EXIT STATUS,
# marked as that command's.
# Usage: gen-man.sh ISNGUARD_BINARY
set -euo pipefail
bin=$1

mapfile -t commands < <("$bin" --help | awk '/^  [a-z]/ && $1 != "help" {print $1}')
version=$("$bin" version | awk '{print $2}')
exits=$(mktemp)
trap 'rm -f "$exits"' EXIT

has_command() {
	local c
	for c in "${commands[@]}"; do
		[ "$c" = "$1" ] && return 0
	done
	return 1
}

# Text into roff, as an awk function: backslashes kept, hyphens as \- (so
# options stay hyphens when copied), and a line starting with . or ' not
# taken for a request.
ESC='function esc(s) { gsub(/\\/, "\\\\e", s); gsub(/-/, "\\\\-", s); if (s ~ /^[.\047]/) s = "\\&" s; return s }'
roff() {
	awk "$ESC"' { print esc($0) }'
}

# One command's --help as a subsection: its usage line, its description
# (an indented "word  text" line is a tagged paragraph), one .TP entry per
# option (a deeper-indented line continues the option above), and its
# "Exit status:" lines into $exits.
command_section() { # CMD ONE_LINE_DESCRIPTION
	local cmd=$1 summary=$2 help
	help=$("$bin" "$cmd" --help 2>/dev/null || true)
	echo ".SS $cmd"
	if [[ $help != Usage:* ]]; then
		# No usage text of its own: the top-level help's line stands for it.
		printf 'isnguard %s\n' "$cmd" | roff | sed 's/^/.B /'
		printf '.PP\n'
		printf '%s.\n' "${summary^}" | roff
		return
	fi
	awk -v cmd="$cmd" -v exits="$exits" "$ESC"'
		function flush() {
			if (opt != "") { print ".TP"; print ".B " esc(opt); print esc(text) }
			opt = ""; text = ""
		}
		NR == 1 { sub(/^Usage: /, ""); print ".B " esc($0); print ".PP"; next }
		/^Options:$/ { flush(); part = "options"; next }
		/^Exit status:$/ { flush(); part = "exit"; next }
		part == "exit" && NF { sub(/^ +/, ""); code = $1; sub(/^[^ ]+ +/, "")
			print cmd "\t" code "\t" $0 >> exits; next }
		part == "options" && /^  +-/ {
			flush(); line = $0; sub(/^ +/, "", line)
			n = match(line, /  +/)
			if (n) { opt = substr(line, 1, n - 1); text = substr(line, n + RLENGTH) }
			else { opt = line; text = "" }
			next
		}
		part == "options" && /^    +[^ -]/ { line = $0; sub(/^ +/, "", line); text = text " " line; next }
		part == "options" { flush(); next }
		!NF { if (NR > 2 && part == "") print ".PP"; tagged = 0; next }
		/^  +[^ ]+  +/ {
			line = $0; sub(/^ +/, "", line); n = match(line, /  +/)
			print ".IP \"" esc(substr(line, 1, n - 1)) "\" 8"; print esc(substr(line, n + RLENGTH))
			tagged = 1; next
		}
		tagged { print ".PP"; tagged = 0 }
		{ print esc($0) }
		END { flush() }
	' <<<"$help"
}

cat <<HEAD
.TH ISNGUARD 8 "" "isnguard $version" "System Administration"
.nh
.SH NAME
isnguard \\- keyed TCP initial sequence numbers and SYN cookies for a host, in eBPF
.SH SYNOPSIS
.B isnguard
.I COMMAND
.RI [ options ]
.br
.B isnguard
.BR \\-\\-help " | " \\-\\-version
HEAD
for cmd in "${commands[@]}"; do
	usage=$("$bin" "$cmd" --help 2>/dev/null | sed -n '1s/^Usage: //p')
	echo ".br"
	echo "${usage:-isnguard $cmd}" | roff | sed 's/^/.B /'
done

cat <<'DESCRIPTION'
.SH DESCRIPTION
isnguard attaches an eBPF datapath to a network interface: XDP (or tc) on
ingress, tc on egress. It gives every TCP connection of the host an
unpredictable keyed initial sequence number (RFC 6528), translating sequence
numbers, SACK blocks and ICMP-quoted headers per flow, and it can answer SYNs
to chosen ports with SYN cookies, so that a SYN flood never reaches the
host's listener: a valid cookie ACK is handed to the host's listener (the
local path), or isnguard opens the connection to a server behind the host
and translates it (the translate path).
.PP
No daemon runs. The state (flow tables, key, settings, counters) is pinned
on the bpffs and shared by every interface isnguard is attached to, in every
network namespace; it can be read with
.BR bpftool (8).
The first
.B attach
creates it with a fresh key;
.B detach
of the last interface removes it, unless
.BR \-\-keep\-state .
.PP
Errors are one line on standard error; under
.B \-\-json
they are one JSON object on standard output, and commands that change state
print what they did as one.
.SH COMMANDS
DESCRIPTION

for cmd in "${commands[@]}"; do
	command_section "$cmd" "$("$bin" --help | awk -v c="$cmd" '$1 == c {$1 = ""; sub(/^ +/, ""); print}')"
done

json_commands=()
for cmd in "${commands[@]}"; do
	"$bin" "$cmd" --help 2>/dev/null | grep -qE -- '^ +(-j, )?--json' && json_commands+=("$cmd")
done
cat <<OPTIONS
.SH OPTIONS
.TP
.BR \\-h ", " \\-\\-help
Before a command: list the commands. After one: the command's usage and options.
.TP
.B \\-\\-version
Print the version.
.TP
.BR \\-j ", " \\-\\-json
Print one JSON object: what was done, what was asked for, or the error.
Taken by: ${json_commands[*]}.
OPTIONS

cat <<'STATUS'
.SH EXIT STATUS
.TP
.B 0
Success.
.TP
.B 1
Runtime failure: not root, no such interface, not attached, the kernel
refused a program or an attach.
.TP
.B 2
Bad usage: an unknown command or option, a missing or bad value.
STATUS
if [ -s "$exits" ]; then
	cut -f1 "$exits" | uniq | while read -r cmd; do
		printf '.PP\nThe\n.B %s\ncommand'"'"'s own:\n' "$cmd"
		awk -F '\t' -v c="$cmd" "$ESC"' $1 == c { print ".TP"; print ".B " esc($2); print esc($3) }' "$exits"
	done
fi
if ! grep -q "^status	" "$exits"; then
	cat <<'STATUS_NOW'
.PP
The
.B status
command exits 0 when the pinned state exists, with interfaces attached or
kept with none, and 1 when there is none.
STATUS_NOW
fi

cat <<'FILES'
.SH FILES
.TP
.I /sys/fs/bpf/isnguard/
The pin directory (or
.BR $ISNGUARD_PIN_DIR ),
created 0700: the maps isn_flows, isn_opening, isn_flow_count, isn_config,
isn_key (write\-only), isn_stats, isn_links, isn_synproxy,
isn_synproxy_ports, isn_syn_rate, isn_syn_resend, isn_resend_queues,
isn_resend_slots, isn_sweeper,
isn_sweep_flows, isn_sweep_opening, isn_sweep_long, isn_local_addrs (each
namespace's own addresses), the SYN policy's
isn_syn_policy, isn_synproxy_monitor, isn_prefix4, isn_prefix6,
isn_syn_buckets and isn_syn_total, the events' ring buffers
isn_events (monitor's) and isn_events_log (the exporter's), isn_event_state
and isn_event_drops; userspace's own pins isn_key_source (the SHA\-256 of the key file applied last), isn_stat_slots (which interface each set of counters is), isn_builds (the build attached to each link), isnguard_tc_tick (the tick program, so apply can put the tick back) and isnguard_event_key (the program that reports a key written).
FILES
if has_command apply; then
	cat <<'CONF'
.TP
.I /etc/isnguard/isnguard.conf
The configuration that
.B isnguard apply
applies.
CONF
else
	cat <<'CONF'
.TP
.I /etc/isnguard/isnguard.conf
Not read by this build, which has no configuration file: the settings are
the options of
.B attach
and of the commands that change them live.
CONF
fi
cat <<'FILES'
.TP
.I isnguard.service
The unit for the config file: start and reload run
.BR "isnguard apply" ,
stop runs
.BR "isnguard detach \-\-all \-\-keep\-state" .
.TP
.I /etc/default/isnguard
.B ISNGUARD_ATTACH_ARGS
for the
.I isnguard@.service
template unit, one instance per interface: start attaches, stop detaches
with
.BR \-\-keep\-state .
.TP
.I share/doc/isnguard/
under the install prefix: README.md and docs/ (design, operations,
security, benchmarks, development).
.SH ENVIRONMENT
.TP
.B ISNGUARD_CONFIG
The config file that
.B apply
and
.B config check
read when given none, instead of /etc/isnguard/isnguard.conf.
.TP
.B ISNGUARD_PIN_DIR
The pin directory instead of /sys/fs/bpf/isnguard: a separate state, with its
own key, tables and counters.
.TP
.B ISNGUARD_DEBUG
Set and neither empty nor 0: libbpf's and libxdp's messages (the verifier's
log among them) on standard error.
.TP
.B LIBXDP_BPFFS
Read by libxdp. Under
.BR "ip netns exec" ,
which hides the bpffs, isnguard sets it (unless set) to the bpffs it found
through its parent process.
.SH EXAMPLES
.nf
.RS
isnguard attach eth0
isnguard attach eth0 \-\-synproxy 22,443
isnguard attach eth0 \-\-ingress tc \-\-syn\-hook tc \-\-synproxy 443
isnguard status \-\-json
isnguard stats \-\-watch 1
isnguard key rotate
isnguard detach \-\-keep\-state eth0
isnguard config example > /etc/isnguard/isnguard.conf
isnguard apply \-\-dry\-run
isnguard status || echo "not healthy: exit $?"
nsenter \-\-net=/run/netns/NAME isnguard status
.RE
.fi
.SH SEE ALSO
.BR bpftool (8),
.BR xdp\-loader (8),
.BR tc (8),
.BR ip\-link (8),
.BR ip\-netns (8)
FILES
