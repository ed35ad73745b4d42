// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard datapath. Egress (tc): the host's SYN/SYN-ACK gets the keyed
 * RFC 6528 ISN, later segments seq += delta. Ingress (XDP, or tc where XDP
 * is not wanted): ack, SACK edges and ICMP-quoted seq -= delta. Each program
 * parses, looks up, decides, rewrites, and ends in one counter.
 *
 * Size after verification (bpftool prog show, xlated / 8): isnguard_xdp
 * 3034 instructions, isnguard_tc_ingress 3610, isnguard_tc_egress 5684; the
 * TCP option walk is a bpf_loop callback, verified once.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "compiler.h"
#include "egress.h"
#include "ingress.h"

SEC("xdp")
int isnguard_xdp(struct xdp_md *xdp)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	int stat = datapath_ingress(&c);

	stat_inc(stat);
	return stat == STAT_DROP_ERROR ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int isnguard_tc_ingress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	int stat = datapath_ingress(&c);

	stat_inc(stat);
	return stat == STAT_DROP_ERROR ? TC_ACT_SHOT : TC_ACT_UNSPEC;
}

SEC("tc")
int isnguard_tc_egress(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	int stat = datapath_egress(&c);

	stat_inc(stat);
	return stat == STAT_DROP_ERROR ? TC_ACT_SHOT : TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
