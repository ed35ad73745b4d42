# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# Helpers of the end-to-end tests: a three-namespace topology, loss and MTU in
# the middle, captures, background transfers, isnguard in the protected
# namespace, and assertions that print expected and actual.
#
#   A (protected host, isnguard on a0) a0 --- m0 M (router) m1 --- b0 B (peer)
#   10.200.1.1/24 fd00:200:1::1/64      .1.2 ::2   .2.2 ::2     10.200.2.1/24 fd00:200:2::1/64
#
# Names carry a suffix ($E2E_SUFFIX, else $$) so a crashed run cannot break
# the next one; topo_down (run from an EXIT trap) removes everything.
#
# ISNG_BASELINE=1 makes `isng` a no-op and skips the checks that need the
# datapath, so the topology, loss, MTU, captures and tcp_xfer can be proven
# on a kernel without isnguard.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_ROOT=$(cd "$E2E_DIR/../.." && pwd)
TCP_XFER=${TCP_XFER:-$E2E_ROOT/build/tcp_xfer}
ISNGUARD=${ISNGUARD:-$E2E_ROOT/build/isnguard}
# Extra `isng attach` options, e.g. E2E_ATTACH_ARGS="--xdp-mode skb".
E2E_ATTACH_ARGS=${E2E_ATTACH_ARGS:-}

A4=10.200.1.1 A6=fd00:200:1::1
M4A=10.200.1.2 M6A=fd00:200:1::2
M4B=10.200.2.2 M6B=fd00:200:2::2
B4=10.200.2.1 B6=fd00:200:2::1
IF_A=a0 IF_MA=m0 IF_MB=m1 IF_B=b0

NS_A='' NS_M='' NS_B='' PIN_DIR='' E2E_WORK_OWNED=''
# Where `isng` runs and what topo_down detaches: A's a0 unless a test says
# otherwise (the gateway tests: NS_M and m1).
ISNG_NS='' ISNG_IF=''
declare -A BG_PIDS=()
CAPTURE_PIDS=()
ISNG_USED=

is_baseline() { [ "${ISNG_BASELINE:-0}" = 1 ]; }

log() { printf '# %s\n' "$*"; }

# ---- assertions: one line naming what differed, then exit 1 ----

fail() {
	printf 'FAIL: %s\n' "$*"
	exit 1
}

# A test exits 77 for "skipped: this kernel or machine lacks X": counted as
# skipped, neither passed nor failed.
skip() {
	printf 'skipped: %s\n' "$*"
	exit 77
}

assert_eq() { # ACTUAL EXPECTED WHAT
	[ "$1" = "$2" ] || fail "$3: expected '$2', actual '$1'"
	log "ok: $3 = $1"
}

assert_ge() { # ACTUAL MIN WHAT
	[[ "$1" =~ ^[0-9]+$ ]] || fail "$3: expected a number >= $2, actual '$1'"
	[ "$1" -ge "$2" ] || fail "$3: expected >= $2, actual $1"
	log "ok: $3 = $1 (>= $2)"
}

assert_gt() { # ACTUAL MIN WHAT
	[[ "$1" =~ ^[0-9]+$ ]] || fail "$3: expected a number > $2, actual '$1'"
	[ "$1" -gt "$2" ] || fail "$3: expected > $2, actual $1"
	log "ok: $3 = $1 (> $2)"
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "needs $c"
	done
}

# ---- topology ----

