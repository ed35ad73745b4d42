#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make bench, last part (issue 18, item 1): the connection rate of a real
# server, nginx, to wrk with one connection per request ("Connection:
# close"), and with keep-alive as the control, with and without isnguard,
# in namespaces (tests/e2e/lib.sh builds them):
#
#   host     B (wrk) b1 --- a1 A (nginx): a direct veth pair, isnguard on
#            a1, the server's: ISN rewriting alone (no --synproxy), and SYN
#            cookies on the local path (--synproxy 80 --synproxy-path local).
#   gateway  B (wrk) b0 --- m1 M m0 --- a0 A (nginx): isnguard on M's m1,
#            facing the client: SYN cookies on the translate path, with
#            --ingress xdp and with --ingress tc. The senders compute
#            checksums in full (tx offload off on a0 and b0), so XDP's
#            incremental fix is right for what M forwards (docs/operations.md,
#            --ingress tc); the same without isnguard. And the anchor,
#            the kernel's own SYNPROXY on M (nftables, no isnguard): each
#            translate row's ratios to it are printed too.
#
# Each topology's rows run in the same rounds, interleaved (the order
# rotates every round), ROUNDS rounds of SECONDS s per row and connection
# mode; isnguard is attached before each row and detached after it (fresh
# state every time). Printed: the median rate of each row and the median
# over rounds of each round's ratio to the row without isnguard, beside the
# goal of the issue (reported, not asserted). nginx runs one worker pinned
# to CPU 1, wrk one thread pinned to CPU 0. B's port range is 1024-65535, so
# few SYNs meet a TIME_WAIT socket of an earlier connection on A (the SYN
# proxy leaves those to A's stack: syn_passed_socket). B keeps no TIME_WAIT
# sockets (tcp_max_tw_buckets 0): wrk closes first whenever A's FIN comes
# after the response by more than wrk takes to read it, which any program
# on A's path (an XDP_PASS one as well) makes more frequent; one machine
# playing every client then fills its own port space with them within
# seconds (20,000 in 10 s here), and connect() spends its time searching
# ports (perf: __inet_hash_connect and __inet_check_established at 40% of
# the CPU samples, the rate halved, and the rows after it slower too: most
# of the round-to-round spread of the first version of this bench). Real
# clients are many machines, each with its own ports. A keeps its TIME_WAIT
# sockets: without them (tcp_max_tw_buckets 0) the client's segments that
# come after A's socket is gone find only the listener, and the local path
# drops them as invalid cookie ACKs where A's stack would reset: B then
# retransmits its FIN, which is not what a server sees.
#
# Then, unless --no-profile, one more run of each isnguard row with the
# kernel's BPF run-time statistics on (kernel.bpf_stats_enabled, restored
# after): each program's run count and run time over the run, per request
# (packets and ns per connection) and per packet.
#
# Usage: bench-conn.sh [--json] [--rounds N] [--seconds S] [--conns C]
#                      [--only host|gateway] [--rows NAME,...] [--no-profile]
#                      BUILD_DIR   (as root)
#   --rows keeps only the named rows (and "none", every ratio's base).
#   --outcomes: BUILD_DIR is a `make PROFILE=1` build (bpf/profile.h); the
#   profile runs then also split each program's time by outcome.
set -uo pipefail

here=$(dirname "$(readlink -f "$0")")
json=0 rounds=5 secs=2 conns=32 only='' profile=1 keep='' outcomes=0
usage() {
	sed -n '/^# Usage:/,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=1 ;;
	--rounds) rounds=${2:-}; shift ;;
	--seconds) secs=${2:-}; shift ;;
	--conns) conns=${2:-}; shift ;;
	--only) only=${2:-}; shift ;;
	--rows) keep=${2:-}; shift ;;
	--no-profile) profile=0 ;;
	--outcomes) outcomes=1 ;;
	-h | --help) usage ;;
	-*) echo "bench-conn: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
	shift
done
for v in "$rounds" "$secs" "$conns"; do
	[[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench-conn: not a positive number: '$v'" >&2; exit 2; }
done
case $only in "" | host | gateway) ;; *) echo "bench-conn: --only host|gateway" >&2; exit 2 ;; esac
build=$(readlink -f "${1:-build}")

[ "$(id -u)" -eq 0 ] || { echo "bench-conn: needs root" >&2; exit 1; }
for f in isnguard tcp_xfer xdp_pass.bpf.o src_spread.so least_rewrite; do
	[ -e "$build/$f" ] || { echo "bench-conn: no $build/$f (make bench builds it)" >&2; exit 1; }
done
for c in nginx wrk taskset bpftool python3 ethtool; do
	command -v "$c" >/dev/null || { echo "bench-conn: needs $c (make deps)" >&2; exit 1; }
done

TCP_XFER=$build/tcp_xfer ISNGUARD=$build/isnguard
# shellcheck source=tests/e2e/lib.sh
. "$here/../tests/e2e/lib.sh"
# shellcheck source=scripts/nft-synproxy.sh
. "$here/nft-synproxy.sh"

E2E_WORK=$(mktemp -d /tmp/isng-bench-conn.XXXXXX)
results=$E2E_WORK/results.tsv profiles=$E2E_WORK/profile.tsv outcome_list=$E2E_WORK/outcomes.tsv
: >"$results"
: >"$profiles"
: >"$outcome_list"
stats_before=$(sysctl -n kernel.bpf_stats_enabled)

