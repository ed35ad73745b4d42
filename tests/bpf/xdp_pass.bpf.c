// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test set-up only: a veth delivers what its peer sends with XDP_TX only when
 * it has an XDP program of its own, so the end-to-end tests put this one on
 * the client side of the SYN proxy's veth pair. Frags-aware, so jumbo MTUs work.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("xdp.frags")
int xdp_pass(struct xdp_md *ctx __attribute__((unused)))
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
