#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Test set-up: a point-to-point link of two tun devices (no link-layer
header, as WireGuard or ipip) in two network namespaces, joined by relaying
their IP packets. Usage: tun_relay.py NS_A TUN_A NS_B TUN_B (as root); it
prints "ready" once both are open and runs until killed."""
import ctypes
import fcntl
import os
import select
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def open_tun(netns, name):
    ns = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    if libc.setns(ns, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), f"setns {netns}")
    os.close(ns)
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    a = open_tun(sys.argv[1], sys.argv[2])
    b = open_tun(sys.argv[3], sys.argv[4])
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([a, b], [], [])
        for fd in ready:
            try:  # EIO while a device is still down: drop, as a wire would
                os.write(b if fd == a else a, os.read(fd, 65536))
            except OSError:
                pass


if __name__ == "__main__":
    main()
