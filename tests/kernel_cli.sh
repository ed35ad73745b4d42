#!/bin/sh
# make test-kernels, in the guest (busybox sh): the CLI on the guest's own
# kernel, beyond BPF_PROG_TEST_RUN. It attaches the datapath to lo and
# detaches it, and asks for the SYN proxy's paths: each must work, or fail
# with a one-line error naming what the kernel lacks, leaving nothing
# attached. Each check prints "ok   <what>" or "FAIL <what>: <why>"; the
# last line is "N passed, N failed". Run from the directory holding isnguard.
isng=./isnguard
kfunc=bpf_sk_assign_tcp_reqsk
passed=0
failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# WHAT RC-WANTED NEEDLE CMD...: the exit status is RC-WANTED and the output holds NEEDLE.
expect() {
	what=$1 want=$2 needle=$3
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$what" "exit $rc, not $want: $out"
	elif [ -n "$needle" ] && ! printf '%s' "$out" | grep -q -- "$needle"; then
		fail "$what" "no '$needle' in: $out"
	else
		ok "$what"
	fi
}

# Nothing of isnguard is left on lo: status finds no state (exit 3, not attached).
expect_detached() {
	expect "$1: nothing left attached" 3 '"health":"not-attached"' $isng status --json
}

expect "attach lo (XDP skb mode, tc egress)" 0 '"attached"' $isng attach --xdp-mode skb --json lo
expect "status shows lo" 0 '"lo"' $isng status --json
expect "status shows the default sweep interval" 0 '"sweep_interval_ms":10000' $isng status --json
expect "detach lo" 0 "" $isng detach lo
expect_detached "after detach"

# The local path needs the kfunc (the kernel's own symbol table says whether
# it has it): there the attach works, elsewhere it is refused with the kfunc
# named and the translate path offered, and nothing is left attached.
if grep -q " $kfunc\$" /proc/kallsyms; then
	has_kfunc=true
	expect "local SYN proxy path: attached (the kernel has $kfunc)" 0 "" \
		$isng attach --xdp-mode skb --synproxy 80 --synproxy-path local lo
	expect "detach lo (local path)" 0 "" $isng detach lo
else
	has_kfunc=false
	expect "local SYN proxy path: refused, naming $kfunc" 1 "lacks $kfunc" \
		$isng attach --xdp-mode skb --synproxy 80 --synproxy-path local lo
	expect "local SYN proxy path: the translate path offered" 1 "synproxy-path translate" \
		$isng attach --xdp-mode skb --synproxy 80 --synproxy-path local lo
	expect_detached "after the refused local path"
fi

# Auto takes the local path where the kernel can and translates elsewhere: it always attaches.
expect "attach lo with the SYN proxy, auto path" 0 "" \
	$isng attach --xdp-mode skb --synproxy 80 lo
expect "synproxy shows its ports" 0 '"80"' $isng synproxy --json
expect "synproxy says whether the local path is there ($has_kfunc)" 0 \
	"\"local_path_available\":$has_kfunc" $isng synproxy --json
expect "detach lo (auto path)" 0 "" $isng detach lo
expect_detached "after the auto path"

# SYN cookies answered at tc ingress (--syn-hook tc): no XDP program at all.
expect "attach lo with SYN cookies at tc ingress (--syn-hook tc)" 0 '"syn_hook":"tc"' \
	$isng attach --ingress tc --syn-hook tc --synproxy 80 --json lo
expect "status says the SYN hook is tc" 0 '"syn_hook":"tc"' $isng status --json
expect "detach lo (--syn-hook tc)" 0 "" $isng detach lo
expect_detached "after --syn-hook tc"

# tc ingress without the SYN proxy: no program answers SYN cookies there.
expect "attach lo with tc ingress alone: no SYN hook" 0 '"syn_hook":"none"' \
	$isng attach --ingress tc --json lo
expect "status says no SYN hook" 0 '"syn_hook":"none"' $isng status --json
expect "detach lo (tc ingress alone)" 0 "" $isng detach lo
expect_detached "after tc ingress alone"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
