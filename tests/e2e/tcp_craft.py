#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Hand-made TCP segments for end-to-end cases no real stack produces on demand.

Usage: tcp_craft.py MODE --src ADDR --dst ADDR --dport PORT --sport PORT

Plays the peer of a listening host (IPv4, raw socket; the caller keeps the
local stack from answering, e.g. by dropping its RSTs): sends a SYN, answers
the SYN-ACK with an unacceptable ACK (the host replies with a bare RST and
keeps the handshake, RFC 9293 section 3.10.7.4), waits for the retransmitted
SYN-ACK, then completes the handshake by acknowledging the FIRST SYN-ACK and
sends 5 data bytes. Prints one "name value" line per observation:
  synack1 SEQ / rst FLAGS SEQ / synack2 SEQ / data_acked yes|no

data-on-third-ack: sends a SYN, and on the SYN-ACK completes the handshake
with an ACK that carries 11 bytes of data ("third-ack!\n"), as TCP allows and
a SYN cookie's ACK must survive. Prints: synack SEQ / data_acked yes|no.

ack-then-data: --count handshakes, from source ports --sport, --sport + 1, ...:
each completes with a bare ACK followed at once by 11 bytes of data (so both
can reach the host in one receive batch), and waits 0.5 s for the data's ACK.
Prints: data_acked COUNT (and not_acked PORT for each miss).
ack-and-data-on-two-cpus: like ack-then-data, but the bare ACK is sent from
one CPU and the data from another (the first two this process may use: the
sender's CPU is where a veth without XDP queues what it receives), and it
waits 1 s for the data's ACK or a RST.
Prints: data_acked COUNT / reset COUNT (and not_acked PORT for each miss).
With --retransmit N it sends the same segment again, up to N times, every
0.5 s until the data is acknowledged, as a client's RTO would (a SYN proxy
that opens the server side itself drops the data of the third ACK); it then
also prints: data_sends COUNT.
"""
import argparse
import os
import socket
import struct
import sys
import time

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def segment(src, dst, sport, dport, seq, ack, flags, payload=b"", opts=b""):
    off = (20 + len(opts)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, 64240, 0, 0) + opts
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack(
        "!BBH", 0, socket.IPPROTO_TCP, len(hdr) + len(payload))
    c = csum(pseudo + hdr + payload)
    return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload


def receive(sock, src, sport, dport, want, timeout):
    """The next segment from src:sport to dport whose flags satisfy want, or None."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            pkt = sock.recv(65535)
        except socket.timeout:
            return None
        ihl = (pkt[0] & 0x0F) * 4
        if socket.inet_ntoa(pkt[12:16]) != src:
            continue
        sp, dp, seq, ack, _, flags = struct.unpack("!HHIIBB", pkt[ihl:ihl + 14])
        if sp == sport and dp == dport and want(flags):
            return seq, ack, flags


