// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The translate path's race between a client segment and the server's
 * SYN-ACK, made deterministic. isnguard_tc_ingress and isnguard_tc_cookie
 * look the flow up, find it opening, and hand the segment to
 * synproxy_opening with the entry as they saw it; meanwhile, on another
 * CPU, tc egress may take the server's SYN-ACK and open the flow. Here the
 * dispatcher's look is seen_state, which the test wrote before it ran the
 * SYN-ACK through the real tc egress: this program then goes on exactly as
 * the two programs do. Loaded beside build/isnguard.bpf.o with its maps
 * shared (dp_share_maps); the verdict is the counter the programs would
 * count, also counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "cookie_ack.h"
#include "synproxy.h"

/* The flow entry as the dispatching program saw it: still opening. */
struct flow_state seen_state;

SEC("tc")
int test_proxy_opening_seen(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct pkt pkt = {};
	int stat;

	stat = parse_packet(&c, &pkt, false);
	if (stat == PARSE_OK)
		stat = synproxy_opening(&c, &pkt, &seen_state);
	stat_inc(stat);
	return stat;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