# What the set-up and the rows log goes to a file, shown if the bench fails;
# the tables go to fd 3, the real stdout, and a failure to fd 4, stderr.
exec 3>&1 4>&2 1>"$E2E_WORK/log" 2>&1
finish() {
	local rc=$?
	sysctl -qw kernel.bpf_stats_enabled="$stats_before"
	topo_down
	[ "$rc" -ne 0 ] && { echo "bench-conn: failed; its log:"; cat "$E2E_WORK/log"; } >&4
	rm -rf "$E2E_WORK"
	exit "$rc"
}
trap finish EXIT

PORT=80
H_A=10.200.3.1 H_B=10.200.3.2 IF_HA=a1 IF_HB=b1

topo_up
# The host topology's direct pair, beside lib.sh's A - M - B.
ip link add "$IF_HA" netns "$NS_A" type veth peer name "$IF_HB" netns "$NS_B" || fail "veth a1-b1"
ip -n "$NS_A" addr add "$H_A/24" dev "$IF_HA"
ip -n "$NS_B" addr add "$H_B/24" dev "$IF_HB"
ip -n "$NS_A" link set "$IF_HA" up
ip -n "$NS_B" link set "$IF_HB" up
topo_wait_ready
# The client's ends take XDP_TX'd cookie SYN-ACKs only with an XDP program
# of their own (tests/e2e/synproxy.sh); there in every row, so the rows
# without isnguard run the same topology.
for dev in "$IF_HB" "$IF_B"; do
	ip -n "$NS_B" link set dev "$dev" xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags ||
		fail "XDP_PASS program on $NS_B/$dev"
done
in_ns "$NS_A" ethtool -K "$IF_A" tx off >/dev/null || fail "ethtool on $IF_A"
in_ns "$NS_B" ethtool -K "$IF_B" tx off >/dev/null || fail "ethtool on $IF_B"
in_ns "$NS_A" sysctl -qw net.ipv4.tcp_syncookies=1 || fail "sysctl in A"
in_ns "$NS_B" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_max_tw_buckets=0 ||
	fail "sysctl in B"
nginx_start "$NS_A" "$PORT" 1
# wrk's connections come from SPREAD addresses of B's subnet on each link
# (tests/e2e/src_spread.c): from B's one address, its ports come round
# every second or two at these rates and nearly every SYN met A's
# TIME_WAIT socket of the tuple (the local-path row then answered 5% of
# its SYNs with cookies, the rest went to A's stack: syn_passed_socket).
SPREAD=224 SPREAD_HOST=10.200.3.16 SPREAD_GATEWAY=10.200.2.16
for i in $(seq 0 $((SPREAD - 1))); do
	echo "addr add 10.200.3.$((16 + i))/24 dev $IF_HB"
	echo "addr add 10.200.2.$((16 + i))/24 dev $IF_B"
done | ip -n "$NS_B" -batch - || fail "B's client addresses"

# The rows of each topology: NAME|what isnguard does|interface|attach options ("-": none).
# "floor" is no isnguard either, only an XDP_PASS program on the interface
# isnguard would take: a veth with an XDP program receives through its
# NAPI path and copies every skb short of XDP headroom into a new page, a
# cost of XDP on veth, not of isnguard's work (a NIC's driver has none).
# rewrite_tc has no XDP on that side at all (--ingress tc), nor have the
# *_tcsyn rows, whose SYN cookies are answered at tc (--syn-hook tc).
# "least" is no isnguard either, but the least any ISN rewriter on the host
# must do (tests/bpf/least_rewrite.bpf.c: keyed ISN on the SYN-ACK, one LRU
# entry, seq += delta out at tc, ack -= delta in at XDP, nothing else): the
# floor of the rewrite rows, whose ratios to it are printed too; "least_tc"
# the same with its ack -= delta at tc ingress and no XDP program, the
# floor of rewrite_tc.
host_rows=(
	"none|without isnguard|-|-"
	"floor|no isnguard, an XDP_PASS program alone|$IF_HA|@xdp_pass"
	"least|no isnguard, the least ISN rewriter (a floor)|$IF_HA|@least"
	"least_tc|no isnguard, the least ISN rewriter at tc ingress (a floor)|$IF_HA|@least_tc"
	"rewrite|ISN rewriting alone|$IF_HA|"
	"rewrite_tc|ISN rewriting alone, --ingress tc|$IF_HA|--ingress tc"
	"cookie_local|SYN cookies, local path|$IF_HA|--synproxy $PORT --synproxy-path local"
	"cookie_local_tcsyn|SYN cookies, local path, --ingress tc --syn-hook tc|$IF_HA|--synproxy $PORT --synproxy-path local --ingress tc --syn-hook tc"
)
gateway_rows=(
	"none|without isnguard|-|-"
	"floor|no isnguard, an XDP_PASS program alone|$IF_MB|@xdp_pass"
	"translate_xdp|SYN cookies, translate path, --ingress xdp|$IF_MB|--synproxy $PORT --synproxy-path translate --ingress xdp"
	"translate_tc|SYN cookies, translate path, --ingress tc|$IF_MB|--synproxy $PORT --synproxy-path translate --ingress tc"
	"translate_tcsyn|SYN cookies, translate path, --ingress tc --syn-hook tc|$IF_MB|--synproxy $PORT --synproxy-path translate --ingress tc --syn-hook tc"
	"nft_synproxy|no isnguard, the kernel's SYNPROXY (nftables on M)|$IF_MB|@nft_synproxy"
)