def raw_sender(a):
    """A raw IPv4 TCP socket, and send(seq, ack, flags, data, opts) from a.sport to a.dport."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)

    def send(seq, ack, flags, data=b"", opts=b""):
        sock.sendto(segment(a.src, a.dst, a.sport, a.dport, seq, ack, flags, data, opts),
                    (a.dst, 0))
    return sock, send


def bad_ack_in_syn_recv(a):
    sock, send = raw_sender(a)
    isn = 0x10000000
    mss = b"\x02\x04\x05\xb4"

    send(isn, 0, SYN, opts=mss)
    got = receive(sock, a.dst, a.dport, a.sport, lambda f: f & (SYN | ACK) == SYN | ACK, 3)
    if not got:
        print("synack1 none")
        return 1
    first = got[0]
    print("synack1", first)
    # Acknowledges far past the host's SYN: unacceptable in SYN-RECV.
    send(isn + 1, (first + 1 + 0x01000000) & 0xFFFFFFFF, ACK)
    got = receive(sock, a.dst, a.dport, a.sport, lambda f: f & RST, 2)
    print("rst", "none" if not got else "0x%02x %d" % (got[2], got[0]))
    got = receive(sock, a.dst, a.dport, a.sport, lambda f: f & (SYN | ACK) == SYN | ACK, 6)
    print("synack2", got[0] if got else "none")
    # Completes the handshake the first SYN-ACK began, then sends data.
    send(isn + 1, (first + 1) & 0xFFFFFFFF, ACK)
    send(isn + 1, (first + 1) & 0xFFFFFFFF, PSH | ACK, b"hello")
    got = receive(sock, a.dst, a.dport, a.sport,
                  lambda f: f & (ACK | RST) == ACK and not f & SYN, 3)
    print("data_acked", "yes" if got and got[1] == isn + 1 + 5 else "no")
    return 0


def data_on_third_ack(a):
    sock, send = raw_sender(a)
    isn = 0x20000000
    payload = b"third-ack!\n"

    send(isn, 0, SYN, opts=b"\x02\x04\x05\xb4")
    got = receive(sock, a.dst, a.dport, a.sport, lambda f: f & (SYN | ACK) == SYN | ACK, 3)
    if not got:
        print("synack none")
        return 1
    print("synack", got[0])
    ack = (got[0] + 1) & 0xFFFFFFFF
    if not a.retransmit:
        send(isn + 1, ack, PSH | ACK, payload)
        got = receive(sock, a.dst, a.dport, a.sport,
                      lambda f: f & (ACK | RST) == ACK and not f & SYN, 3)
        print("data_acked", "yes" if got and got[1] == isn + 1 + len(payload) else "no")
        return 0
    acked = False
    for sends in range(1, a.retransmit + 2):
        send(isn + 1, ack, PSH | ACK, payload)
        end = time.monotonic() + 0.5
        while not acked and time.monotonic() < end:
            got = receive(sock, a.dst, a.dport, a.sport,
                          lambda f: f & (ACK | RST) == ACK and not f & SYN,
                          end - time.monotonic())
            acked = bool(got) and got[1] == isn + 1 + len(payload)
        if acked:
            break
    print("data_acked", "yes" if acked else "no")
    print("data_sends", sends)
    return 0


def syn_for_synack(a, sock, send, i, isn):
    """The i-th handshake's SYN (from port sport + i, ISN isn): the ack for its SYN-ACK, or None."""
    a.sport = a.sport_base + i
    send(isn, 0, SYN, opts=b"\x02\x04\x05\xb4")
    got = receive(sock, a.dst, a.dport, a.sport, lambda f: f & (SYN | ACK) == SYN | ACK, 3)
    if not got:
        print("synack none", a.sport)
        return None
    return (got[0] + 1) & 0xFFFFFFFF


def ack_then_data(a):
    """--count handshakes from ports sport.., each ACK and first data sent back to back."""
    sock, send = raw_sender(a)
    payload = b"first-data\n"
    acked = 0
    for i in range(a.count):
        isn = 0x30000000 + i * 0x1000
        ack = syn_for_synack(a, sock, send, i, isn)
        if ack is None:
            continue
        send(isn + 1, ack, ACK)
        send(isn + 1, ack, PSH | ACK, payload)
        got = receive(sock, a.dst, a.dport, a.sport,
                      lambda f: f & (ACK | RST) == ACK and not f & SYN, 0.5)
        if got and got[1] == isn + 1 + len(payload):
            acked += 1
        else:
            print("not_acked", a.sport)
    print("data_acked", acked)
    return 0


def ack_and_data_on_two_cpus(a):
    """--count handshakes, each ACK sent from one CPU and its first data from another."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("needs two CPUs, has", cpus)
        return 1
    sock, send = raw_sender(a)
    payload = b"first-data\n"
    acked = reset = 0
    for i in range(a.count):
        isn = 0x40000000 + i * 0x1000
        os.sched_setaffinity(0, {cpus[0]})
        ack = syn_for_synack(a, sock, send, i, isn)
        if ack is None:
            continue
        send(isn + 1, ack, ACK)
        os.sched_setaffinity(0, {cpus[1]})
        send(isn + 1, ack, PSH | ACK, payload)
        got = receive(sock, a.dst, a.dport, a.sport,
                      lambda f: f & RST or (f & ACK and not f & SYN), 1)
        if got and got[2] & RST:
            reset += 1
            print("not_acked", a.sport, "reset")
        elif got and got[1] == isn + 1 + len(payload):
            acked += 1
        else:
            print("not_acked", a.sport)
    print("data_acked", acked)
    print("reset", reset)
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["bad-ack-in-syn-recv", "data-on-third-ack",
                                    "ack-then-data", "ack-and-data-on-two-cpus"])
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sport", type=int, required=True)
    p.add_argument("--dport", type=int, required=True)
    p.add_argument("--retransmit", type=int, default=0)
    p.add_argument("--count", type=int, default=1)
    a = p.parse_args()
    a.sport_base = a.sport
    if a.mode == "ack-then-data":
        return ack_then_data(a)
    if a.mode == "ack-and-data-on-two-cpus":
        return ack_and_data_on_two_cpus(a)
    if a.mode == "data-on-third-ack":
        return data_on_third_ack(a)
    return bad_ack_in_syn_recv(a)


if __name__ == "__main__":
    sys.exit(main())
