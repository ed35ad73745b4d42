#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The cost of a change on make bench's hot rows, measured interleaved.

Usage: scripts/bench-ab.py BUILD_A BUILD_B [PAIRS [SYN_PAIRS]]   (as root)

BUILD_A and BUILD_B are build directories of the two trees (each with
bench and bench_synproxy, which embed their own isnguard.bpf.o). Runs
alternate A B, B A, ... (PAIRS of build/bench's established-ACK rows,
SYN_PAIRS of bench_synproxy's cookie SYN-ACK rows, default 40 and 16), each
on CPU 1 with --kernel-clock, so slow drift and other load fall on both
sides alike. Prints each row's median and quartiles per side, and the
median of the paired differences B - A with its quartiles: a change is
seen when that median stands clear of its quartiles' spread.
"""
import json
import re
import statistics as st
import subprocess
import sys

ROWS_SYN = (
    (r"isnguard SYN-ACK \(IPv4\)\s+([\d.]+)", "xdp_cookie_synack_ipv4"),
    (r"isnguard SYN-ACK at tc \(IPv4\)\s+([\d.]+)", "tc_cookie_synack_ipv4"),
    (r"empty XDP_TX\s+([\d.]+)", "empty_xdp_tx"),
    (r"protected port, tc beside XDP\s+([\d.]+)", "tc_cookie_established_ack"),
    (r"protected port, --ingress tc\s+([\d.]+)", "tc_ingress_established_ack"),
    (r"protected port, XDP \(no flow\)\s+([\d.]+)", "xdp_established_ack_no_flow"),
    (r"forwarding off, over an empty tc program:\n.*helper \+ lookup\s+([\d.]+)",
     "kernel_check_ack_fwd_off"),
    (r"forwarding off, over an empty tc program:\n.*\n\s+isnguard, valid\s+([\d.]+)",
     "tc_cookie_ack_valid_fwd_off"),
    (r"forwarding off, over an empty tc program:\n.*\n.*\n\s+isnguard, bad MAC\s+([\d.]+)",
     "tc_cookie_ack_bad_mac_fwd_off"),
    (r"forwarding on, over an empty tc program:\n.*helper \+ lookup\s+([\d.]+)",
     "kernel_check_ack_fwd_on"),
    (r"forwarding on, over an empty tc program:\n.*\n\s+isnguard, valid\s+([\d.]+)",
     "tc_cookie_ack_valid_fwd_on"),
    (r"forwarding on, over an empty tc program:\n.*\n.*\n\s+isnguard, bad MAC\s+([\d.]+)",
     "tc_cookie_ack_bad_mac_fwd_on"),
    (r"valid, made the slot before \(forwarding off\)\s+([\d.]+)", "tc_cookie_ack_valid_prev"),
    (r"IPv4 isnguard SYN-ACK \(XDP\)\s+([\d.]+)", "xdp_synack_ipv4_fwd_off"),
    (r"IPv4 isnguard SYN-ACK at tc \(--syn-hook tc\)\s+([\d.]+)", "tc_synack_ipv4_fwd_off"),
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
            for pattern, row in ROWS_SYN:
                m = re.search(pattern, out)
                if m:
                    add(side, row, float(m.group(1)))
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