# The anchor issue 18 names for the translate path: the same work done by
# the kernel's own SYN proxy on the same gateway (netfilter SYNPROXY through
# nftables, as scripts/bench-synflood.sh --gateway sets it up): the client's
# scripts/nft-synproxy.sh's ruleset on M's forward hook; nf_conntrack_tcp_loose
# 0 in M, restored after the row.
nft_synproxy_on() {
	nft_synproxy_ruleset isng_bench_sp forward "$PORT" | in_ns "$NS_M" nft -f - ||
		fail "nft synproxy ruleset in M"
	# Read once the ruleset's ct expressions have brought conntrack in.
	loose_before=$(in_ns "$NS_M" sysctl -n net.netfilter.nf_conntrack_tcp_loose) ||
		fail "sysctl net.netfilter.nf_conntrack_tcp_loose in M"
	in_ns "$NS_M" sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 || fail "sysctl tcp_loose=0 in M"
}

nft_synproxy_off() {
	in_ns "$NS_M" nft delete table ip isng_bench_sp || fail "nft delete table in M"
	in_ns "$NS_M" sysctl -qw net.netfilter.nf_conntrack_tcp_loose="$loose_before" ||
		fail "sysctl tcp_loose in M"
}

row_attach() { # IFACE OPTIONS
	local iface=$1 opts=$2
	[ "$iface" = - ] && return 0
	# shellcheck disable=SC2034 # read by isng and topo_down (lib.sh)
	if [ "$iface" = "$IF_MB" ]; then ISNG_NS=$NS_M; else ISNG_NS=$NS_A; fi
	ISNG_IF=$iface
	if [ "$opts" = @nft_synproxy ]; then
		nft_synproxy_on
		return 0
	fi
	if [ "$opts" = @xdp_pass ]; then
		ip -n "$ISNG_NS" link set dev "$iface" xdpdrv obj "$build/xdp_pass.bpf.o" sec xdp.frags ||
			fail "XDP_PASS program on $ISNG_NS/$iface"
		return 0
	fi
	if [ "$opts" = @least ] || [ "$opts" = @least_tc ]; then
		local least_args=(attach "$iface")
		[ "$opts" = @least_tc ] && least_args+=(--ingress tc)
		in_ns "$ISNG_NS" "$build/least_rewrite" "${least_args[@]}" ||
			fail "least_rewrite ${least_args[*]} in $ISNG_NS"
		return 0
	fi
	# shellcheck disable=SC2086 # opts is a list of options
	isng attach "$iface" $opts >"$E2E_WORK/attach.out" 2>&1 ||
		fail "isng attach $iface $opts: $(tail -n 1 "$E2E_WORK/attach.out")"
}

row_detach() { # IFACE OPTIONS
	[ "$1" = - ] && return 0
	if [ "${2:-}" = @nft_synproxy ]; then
		nft_synproxy_off
		ISNG_NS='' ISNG_IF=''
		return 0
	fi
	if [ "${2:-}" = @xdp_pass ]; then
		ip -n "$ISNG_NS" link set dev "$1" xdpdrv off || fail "XDP_PASS program off $ISNG_NS/$1"
		ISNG_NS='' ISNG_IF=''
		return 0
	fi
	if [ "${2:-}" = @least ] || [ "${2:-}" = @least_tc ]; then
		# A floor that rewrote nothing would be no floor: its table holds the row's flows.
		least_flows_rewritten "$ISNG_NS" "$1" ||
			fail "the least rewriter on $ISNG_NS/$1 rewrote no connection"
		in_ns "$ISNG_NS" "$build/least_rewrite" detach "$1" || fail "least_rewrite detach $ISNG_NS/$1"
		ISNG_NS='' ISNG_IF=''
		return 0
	fi
	isng detach "$1" >"$E2E_WORK/detach.out" 2>&1 || fail "isng detach $1: $(tail -n 1 "$E2E_WORK/detach.out")"
	ISNG_NS='' ISNG_IF=''
}

# Whether the table of the least rewriter attached to IFACE in NS holds a
# flow whose ISN it changed: its first entry's delta is not 0 (0 only if the
# keyed ISN hit the host's, one in 2^32).
least_flows_rewritten() { # NS IFACE
	local prog map key
	# least_egress: on the device with either ingress, its name within the kernel's 15 characters.
	prog=$(attached_progs "$1" "$2" | awk '$2 == "least_egress" { print $1 }')
	[ -n "$prog" ] || fail "no least_egress program on $1/$2"
	for map in $(bpftool prog show id "$prog" --json | python3 -c '
import json, sys; print(*json.load(sys.stdin).get("map_ids", []))'); do
		bpftool map show id "$map" --json | grep -q '"name": *"least_flows"' && break
		map=''
	done
	[ -n "$map" ] || fail "least_egress (program $prog) has no least_flows map"
	key=$(bpftool map getnext id "$map" --json | python3 -c '
import json, sys; print(" ".join(b[2:] for b in json.load(sys.stdin)["next_key"]))') || return 1
	# shellcheck disable=SC2086 # the key's bytes, one word each
	bpftool map lookup id "$map" key hex $key --json | python3 -c '
import json, sys; sys.exit(0 if json.load(sys.stdin)["formatted"]["value"]["delta"] else 1)'
}

# wrk_run (lib.sh) with the connections spread over the topology's client addresses.
spread_wrk() { # TOPOLOGY URL MODE FILE
	local first=$SPREAD_HOST
	[ "$1" = gateway ] && first=$SPREAD_GATEWAY
	LD_PRELOAD=$build/src_spread.so SRC_SPREAD_FIRST=$first SRC_SPREAD_COUNT=$SPREAD \
		wrk_run "$NS_B" "$2" "$3" "$conns" "$secs" "$4"
}

# One wrk run; appends TOPOLOGY ROW MODE ROUND and wrk's figures to the results.
# Busy and stolen CPU time of the whole machine so far, in jiffies: user,
# nice, system, irq and softirq; steal apart (/proc/stat's first line).
cpu_jiffies() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9; exit }' /proc/stat
}

