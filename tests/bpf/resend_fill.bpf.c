// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Many translate-path flows whose server is silent, for the resend tick's
 * tests and bench (tests/test_synproxy.c, tests/bench_resend.c), made as
 * proxy_open and resend_track make them: an isn_flows entry waiting for
 * the server's SYN-ACK (FLOW_F_PROXY_OPEN, host_ack one past the SYN's
 * seq), counted in isn_flow_count, and its resend record, the SYN's TCP
 * header, first sent fill.age_ns ago from interface 1, with its slot of the
 * first resend's queue (bpf/resend.h). One run makes
 * fill.count of them from flow fill.first on (tests/resend_fill.h). Loaded
 * beside the datapath with its maps shared.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "compiler.h"
#include "flow.h"
#include "resend.h"
#include "../resend_fill.h"

struct resend_fill_args fill;

static long fill_one(__u32 i, void *ctx __maybe_unused)
{
	__u32 n = fill.first + i, zero = 0;
	/* words, as flow_key_fill takes an IP header's addresses */
	union {
		__u8 bytes[4];
		__be32 word;
	} local = { RESEND_FILL_LOCAL_ADDR }, remote = { RESEND_FILL_REMOTE_ADDR(n) };
	struct flow_state *st = flow_new_get();
	struct resend_new *rn = bpf_map_lookup_elem(&isn_resend_new, &zero);
	__u64 now = bpf_ktime_get_coarse_ns();
	struct resend_queues *q;
	__u8 *tcp;

	if (!st || !rn)
		return 1;
	flow_key_fill(&rn->key, FLOW_FAMILY_IPV4, &local.word, &remote.word,
		      bpf_htons(RESEND_FILL_LOCAL_PORT), bpf_htons(RESEND_FILL_REMOTE_PORT));
	st->flags = FLOW_F_PROXIED | FLOW_F_PASSIVE_OPEN | FLOW_F_PROXY_OPEN | FLOW_F_PROXY_SILENT;
	st->host_ack = RESEND_FILL_ISN + 1;
	st->created_ns = now;
	st->last_seen_ns = now;
	__builtin_memset(&rn->r, 0, sizeof(rn->r));
	tcp = (__u8 *)rn->r.tcp;
	*(__be16 *)tcp = bpf_htons(RESEND_FILL_REMOTE_PORT);
	*(__be16 *)(tcp + 2) = bpf_htons(RESEND_FILL_LOCAL_PORT);
	rn->r.tcp[1] = bpf_htonl(RESEND_FILL_ISN);
	tcp[12] = 5 << 4;
	tcp[13] = 0x02;		/* SYN */
	*(__be16 *)(tcp + 14) = bpf_htons(64240);
	rn->r.tcp_len = 20;
	rn->r.first_ns = now - fill.age_ns;
	rn->r.netns_ino = netns_ino;
	rn->r.ifindex = 1;
	if (bpf_map_update_elem(&isn_flows, &rn->key, st, BPF_NOEXIST))
		return 0;
	flow_count_add(1);
	fill.made++;
	q = resend_queues_get(&rn->queues);
	if (!q || resend_slot_take(q, 0, &rn->key, resend_due_at(rn->r.first_ns, 0), &rn->slot,
				   &rn->r.queue_pos) ||
	    bpf_map_update_elem(&isn_syn_resend, &rn->key, &rn->r, BPF_NOEXIST))
		fill.untracked++;
	return 0;
}

SEC("tc")
int resend_fill(struct __sk_buff *skb __maybe_unused)
{
	bpf_loop(fill.count, fill_one, NULL, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