in_ns() { # NS CMD...
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

topo_up() {
	local suffix=${E2E_SUFFIX:-$$} ns

	[ -x "$TCP_XFER" ] || fail "no $TCP_XFER (build it: see tests/e2e/tcp_xfer.c)"
	NS_A=isng-e2e-a-$suffix NS_M=isng-e2e-m-$suffix NS_B=isng-e2e-b-$suffix
	PIN_DIR=/sys/fs/bpf/isnguard-e2e-$suffix
	export ISNGUARD_PIN_DIR=$PIN_DIR
	if [ -z "${E2E_WORK:-}" ]; then
		E2E_WORK=$(mktemp -d "/tmp/isng-e2e-$suffix.XXXXXX")
		E2E_WORK_OWNED=1
	fi
	mkdir -p "$E2E_WORK"

	for ns in "$NS_A" "$NS_M" "$NS_B"; do
		ip netns add "$ns" || fail "ip netns add $ns"
		ip -n "$ns" link set lo up
		# Before the veths exist, so their addresses skip DAD and work at once.
		in_ns "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_MA" netns "$NS_M" ||
		fail "veth $NS_A/$IF_A - $NS_M/$IF_MA"
	ip link add "$IF_MB" netns "$NS_M" type veth peer name "$IF_B" netns "$NS_B" ||
		fail "veth $NS_M/$IF_MB - $NS_B/$IF_B"

	ip -n "$NS_A" addr add "$A4/24" dev "$IF_A"
	ip -n "$NS_A" addr add "$A6/64" dev "$IF_A" nodad
	ip -n "$NS_M" addr add "$M4A/24" dev "$IF_MA"
	ip -n "$NS_M" addr add "$M6A/64" dev "$IF_MA" nodad
	ip -n "$NS_M" addr add "$M4B/24" dev "$IF_MB"
	ip -n "$NS_M" addr add "$M6B/64" dev "$IF_MB" nodad
	ip -n "$NS_B" addr add "$B4/24" dev "$IF_B"
	ip -n "$NS_B" addr add "$B6/64" dev "$IF_B" nodad
	ip -n "$NS_A" link set "$IF_A" up
	ip -n "$NS_M" link set "$IF_MA" up
	ip -n "$NS_M" link set "$IF_MB" up
	ip -n "$NS_B" link set "$IF_B" up
	# Only the other end's subnet, via M: nothing can leave the namespaces.
	ip -n "$NS_A" route add 10.200.2.0/24 via "$M4A"
	ip -n "$NS_A" -6 route add fd00:200:2::/64 via "$M6A"
	ip -n "$NS_B" route add 10.200.1.0/24 via "$M4B"
	ip -n "$NS_B" -6 route add fd00:200:1::/64 via "$M6B"
	in_ns "$NS_M" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	topo_wait_ready
	log "topology up: $NS_A ($IF_A) - $NS_M ($IF_MA, $IF_MB) - $NS_B ($IF_B), pins $PIN_DIR"
}

# IPv6 takes a veth's addresses into use only once linkwatch has seen the
# carrier (up to a second after `link set up`); before, neighbour
# solicitations go unanswered and the first SYN is lost.
topo_wait_ready() {
	local i ns pending
	for ((i = 0; i < 60; i++)); do
		pending=
		for ns in "$NS_A" "$NS_M" "$NS_B"; do
			[ -n "$(ip -n "$ns" -6 addr show tentative)" ] && pending+=" $ns(tentative)"
			ip -n "$ns" -o link show up | grep -v 'lo:' | grep -qv 'state UP' &&
				pending+=" $ns(link)"
		done
		[ -z "$pending" ] && return 0
		sleep 0.05
	done
	fail "topology not ready after 3 s:$pending"
}

topo_down() {
	local ns pid

	capture_stop 2>/dev/null
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	BG_PIDS=()
	ns=${ISNG_NS:-$NS_A}
	if [ -n "$ISNG_USED" ] && ! is_baseline && [ -n "$ns" ] && [ -e "/run/netns/$ns" ]; then
		isng_log_counters 2>/dev/null	# where a failed test left them
		isng detach "${ISNG_IF:-$IF_A}" >/dev/null 2>&1
	fi
	for ns in "$NS_A" "$NS_M" "$NS_B"; do
		{ [ -n "$ns" ] && [ -e "/run/netns/$ns" ]; } || continue
		# Anything still running in our own namespaces was started by this test.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$pid" 2>/dev/null
		done
		ip netns del "$ns"
	done
	case $PIN_DIR in
	/sys/fs/bpf/isnguard-e2e-*) [ -e "$PIN_DIR" ] && rm -rf "$PIN_DIR" ;;
	esac
	NS_A='' NS_M='' NS_B='' ISNG_NS='' ISNG_IF=''
	# A work dir the runner handed in is the runner's to keep or remove.
	[ -n "${E2E_WORK_OWNED:-}" ] && rm -rf "$E2E_WORK"
	return 0
}