measure() { # TOPOLOGY ROW MODE ROUND URL
	local topo=$1 row=$2 mode=$3 round=$4 url=$5 out=$E2E_WORK/wrk.out b0 s0 b1 s1 ns ns_name
	# Both ends' TCP counters, for a run wrk reports errors in (below).
	in_ns "$NS_A" nstat -asz >"$E2E_WORK/nstat.A" && in_ns "$NS_B" nstat -asz >"$E2E_WORK/nstat.B" ||
		fail "nstat"
	read -r b0 s0 <<<"$(cpu_jiffies)"
	spread_wrk "$topo" "$url" "$mode" "$out" || fail "wrk: $(tail -n 1 "$out")"
	grep -q src_spread "$out" && fail "wrk: $(grep -m 1 src_spread "$out")"
	read -r b1 s1 <<<"$(cpu_jiffies)"
	cat "$out"
	# wrk's own words on what failed, for the table's err column.
	grep -E "Socket errors|Non-2xx" "$out" | sed "s/^ */$topo $row $mode, round $round: /" \
		>>"$E2E_WORK/errors.txt"
	# Then what the server's stack and isnguard counted: who reset what.
	if grep -q "Socket errors" "$out"; then
		{
			for ns in A B; do
				echo "  $ns's TCP counters that moved in the run (resets, drops, cookies):"
				[ "$ns" = A ] && ns_name=$NS_A || ns_name=$NS_B
				in_ns "$ns_name" nstat -asz |
					awk 'NR == FNR { before[$1] = $2; next }
					     $2 - before[$1] > 0 { print "    " $1, $2 - before[$1] }' \
						"$E2E_WORK/nstat.$ns" - |
					grep -E "Rst|Reset|Abort|Overflow|Drop|Cookie|Syn|Retrans|Fail" || true
			done
			if [ -n "${ISNG_IF:-}" ]; then
				echo "  isnguard's counters since this row's attach:"
				isng stats --json | python3 -c 'import json, sys
for k, v in json.load(sys.stdin)["counters"].items():
    if v: print("    %s %d" % (k, v))'
			fi
		} >>"$E2E_WORK/errors.txt" 2>&1
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$row" "$mode" "$round" $((b1 - b0)) $((s1 - s0)) \
		"$(wrk_figures "$out" | tr ' ' '\t')" >>"$results"
	sleep 0.3	# the last connections close before the next run
}

# The BPF programs attached to IFACE in NS: "ID NAME" lines.
attached_progs() { # NS IFACE
	local id
	for id in $(in_ns "$1" bpftool net show dev "$2" --json | python3 -c '
import json, sys
def walk(o):
    if isinstance(o, dict):
        if isinstance(o.get("id"), int): yield o["id"]
        for v in o.values(): yield from walk(v)
    elif isinstance(o, list):
        for v in o: yield from walk(v)
print(*sorted(set(walk(json.load(sys.stdin)))))'); do
		echo "$id $(bpftool prog show id "$id" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')"
	done
}

# run_time_ns and run_cnt of program ID.
prog_stats() { # ID
	bpftool prog show id "$1" --json | python3 -c '
import json, sys
p = json.load(sys.stdin); print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

# One run of ROW with the BPF statistics on: per program, the deltas.
# The sweeper's slots and run time so far (its timer runs outside any
# attached program, so the BPF statistics do not see it): "slots ns".
sweeper_stats() {
	local out
	out=$(isng stats --json) || fail "isng stats --json"
	echo "$(json_num sweep_slots <<<"$out") $(json_num sweep_ns <<<"$out")"
}

# The sweeper's work for a row's connections comes due after its run: each
# entry's first look one sweep interval (10 s) after it was made, a closed
# connection's last a closed timeout (90 s) on. sweeper_drain cuts the
# opening, closing and closed timeouts to DRAIN_TIMEOUT_S once the run is
# over, the interval left as it is, and waits until both tables are empty,
# at most DRAIN_S seconds. A promoted handshake's entry and a closed
# connection's then get the looks they get at the defaults: one, and two,
# the second in the long queue, whose delay is 16 - 10 / 2 = 11 s instead of
# 85 (it must exceed the interval, or the long queue goes unused: so the
# interval is checked to be the default 10 s). An entry left opening or
# closing gets two looks where the defaults give it about a dozen, and a
# run longer than an interval has its first closed flows in the long queue
# already, looked at once more; neither is what these runs (2 s, every
# connection closed) make. The drain takes about 25 s. Flows still there
# then (an established one whose end was lost, 24 h to live) are reported
# after the tables: their looks are not in the figure.
DRAIN_S=60 DRAIN_TIMEOUT_S=16 DRAIN_INTERVAL_MS=10000
sweeper_drain() { # TOPOLOGY ROW
	local cfg=$PIN_DIR/isn_config i present
	bpftool map dump pinned "$cfg" --json >"$E2E_WORK/config.json" || fail "bpftool map dump $cfg"
	python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))[0]["formatted"]["value"]["sweep_interval_ms"] != int(sys.argv[2]))' \
		"$E2E_WORK/config.json" "$DRAIN_INTERVAL_MS" ||
		fail "isn_config: sweep_interval_ms is not $DRAIN_INTERVAL_MS (sweeper_drain's timeouts are made for it)"
	# struct isn_config (include/isnguard.h): timeout_opening at 8, timeout_closing at 16,
	# timeout_closed at 20, read back by name below, so a moved field fails here rather
	# than measures wrong.
	python3 - "$E2E_WORK/config.json" "$DRAIN_TIMEOUT_S" >"$E2E_WORK/config.val" <<'PY' ||
