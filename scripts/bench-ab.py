#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The cost of a change on make bench's hot rows, measured interleaved.

Usage: scripts/bench-ab.py BUILD_A BUILD_B [PAIRS [SYN_PAIRS]]   (as root)

BUILD_A and BUILD_B are build directories of the two trees (each with
bench and bench_synproxy, which embed their own isnguard.bpf.o). Runs
alternate A B, B A, ... (PAIRS of build/bench's established-ACK rows,
SYN_PAIRS of bench_synproxy's SYN-ACK, cookie step and cookie ACK rows,
default 40 and 16), each on CPU 1 with --kernel-clock, so slow drift and other load fall on both
sides alike. Prints each row's median and quartiles per side, and the
median of the paired differences B - A with its quartiles: a change is
seen when that median stands clear of its quartiles' spread.
"""
import json
import re
import statistics as st
import subprocess
import sys

# bench_synproxy's table rows (label, then ns per packet), by label; the
# harness is in each, and falls out of the paired differences.
ROWS_SYN = (
    ("SYN-ACK, isnguard_xdp, IPv4, forwarding off", "xdp_synack_ipv4"),
    ("SYN-ACK, isnguard_xdp, IPv6, forwarding off", "xdp_synack_ipv6"),
    ("SYN-ACK, isnguard_xdp, IPv4, forwarding on", "xdp_synack_ipv4_fwd"),
    ("SYN-ACK, isnguard_xdp, IPv6, forwarding on", "xdp_synack_ipv6_fwd"),
    ("SYN-ACK, isnguard_tc_ingress --syn-hook tc, IPv4, forwarding off", "tc_synack_ipv4"),
    ("SYN-ACK, isnguard_tc_ingress --syn-hook tc, IPv6, forwarding off", "tc_synack_ipv6"),
    ("isnguard steps: + cookie MAC, IPv4, forwarding off", "step_cookie_ipv4"),
    ("isnguard steps: + cookie MAC, IPv6, forwarding off", "step_cookie_ipv6"),
    ("cookie ACK, valid (this slot), isnguard_tc_cookie, forwarding off", "tc_cookie_ack_valid"),
    ("empty XDP_TX, alone", "empty_xdp_tx"),
    ("established ACK, protected port, isnguard_tc_cookie", "tc_cookie_established_ack"),
    ("established ACK, protected port, isnguard_tc_ingress", "tc_ingress_established_ack"),
    ("established ACK, protected port, isnguard_xdp (untracked)", "xdp_established_ack_no_flow"),
    ("cookie ACK, kernel check helper + listener lookup, forwarding off", "kernel_check_ack"),
    ("cookie ACK, bad MAC, isnguard_tc_cookie, forwarding off", "tc_cookie_ack_bad_mac"),
    ("cookie ACK, kernel check helper + listener lookup, forwarding on", "kernel_check_ack_fwd"),
    ("cookie ACK, valid (this slot), isnguard_tc_cookie, forwarding on", "tc_cookie_ack_valid_fwd"),
    ("cookie ACK, bad MAC, isnguard_tc_cookie, forwarding on", "tc_cookie_ack_bad_mac_fwd"),
    ("cookie ACK, valid (previous slot), isnguard_tc_cookie", "tc_cookie_ack_valid_prev"),
)


def run(cmd):
    return subprocess.run(["taskset", "-c", "1"] + cmd, capture_output=True, text=True,
                          check=True).stdout


def quartiles(xs):
    return st.quantiles(xs, n=4) if len(xs) >= 4 else [min(xs), st.median(xs), max(xs)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sides = {"A": sys.argv[1], "B": sys.argv[2]}
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    syn_pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    rows = {}

    def add(side, row, ns):
        rows.setdefault(row, {"A": [], "B": []})[side].append(ns)

    for i in range(pairs):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        for side in order:
            out = run([sides[side] + "/bench", "--only", "xdp_ack,tc_ingress_ack", "--repeat",
                       "1000000", "--rounds", "3", "--kernel-clock", "--json"])
            for r in json.loads(out)["datapath"]:
                if r["name"] in ("xdp_ack", "tc_ingress_ack", "empty_xdp", "empty_tc"):
                    add(side, r["name"], r["ns_per_run"])
        for side in order if i < syn_pairs else ():
            out = run([sides[side] + "/bench_synproxy", "--repeat", "200000", "--rounds", "3",
                       "--kernel-clock"])
            table = dict(m.groups() for m in
                         re.finditer(r"^(\S.*?)\s{2,}(-?[\d.]+)$", out, re.MULTILINE))
            for label, row in ROWS_SYN:
                if label not in table:
                    sys.exit(f"bench-ab: no row {label!r} in {sides[side]}/bench_synproxy's output")
                add(side, row, float(table[label]))
        print(f"pair {i + 1}/{pairs}", file=sys.stderr, flush=True)
    print(f"A = {sides['A']}, B = {sides['B']}; ns per run (kernel clock), CPU 1")
    for row, v in rows.items():
        a, b = v["A"], v["B"]
        n = min(len(a), len(b))
        diff = [b[i] - a[i] for i in range(n)]
        qa, qb, qd = quartiles(a), quartiles(b), quartiles(diff)
        print(f"{row:27s} n={n:2d}  A {st.median(a):7.1f} ({qa[0]:.1f}..{qa[2]:.1f})"
              f"  B {st.median(b):7.1f} ({qb[0]:.1f}..{qb[2]:.1f})"
              f"  B-A {st.median(diff):+6.1f} ({qd[0]:+.1f}..{qd[2]:+.1f})")


if __name__ == "__main__":
    main()