# Namespaces and pin dirs of earlier runs whose process is gone.
topo_reap_stale() {
	local ns dir pid
	for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^isng-e2e-[amb]-[0-9]+$/ {print $1}'); do
		pid=${ns##*-}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
	done
	for dir in /sys/fs/bpf/isnguard-e2e-*; do
		[ -d "$dir" ] || continue
		pid=${dir##*-}
		[[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf "$dir"
	done
	return 0
}

# ---- impairments in M ----

# Drops PERCENT % of forwarded packets, both directions. A and B stop
# building TSO/GSO super-packets, so a drop is one wire packet, not 45.
loss_on() {
	local percent=$1
	in_ns "$NS_M" nft -f - <<-EOF || fail "nft loss rule"
	table inet isng_e2e_loss {
		chain forward {
			type filter hook forward priority 0; policy accept;
			numgen random mod 100 < $percent counter drop
		}
	}
	EOF
	ip -n "$NS_A" link set "$IF_A" gso_max_segs 1
	ip -n "$NS_B" link set "$IF_B" gso_max_segs 1
	log "loss $percent% in $NS_M forward, GSO off on $IF_A and $IF_B"
}

loss_off() {
	in_ns "$NS_M" nft delete table inet isng_e2e_loss 2>/dev/null
	ip -n "$NS_A" link set "$IF_A" gso_max_segs 65535
	ip -n "$NS_B" link set "$IF_B" gso_max_segs 65535
}

loss_dropped() { # packets the loss rule dropped
	in_ns "$NS_M" nft list table inet isng_e2e_loss 2>/dev/null |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'
}

# Narrows M-B to MTU N. B's routes still announce the MSS of a 1500-byte MTU
# (advmss: nft can only lower an MSS), so A sends full-size segments and M must
# answer with ICMP fragmentation needed / packet too big: what A sends is not
# limited by its own MTU nor by the MSS B would otherwise derive from N.
mtu_middle() {
	local mtu=$1
	ip -n "$NS_M" link set "$IF_MB" mtu "$mtu"
	ip -n "$NS_B" link set "$IF_B" mtu "$mtu"
	ip -n "$NS_B" route replace 10.200.1.0/24 via "$M4B" advmss 1460
	# Below 1280 the kernel turns IPv6 off on the link (RFC 8200 section 5).
	[ "$mtu" -ge 1280 ] && ip -n "$NS_B" -6 route replace fd00:200:1::/64 via "$M6B" advmss 1440
	log "MTU $mtu on $NS_M/$IF_MB and $NS_B/$IF_B, B announces MSS 1460/1440"
}

# ---- captures ----

capture_start() { # NS IFACE FILTER FILE
	local ns=$1 iface=$2 filter=$3 file=$4 i
	require_cmd tcpdump
	in_ns "$ns" tcpdump -i "$iface" -nn -U --immediate-mode -s 200 -Z root -w "$file" "$filter" 2>"$file.log" &
	CAPTURE_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		grep -q 'listening on' "$file.log" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "tcpdump on $ns/$iface did not start: $(cat "$file.log")"
}

capture_stop() {
	local pid
	[ ${#CAPTURE_PIDS[@]} -eq 0 ] && return 0
	sleep 0.2
	for pid in "${CAPTURE_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${CAPTURE_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	CAPTURE_PIDS=()
}

# Absolute seq of the first SYN or SYN-ACK sent by SRC (default: A, either family).
syn_isn_from_capture() { # FILE [SRC]
	local file=$1 src=${2:-}
	tcpdump -r "$file" -nn -S 2>/dev/null | awk -v src="$src" -v a4="$A4" -v a6="$A6" '
		/Flags \[S\.?\]/ {
			from = $3; sub(/\.[0-9]+$/, "", from)
			if (src != "" ? from != src : (from != a4 && from != a6)) next
			if (match($0, /seq [0-9]+/)) { print substr($0, RSTART + 4, RLENGTH - 4); exit }
		}'
}

# Every receiver verifies TCP checksums in software (rx offload off on A
# and B; M's devices complete in software what they send, tx off). SENDERS
# is how A and B send them: "full" (tx offload off: a veth otherwise hands
# on CHECKSUM_PARTIAL packets, which receivers trust unchecked) or
# "partial" (tx on, as a host's stack does: M forwards them partial and the
# datapath rewrites them so). A checksum the datapath got wrong then shows
# as TcpInCsumErrors on A or B.
csum_verified() { # full|partial
	local tx=off
	[ "$1" = partial ] && tx=on
	require_cmd ethtool
	in_ns "$NS_A" ethtool -K "$IF_A" tx "$tx" rx off >/dev/null || fail "ethtool on $IF_A"
	in_ns "$NS_B" ethtool -K "$IF_B" tx "$tx" rx off >/dev/null || fail "ethtool on $IF_B"
	in_ns "$NS_M" ethtool -K "$IF_MA" tx off >/dev/null || fail "ethtool on $IF_MA"
	in_ns "$NS_M" ethtool -K "$IF_MB" tx off >/dev/null || fail "ethtool on $IF_MB"
	log "checksums: computed by senders ($1), completed by M's devices, verified by A and B"
}

csum_strict_on() { csum_verified full; }

assert_no_csum_errors() { # NS NAME
	local errs
	errs=$(nstat_get "$1" TcpInCsumErrors)
	assert_eq "${errs:-0}" 0 "TCP checksum errors seen by $2"
}

# ---- processes ----

# Runs CMD in NS in the background, stdout to $E2E_WORK/NAME.out, stderr to NAME.err.
bg_start() { # NAME NS CMD...
	local name=$1 ns=$2
	shift 2
	in_ns "$ns" "$@" >"$E2E_WORK/$name.out" 2>"$E2E_WORK/$name.err" &
	BG_PIDS[$name]=$!
}

# Waits for NAME; fails with its stderr if it failed.
bg_wait() { # NAME
	local name=$1 rc=0
	wait "${BG_PIDS[$name]}" || rc=$?
	unset "BG_PIDS[$name]"
	cat "$E2E_WORK/$name.err"
	[ "$rc" -eq 0 ] || fail "$name exited $rc: $(tail -n 1 "$E2E_WORK/$name.err")"
}

bg_running() { # NAME
	[ -n "${BG_PIDS[$1]:-}" ] && kill -0 "${BG_PIDS[$1]}" 2>/dev/null
}

wait_listen() { # NS PORT
	local i
	for ((i = 0; i < 100; i++)); do
		in_ns "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing listens on port $2 in $1"
}

mono_ns() { "$TCP_XFER" mono; }

# ---- data checks ----

# Every connection in OUT (tcp_xfer output) received BYTES of one of the
# streams 0..N-1 of SEED, each exactly once; expectations from `tcp_xfer expect`.
assert_received() { # OUT SEED BYTES WHAT
	local out=$1 seed=$2 bytes=$3 what=$4 conns expected actual sizes
	conns=$(grep -c '^conn ' "$out")
	[ "$conns" -gt 0 ] || fail "$what: no connection lines in $out"
	sizes=$(awk '/^conn / {print $4}' "$out" | sort -u | tr '\n' ' ')
	assert_eq "$sizes" "$(numfmt --from=iec "$bytes") " "$what: recv_bytes of each of $conns conns"
	expected=$("$TCP_XFER" expect --bytes "$bytes" --seed "$seed" --conns "$conns" | awk '{print $4}' | sort)
	actual=$(awk '/^conn / {print $6}' "$out" | sort)
	[ "$expected" = "$actual" ] ||
		fail "$what: recv_sha256 of $conns conns differs from the expected stream $seed: expected $(echo "$expected" | head -n 3 | tr '\n' ' ')..., actual $(echo "$actual" | head -n 3 | tr '\n' ' ')..."
	log "ok: $what: $conns conns x $bytes bytes, sha256 = expected (stream $seed)"
}

# ---- isnguard ----

# isnguard in $ISNG_NS (A unless a test runs it elsewhere, e.g. on the
# gateway M): nsenter keeps our mount namespace, hence the host's bpffs
# where the maps are pinned (ip netns exec would remount /sys).
isng() {
	if is_baseline; then
		log "isng $* (baseline: not run)" >&2
		return 0
	fi
	ISNG_USED=1
	log "isng $*" >&2
	ISNGUARD_PIN_DIR=$PIN_DIR nsenter --net="/run/netns/${ISNG_NS:-$NS_A}" -- "$ISNGUARD" "$@"
}

isng_attach() { # IFACE [OPTIONS...]
	# shellcheck disable=SC2086 # E2E_ATTACH_ARGS is a list of options
	isng attach "$@" $E2E_ATTACH_ARGS || fail "isng attach $* $E2E_ATTACH_ARGS"
}

# A fresh 128-bit key as 32 hex digits into FILE; prints it.
new_key_file() { # FILE
	od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$1"
	cat "$1"
}

# The first number of "KEY": N in a JSON text (flat names: counters, count, f).
json_num() { # KEY < JSON
	tr -d '\n' | grep -o "\"$1\"[[:space:]]*:[[:space:]]*[0-9]*" | head -n 1 | sed 's/.*:[[:space:]]*//'
}

isng_counter() { # NAME
	isng stats --json | json_num "$1"
}

# The counters that are not 0, on one line: what the datapath did, for the log.
isng_log_counters() {
	local counters
	is_baseline && return 0
	counters=$(isng stats --json 2>/dev/null | jq -r '[(.counters | to_entries[] |
		select(.value != 0) | "\(.key):\(.value)"), "flows_present:\(.flows_present)"] |
		join(" ")' 2>/dev/null)
	[ -n "$counters" ] && log "counters: $counters"
	return 0
}

# F of RFC 6528 for the tuple, from the reference (`isnguard isn`).
isn_f() { # HASH KEYHEX LOCAL REMOTE
	local key_args=(--key "$2")
	[ "$1" = none ] && key_args=()
	"$ISNGUARD" isn --hash "$1" "${key_args[@]}" --local "$3" --remote "$4" --ticks 0 --json |
		json_num f
}

# The wire ISN S must be M + F with M = floor(ns / 4000) mod 2^32 for some
# CLOCK_MONOTONIC ns between BEFORE and AFTER (RFC 6528 section 3).
assert_isn() { # S HASH KEYHEX LOCAL REMOTE BEFORE AFTER
	local seq=$1 hash=$2 key=$3 local_ep=$4 remote_ep=$5 before=$6 after=$7 f m lo hi
	[[ "$seq" =~ ^[0-9]+$ ]] || fail "no SYN/SYN-ACK seq from A in the capture (got '$seq')"
	if is_baseline; then
		log "baseline: ISN check skipped (host ISN $seq for $local_ep -> $remote_ep)"
		return 0
	fi
	f=$(isn_f "$hash" "$key" "$local_ep" "$remote_ep")
	[[ "$f" =~ ^[0-9]+$ ]] || fail "isnguard isn gave no f for $hash $local_ep $remote_ep"
	m=$(((seq - f) & 0xffffffff))
	lo=$(((before / 4000) & 0xffffffff))
	hi=$(((after / 4000) & 0xffffffff))
	if (( ((m - lo) & 0xffffffff) > ((hi - lo) & 0xffffffff) )); then
		fail "ISN of $local_ep -> $remote_ep ($hash): wire seq $seq - F $f = M $m, expected M in [$lo, $hi] (4 us ticks of CLOCK_MONOTONIC around the connect)"
	fi
	log "ok: ISN $seq = F $f ($hash) + M $m, M in [$lo, $hi]"
}

# A passive open on A: A serves BYTES each way on A_ADDR:PORT to B's
# B_ADDR:$CPORT, captured on B's IFACE; both streams intact, and the ISN of
# A's SYN-ACK as B saw it is the keyed one for $KEY (siphash). $PORT, $CPORT,
# $NS_A, $NS_B as the caller set them.
check_passive_open_isn() { # A_ADDR B_ADDR PORT B_IFACE BYTES
	local a=$1 b=$2 port=$3 iface=$4 bytes=$5 before after seq
	capture_start "$NS_B" "$iface" "tcp port $port" "$E2E_WORK/b.pcap"
	before=$(mono_ns)
	transfer "$NS_A" "$NS_B" "$(ep 4 "$a" "$port")" "$bytes" 60 --local-port "$CPORT"
	bg_wait client
	after=$(mono_ns)
	bg_wait server
	capture_stop
	assert_transfer_intact "$bytes" server
	seq=$(syn_isn_from_capture "$E2E_WORK/b.pcap" "$a")
	assert_isn "$seq" siphash "$KEY" "$(ep 4 "$a" "$port")" "$(ep 4 "$b" "$CPORT")" "$before" "$after"
}

# A hand-made peer (tcp_craft.py) in NS talks from SPORT, where NS's own
# stack has no socket: keep that stack from resetting the connection.
craft_quiet_stack() { # NS SPORT
	in_ns "$1" nft -f - <<-EOF || fail "nft rule in $1"
	table inet isng_e2e_craft {
		chain output {
			type filter hook output priority 0; policy accept;
			tcp sport $2 tcp flags rst drop
		}
	}
	EOF
}

# ---- figures ----

# The TCP/ICMP counters that tell how a transfer went, from NS's own stack.
nstat_report() { # NS LABEL
	local ns=$1 label=$2
	in_ns "$ns" nstat -asz 2>/dev/null | awk -v label="$label" '
		$1 ~ /^(TcpRetransSegs|TcpOutSegs|TcpInSegs|TcpExtTCPLostRetransmit|TcpExtTCPSackRecovery|TcpExtTCPFastRetrans|TcpExtTCPSlowStartRetrans|TcpExtTCPTimeouts|TcpExtTCPSACKReorder|TcpExtOutOfWindowIcmps|TcpExtTCPSackShifted|TcpExtTCPDSACKRecv|TcpExtTCPChallengeACK|TcpExtTCPAbortOnData|IcmpInDestUnreachs|IcmpOutDestUnreachs|Icmp6InPktTooBigs|Icmp6OutPktTooBigs|TcpExtTCPACKSkippedSeq)$/ && $2 > 0 {
			printf "%s%s=%s", (n++ ? " " : "# " label ": "), $1, $2
		}
		END { if (n) print ""; else print "# " label ": (no TCP/ICMP events)" }'
}

nstat_get() { # NS COUNTER
	in_ns "$1" nstat -asz "$2" 2>/dev/null | awk -v c="$2" '$1 == c {print $2; exit}'
}

# Every SNMP/netstat counter of NS, absolute ("Name value" lines), into FILE.
nstat_snap() { # NS FILE
	in_ns "$1" nstat -asz >"$2" || fail "nstat in $1"
}

# The counters named by the regex PATTERN that moved from snapshot FILE0 to
# FILE1, as "Name+delta" words on one line (empty when none moved).
nstat_moved() { # FILE0 FILE1 PATTERN
	awk -v pat="$3" '
		FNR == NR { if ($1 ~ pat) before[$1] = $2; next }
		$1 ~ pat && $2 != before[$1] { printf "%s+%d ", $1, $2 - before[$1] }' "$1" "$2"
}

# ---- real servers and clients: nginx, wrk, ab, curl ----

# The body nginx answers every request with (NGINX_BODY_BYTES, default 612,
# the size of nginx's own welcome page): served from memory, so no file
# under the work dir needs to be readable by nginx's unprivileged worker.
NGINX_BODY_BYTES=${NGINX_BODY_BYTES:-612}

# nginx in NS, one worker pinned to CPU (default 1), listening on PORT on
# every IPv4 and IPv6 address of NS, answering 200 with NGINX_BODY_BYTES
# bytes. Its configuration, pid, error log and temp paths are in
# $E2E_WORK/nginx: nothing of the host's nginx configuration is read or
# written. Stopped by topo_down with the namespace's other processes.
nginx_start() { # NS PORT [CPU]
	local ns=$1 port=$2 cpu=${3:-1} dir=$E2E_WORK/nginx body
	require_cmd nginx taskset
	mkdir -p "$dir"
	body=$(head -c "$NGINX_BODY_BYTES" /dev/zero | tr '\0' x)
	cat >"$dir/nginx.conf" <<-EOF
	worker_processes 1;
	pid $dir/nginx.pid;
	error_log $dir/error.log;
	events { worker_connections 16384; }
	http {
		access_log off;
		client_body_temp_path $dir/body;
		proxy_temp_path $dir/proxy;
		fastcgi_temp_path $dir/fastcgi;
		uwsgi_temp_path $dir/uwsgi;
		scgi_temp_path $dir/scgi;
		default_type text/plain;
		server {
			listen $port backlog=4096;
			listen [::]:$port ipv6only=on backlog=4096;
			location / { return 200 "$body"; }
		}
	}
	EOF
	in_ns "$ns" sysctl -qw net.core.somaxconn=4096
	bg_start nginx "$ns" taskset -c "$cpu" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" \
		-g 'daemon off;'
	wait_listen "$ns" "$port"
}

# The URL of PORT on ADDR (an IPv6 address gets its brackets).
http_url() { # ADDR PORT
	if [[ "$1" == *:* ]]; then echo "http://[$1]:$2/"; else echo "http://$1:$2/"; fi
}

# wrk from NS, one thread pinned to CPU 0 (on a veth the receiver's work
# runs on the sender's CPU, and a thread that moves reorders its segments),
# CONNS connections for SECONDS s; MODE close sends "Connection: close", so
# every request is a connection of its own, keepalive reuses them. Output
# into FILE.
wrk_run() { # NS URL MODE CONNS SECONDS FILE
	local ns=$1 url=$2 mode=$3 conns=$4 secs=$5 file=$6 header=()
	require_cmd wrk taskset
	[ "$mode" = close ] && header=(-H 'Connection: close')
	in_ns "$ns" taskset -c 0 wrk -t1 -c"$conns" -d"${secs}s" --timeout 2s "${header[@]}" "$url" \
		>"$file" 2>&1
}

# From wrk's output in FILE: requests, seconds, then the errors (connect,
# read, write, timeout, non-2xx/3xx), space-separated.
wrk_figures() { # FILE
	awk '
		/ requests in / { req = $1; secs = $4; sub(/s,$/, "", secs) }
		/Socket errors:/ { gsub(/,/, ""); c = $4; r = $6; w = $8; t = $10 }
		/Non-2xx or 3xx responses:/ { n = $5 }
		END { printf "%d %s %d %d %d %d %d\n", req, secs, c, r, w, t, n }' "$1"
}