import json, struct, sys
e = json.load(open(sys.argv[1]))[0]
v = bytearray(int(b, 16) for b in e["value"])
for off in (8, 16, 20):
    struct.pack_into("=I", v, off, int(sys.argv[2]))
print(" ".join(str(b) for b in v))
PY
		fail "isn_config's value"
	# shellcheck disable=SC2046 # the value's bytes, one word each
	bpftool map update pinned "$cfg" key 0 0 0 0 value $(cat "$E2E_WORK/config.val") ||
		fail "bpftool map update $cfg"
	bpftool map dump pinned "$cfg" --json | python3 -c '
import json, sys
f = json.load(sys.stdin)[0]["formatted"]["value"]
t = int(sys.argv[1])
sys.exit(0 if (f["timeout_opening"], f["timeout_closing"], f["timeout_closed"]) == (t, t, t) else 1)' \
		"$DRAIN_TIMEOUT_S" || fail "isn_config: the timeouts not where written"
	for ((i = 0; i < DRAIN_S; i++)); do
		present=$(isng_counter flows_present) || fail "isng stats --json"
		[ "$present" = 0 ] && return 0
		sleep 1
	done
	echo "$1 $2: $present flows still present ${DRAIN_S} s after the run; the sweeper's" \
		"figure misses their looks" >>"$E2E_WORK/drain.txt"
}

profile_row() { # TOPOLOGY ROW MODE URL IFACE OPTIONS
	local topo=$1 row=$2 mode=$3 url=$4 iface=$5 opts=$6 ns progs id name t0 c0 t1 c1 req
	local b0 b1 sr0 sn0 sr1 sn1
	declare -A before=()
	row_attach "$iface" "$opts"
	ns=$ISNG_NS
	progs=$(attached_progs "$ns" "$iface") || fail "bpftool net show dev $iface"
	sysctl -qw kernel.bpf_stats_enabled=1 || fail "sysctl kernel.bpf_stats_enabled=1"
	while read -r id name; do
		[ -n "$id" ] || continue	# none attached: the nft_synproxy row
		before[$id]=$(prog_stats "$id")
	done <<<"$progs"
	[[ $opts == @* ]] || read -r sr0 sn0 <<<"$(sweeper_stats)"
	read -r b0 _ <<<"$(cpu_jiffies)"
	spread_wrk "$topo" "$url" "$mode" "$E2E_WORK/wrk.out" ||
		fail "wrk: $(tail -n 1 "$E2E_WORK/wrk.out")"
	read -r b1 _ <<<"$(cpu_jiffies)"
	req=$(wrk_figures "$E2E_WORK/wrk.out" | cut -d' ' -f1)
	# The machine's busy CPU time over the run, as a pseudo-program.
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$row" "$mode" "(CPU, whole machine)" "$req" \
		0 $(((b1 - b0) * 1000000000 / $(getconf CLK_TCK))) >>"$profiles"
	if [[ $opts != @* ]]; then
		# One per request: the sweeper's looks at the run's flows, up to the last removal.
		[ "$mode" = close ] && sweeper_drain "$topo" "$row"
		read -r sr1 sn1 <<<"$(sweeper_stats)"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$row" "$mode" "(sweeper: slots)" "$req" \
			$((sr1 - sr0)) $((sn1 - sn0)) >>"$profiles"
	fi
	if [ "$outcomes" = 1 ] && [[ $opts != @* ]]; then
		id=$(bpftool map show name isn_prof --json | python3 -c '
import json, sys
maps = json.load(sys.stdin)
ids = [m["id"] for m in (maps if isinstance(maps, list) else [maps])]
print(max(ids) if ids else "")') || fail "bpftool map show name isn_prof"
		[ -n "$id" ] || fail "--outcomes: no isn_prof map (build with make PROFILE=1)"
		bpftool map dump id "$id" --json >"$E2E_WORK/outcomes-$topo-$row-$mode.json" ||
			fail "bpftool map dump id $id"
		printf '%s\t%s\t%s\t%s\t%s\n' "$topo" "$row" "$mode" "$req" \
			"$E2E_WORK/outcomes-$topo-$row-$mode.json" >>"$outcome_list"
	fi
	while read -r id name; do
		[ -n "$id" ] || continue
		read -r t0 c0 <<<"${before[$id]}"
		read -r t1 c1 <<<"$(prog_stats "$id")"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$row" "$mode" "$name" "$req" \
			$((c1 - c0)) $((t1 - t0)) >>"$profiles"
	done <<<"$progs"
	sysctl -qw kernel.bpf_stats_enabled="$stats_before"
	row_detach "$iface" "$opts"
	sleep 0.3
}

run_topology() { # TOPOLOGY URL ROW...
	local topo=$1 url=$2 round i n name what iface opts mode modes row
	shift 2
	local rows=()
	for row in "$@"; do
		name=${row%%|*}
		[ -z "$keep" ] || [ "$name" = none ] || [[ ",$keep," == *",$name,"* ]] && rows+=("$row")
	done
	n=${#rows[@]}
	for ((round = 0; round < rounds; round++)); do
		modes=(close keepalive)
		[ $((round % 2)) = 1 ] && modes=(keepalive close)
		for ((i = 0; i < n; i++)); do
			IFS='|' read -r name what iface opts <<<"${rows[(i + round) % n]}"
			log "round $round: $topo $name"
			row_attach "$iface" "$opts"
			for mode in "${modes[@]}"; do
				measure "$topo" "$name" "$mode" "$round" "$url"
			done
			row_detach "$iface" "$opts"
		done
	done
	[ "$profile" = 1 ] || return 0
	for ((i = 1; i < n; i++)); do
		IFS='|' read -r name what iface opts <<<"${rows[i]}"
		for mode in close keepalive; do
			profile_row "$topo" "$name" "$mode" "$url" "$iface" "$opts"
		done
	done
}

[ "$only" != gateway ] && run_topology host "$(http_url "$H_A" "$PORT")" "${host_rows[@]}"
[ "$only" != host ] && run_topology gateway "$(http_url "$A4" "$PORT")" "${gateway_rows[@]}"

# The tables (or JSON) from the raw figures.
python3 - "$results" "$profiles" "$json" "$rounds" "$secs" "$conns" "$outcome_list" \
	"$here/../include/isnguard.h" "$E2E_WORK/drain.txt" \
	"${host_rows[@]/#/host|}" "${gateway_rows[@]/#/gateway|}" >&3 <<'EOF'
import json, os, random, re, statistics, sys

hz = os.sysconf("SC_CLK_TCK")	# /proc/stat's unit

results, profiles, as_json, rounds, secs, conns, outcome_list, header, drain = sys.argv[1:10]
rows = [r.split("|") for r in sys.argv[10:]]
goal = {"rewrite": 0.97, "cookie_local": 0.95, "cookie_local_tcsyn": 0.95, "translate_xdp": 0.90,
        "translate_tc": 0.90, "translate_tcsyn": 0.90}
# The rows measured against an anchor row, the anchor, its name in the JSON
# keys (ratio_to_...) and the title its table gets. rewrite_tc has no XDP
# program, nor has least_tc: each rewrite row is put beside the least
# rewriter on the same hooks.
ANCHORS = ((("rewrite",), "least", "least_rewriter",
            "ISN rewriting against the least rewriter (row least, same rounds): rate and CPU"
            " ratios, isnguard over the least, [95% intervals]"),
           (("rewrite_tc",), "least_tc", "least_rewriter_tc",
            "ISN rewriting with --ingress tc against the least rewriter at tc ingress (row"
            " least_tc, same rounds): rate and CPU ratios, isnguard over the least, [95% intervals]"),
           (("translate_xdp", "translate_tc", "translate_tcsyn"), "nft_synproxy", "kernel_synproxy",
            "The translate path against the kernel's SYNPROXY (nftables on the same gateway, same"
            " rounds): rate and CPU ratios, isnguard over nftables, [95% intervals]"))
runs = {}
for line in open(results):
    topo, row, mode, rnd, busy, steal, req, dur, *errs = line.rstrip("\n").split("\t")
    runs.setdefault((topo, row, mode), {})[int(rnd)] = (
        int(req) / float(dur), sum(map(int, errs)), int(busy) * 1e6 / hz / max(int(req), 1),
        int(steal) * 1e6 / hz / max(int(req), 1))


def median_ci(values, n=4000):
    """The median's 95% interval: percentile bootstrap, seeded (the same figures give the same interval)."""
    rnd = random.Random(18)
    meds = sorted(statistics.median(rnd.choices(values, k=len(values))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def verdict(lo, hi, goal):
    """Whether the interval shows the goal met, missed, or cannot tell."""
    if goal is None:
        return None
    return "met" if lo >= goal else "missed" if hi < goal else "undecided"


out = {"rounds": int(rounds), "seconds": int(secs), "connections": int(conns), "rows": [], "profile": []}
for topo, name, what, _iface, _opts in rows:
    for mode in ("close", "keepalive"):
        mine = runs.get((topo, name, mode))
        if not mine:
            continue
        base = runs[(topo, "none", mode)]
        ratios = [mine[r][0] / base[r][0] for r in mine if r in base and base[r][0] > 0]
        # The same as a rate: the CPU time a request takes without isnguard over with.
        cpu_ratios = [base[r][2] / mine[r][2] for r in mine if r in base and mine[r][2] > 0]
        ci = median_ci(ratios) if name != "none" else (None, None)
        cpu_ci = median_ci(cpu_ratios) if name != "none" else (None, None)
        row_goal = goal.get(name) if mode == "close" else None
        out["rows"].append({
            "topology": topo, "isnguard": name, "what": what,
            "connection": "one per request" if mode == "close" else "keep-alive",
            "requests_per_s": round(statistics.median(v[0] for v in mine.values()), 1),
            "ratio": None if name == "none" else round(statistics.median(ratios), 3),
            "ratio_min": None if name == "none" else round(min(ratios), 3),
            "ratio_max": None if name == "none" else round(max(ratios), 3),
            "ratio_ci95": None if name == "none" else [round(ci[0], 3), round(ci[1], 3)],
            "goal": row_goal,
            "goal_verdict": None if name == "none" else verdict(ci[0], ci[1], row_goal),
            "cpu_us_per_request": round(statistics.median(v[2] for v in mine.values()), 2),
            "steal_us_per_request": round(statistics.median(v[3] for v in mine.values()), 2),
            "cpu_ratio": None if name == "none" else round(statistics.median(cpu_ratios), 3),
            "cpu_ratio_min": None if name == "none" else round(min(cpu_ratios), 3),
            "cpu_ratio_max": None if name == "none" else round(max(cpu_ratios), 3),
            "cpu_ratio_ci95": None if name == "none" else [round(cpu_ci[0], 3), round(cpu_ci[1], 3)],
            "errors": sum(v[1] for v in mine.values()),
            "rates": [round(mine[r][0], 1) for r in sorted(mine)],
        })
        # Round by round against an anchor in the same rounds: the translate
        # path against the kernel's SYNPROXY doing the same work on the same
        # gateway (issue 18's anchor), ISN rewriting against the least
        # rewriter (rows "least", "least_tc").
        for names, anchor_row, label, _title in ANCHORS:
            anchor = runs.get((topo, anchor_row, mode))
            if name not in names or not anchor:
                continue
            k = [mine[r][0] / anchor[r][0] for r in mine if r in anchor and anchor[r][0] > 0]
            kc = [anchor[r][2] / mine[r][2] for r in mine if r in anchor and mine[r][2] > 0]
            kci, kcci = median_ci(k), median_ci(kc)
            out["rows"][-1].update({
                "ratio_to_" + label: round(statistics.median(k), 3),
                "ratio_to_%s_ci95" % label: [round(kci[0], 3), round(kci[1], 3)],
                "cpu_ratio_to_" + label: round(statistics.median(kc), 3),
                "cpu_ratio_to_%s_ci95" % label: [round(kcci[0], 3), round(kcci[1], 3)],
            })
for line in open(profiles):
    topo, row, mode, prog, req, cnt, ns = line.rstrip("\n").split("\t")
    req, cnt, ns = int(req), int(cnt), int(ns)
    out["profile"].append({
        "topology": topo, "isnguard": row,
        "connection": "one per request" if mode == "close" else "keep-alive",
        "program": prog, "requests": req, "run_cnt": cnt, "run_time_ns": ns,
        "packets_per_request": round(cnt / req, 2) if req else None,
        "ns_per_request": round(ns / req, 1) if req else None,
        "ns_per_packet": round(ns / cnt, 1) if cnt else None,
    })
# Per profiled row: all its BPF time (programs and sweeper) against the
# machine's busy CPU time, both per request and from the same run.
out["share"] = []
for key in dict.fromkeys((p["topology"], p["isnguard"], p["connection"]) for p in out["profile"]):
    mine = [p for p in out["profile"] if (p["topology"], p["isnguard"], p["connection"]) == key]
    cpu = [p for p in mine if p["program"] == "(CPU, whole machine)"]
    bpf = sum(p["ns_per_request"] or 0 for p in mine if p["program"] != "(CPU, whole machine)")
    if not cpu or not cpu[0]["ns_per_request"]:
        continue
    out["share"].append({
        "topology": key[0], "isnguard": key[1], "connection": key[2],
        "bpf_ns_per_request": round(bpf, 1),
        "cpu_ns_per_request": cpu[0]["ns_per_request"],
        "bpf_share": round(bpf / cpu[0]["ns_per_request"], 4),
    })

# --outcomes: isn_prof's slots (include/isnguard.h), per request.
stat_names = re.findall(r'X\(STAT_\w+,\s*"([^"]+)"\)', open(header).read())
prof_progs = ["xdp", "xdp (header prediction)", "xdp_cookie", "tc_ingress", "tc_cookie",
              "tc_egress"]
out["outcomes"] = []
for line in open(outcome_list):
    topo, row, mode, req, path = line.rstrip("\n").split("\t")
    slots = len(stat_names) + 1
    for e in json.load(open(path)):
        f = e["formatted"]
        ns = sum(v["value"]["ns"] for v in f["values"])
        runs = sum(v["value"]["runs"] for v in f["values"])
        if not runs:
            continue
        prog, stat = divmod(f["key"], slots)
        out["outcomes"].append({
            "topology": topo, "isnguard": row,
            "connection": "one per request" if mode == "close" else "keep-alive",
            "program": prof_progs[prog] if prog < len(prof_progs) else str(prog),
            "outcome": stat_names[stat] if stat < len(stat_names) else "(no counter)",
            "runs_per_request": round(runs / int(req), 3), "ns_per_run": round(ns / runs, 1),
            "ns_per_request": round(ns / int(req), 1),
        })

# Rows whose flows outlived the sweeper's drain (sweeper_drain): their looks are not counted.
out["drain_incomplete"] = open(drain).read().splitlines() if os.path.exists(drain) else []

if as_json == "1":
    print(json.dumps({"conn_rate": out}))
    sys.exit(0)

print("\nConnection rate: nginx (1 worker, CPU 1) and wrk (1 thread, %s connections, CPU 0),"
      " %s rounds of %s s per row, interleaved; medians" % (conns, rounds, secs))
print("ratio: the median of the rounds' rates over the same round's row without isnguard,"
      " [its 95% bootstrap interval];\nCPU: busy CPU time of the machine per request"
      " (/proc/stat), and the same ratio from it (without over with)")
seen = []
for r in out["rows"]:
    if (r["isnguard"], r["what"]) not in seen:
        seen.append((r["isnguard"], r["what"]))
print("rows: " + "; ".join("%s: %s" % w for w in seen))
print("%-8s %-18s %-10s %7s %6s %13s %7s %6s %13s %5s %9s %4s" %
      ("topology", "isnguard", "connection", "req/s", "ratio", "95% interval", "CPU us",
       "CPU r", "95% interval", "goal", "goal is", "err"))
for r in out["rows"]:
    none = r["ratio"] is None
    print("%-8s %-18s %-10s %7.0f %6s %13s %7.1f %6s %13s %5s %9s %4d" % (
        r["topology"], r["isnguard"], "close" if r["connection"] == "one per request"
        else "keepalive", r["requests_per_s"],
        "" if none else "%.3f" % r["ratio"],
        "" if none else "[%.3f-%.3f]" % tuple(r["ratio_ci95"]),
        r["cpu_us_per_request"],
        "" if none else "%.3f" % r["cpu_ratio"],
        "" if none else "[%.3f-%.3f]" % tuple(r["cpu_ratio_ci95"]),
        "" if r["goal"] is None else "%.2f" % r["goal"], r["goal_verdict"] or "",
        r["errors"]))
for _names, _anchor_row, label, title in ANCHORS:
    anchored = [r for r in out["rows"] if "ratio_to_" + label in r]
    if anchored:
        print("\n" + title)
    for r in anchored:
        print("%-8s %-18s %-10s rate %.3f [%.3f-%.3f]  CPU %.3f [%.3f-%.3f]" % (
            r["topology"], r["isnguard"], "close" if r["connection"] == "one per request"
            else "keepalive", r["ratio_to_" + label], *r["ratio_to_%s_ci95" % label],
            r["cpu_ratio_to_" + label], *r["cpu_ratio_to_%s_ci95" % label]))
if out["profile"]:
    print("\nWhere it goes: each attached program's run count and run time over one run"
          " (kernel.bpf_stats_enabled=1), per request and per packet")
    print("%-8s %-14s %-15s %-22s %9s %9s %10s %9s" %
          ("topology", "isnguard", "connection", "program", "requests", "pkts/req", "ns/req", "ns/pkt"))
    for p in out["profile"]:
        print("%-8s %-14s %-15s %-22s %9d %9s %10s %9s" % (
            p["topology"], p["isnguard"], p["connection"], p["program"], p["requests"],
            p["packets_per_request"], p["ns_per_request"], p["ns_per_packet"]))
    print("\nThe BPF time of each profiled row (its programs' and the sweeper's, with the"
          " statistics' own two clock reads a run; one per request, the sweeper's until the run's"
          " flows are gone) as a share of the machine's busy CPU time over the run")
    print("%-8s %-14s %-15s %12s %12s %7s" %
          ("topology", "isnguard", "connection", "BPF ns/req", "CPU ns/req", "share"))
    for p in out["share"]:
        print("%-8s %-14s %-15s %12.0f %12.0f %6.1f%%" % (
            p["topology"], p["isnguard"], p["connection"], p["bpf_ns_per_request"],
            p["cpu_ns_per_request"], 100 * p["bpf_share"]))
for line in out["drain_incomplete"]:
    print("The sweeper's drain: " + line)
if out["outcomes"]:
    print("\nBy outcome (a make PROFILE=1 build: each run timed inside the program, two more"
          " clock reads a run)")
    print("%-8s %-14s %-15s %-24s %-28s %8s %8s %8s" % ("topology", "isnguard", "connection",
          "program", "outcome", "runs/req", "ns/run", "ns/req"))
    for p in sorted(out["outcomes"], key=lambda p: (p["topology"], p["isnguard"], p["connection"],
                                                     -p["ns_per_request"])):
        print("%-8s %-14s %-15s %-24s %-28s %8.2f %8.1f %8.1f" % (
            p["topology"], p["isnguard"], p["connection"], p["program"], p["outcome"],
            p["runs_per_request"], p["ns_per_run"], p["ns_per_request"]))
EOF
if [ -s "$E2E_WORK/errors.txt" ]; then
	echo "wrk's errors (the err column):" >&3
	cat "$E2E_WORK/errors.txt" >&3
fi
