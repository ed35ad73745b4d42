// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection-rate bench's floor for ISN rewriting (scripts/bench-conn.sh,
 * row "least"; attached by tests/least_rewrite.c): the least a rewriter on
 * the host must do for every connection and segment, so that isnguard's
 * rewrite row is read beside what any implementation would cost on the same
 * machine in the same rounds (issue 18).
 *
 *   tc egress: a SYN or SYN-ACK of the host gets the keyed ISN of RFC 6528
 *     (SipHash-2-4 of the tuple, as bpf/isn.h, plus the 4 us clock) in
 *     place of the host's, and its flow's delta goes into an LRU hash (a
 *     retransmission with the same host ISN keeps it); every other segment
 *     of a known flow gets seq += delta.
 *   XDP ingress: every ACK of a known flow gets ack -= delta; or the same
 *     at tc ingress (least_ingress_tc), with no XDP program on the device.
 *
 * That is all: IPv4 without IP options, no SACK blocks (this bench's
 * traffic has no loss), no RST checks, no expiry beyond the LRU's, no
 * counters, no TCP-MD5 or TCP-AO guard. A floor to measure against, not
 * a translator to run.
 *
 * Size (bpftool prog show, clang 14, kernel 6.18): least_egress 427
 * instructions (446 processed by the verifier), least_ingress 74 (76),
 * least_ingress_tc 66 (74).
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "csum.h"
#include "siphash.h"

#define ETH_P_IP 0x0800
/* As bpf/ctx.h: UNSPEC passes and lets filters after this one run. */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT 2
#define L4_OFF (14 + 20)
#define SEQ_OFF (L4_OFF + 4)
#define ACK_OFF (L4_OFF + 8)
#define CSUM_OFF (L4_OFF + 16)

struct least_key {
	__be32 local;
	__be32 remote;
	__be16 local_port;
	__be16 remote_port;
};

struct least_flow {
	__u32 delta;
	__u32 host_isn;
};

/* As many entries as isnguard's flow table at its default --max-flows: none evicted in a run. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ISN_DEFAULT_MAX_FLOWS);
	__type(key, struct least_key);
	__type(value, struct least_flow);
} least_flows SEC(".maps");

/* The secret, written by the loader (getrandom) before load; non-zero here to sit in .data. */
struct isn_key least_secret = { .bytes = { 1 } };

/* The TCP header of a plain IPv4 TCP frame, or NULL. */
static __always_inline struct tcphdr *least_tcp(void *data, void *end, struct iphdr **iph)
{
	struct ethhdr *eth = data;

	*iph = data + 14;
	if (data + L4_OFF + sizeof(struct tcphdr) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    *(__u8 *)*iph != 0x45 || (*iph)->protocol != IPPROTO_TCP)
		return NULL;
	return data + L4_OFF;
}

/* The 32-bit field at off goes from old to new, the TCP checksum with it as ip_summed needs. */
static __always_inline int least_skb_write(struct __sk_buff *skb, __u32 off, __be32 old,
					   __be32 new)
{
	if (bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0) ||
	    bpf_l4_csum_replace(skb, CSUM_OFF, old, new, sizeof(new)))
		return TC_ACT_SHOT;
	return TC_ACT_UNSPEC;
}

SEC("tc")
int least_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct least_flow *flow, fresh;
	struct least_key key;
	struct iphdr *iph;
	struct tcphdr *th = least_tcp(data, end, &iph);
	__u64 msg[2] = {};
	__be32 old;
	__u32 delta;

	if (!th)
		return TC_ACT_UNSPEC;
	key.local = iph->saddr;
	key.remote = iph->daddr;
	key.local_port = th->source;
	key.remote_port = th->dest;
	old = th->seq;
	flow = bpf_map_lookup_elem(&least_flows, &key);
	if (th->syn && (!flow || flow->host_isn != bpf_ntohl(old))) {
		/* local address || local port || remote address || remote port (bpf/tuple.h) */
		__builtin_memcpy((__u8 *)msg, &key.local, 4);
		__builtin_memcpy((__u8 *)msg + 4, &key.local_port, 2);
		__builtin_memcpy((__u8 *)msg + 6, &key.remote, 4);
		__builtin_memcpy((__u8 *)msg + 10, &key.remote_port, 2);
		fresh.host_isn = bpf_ntohl(old);
		fresh.delta = (__u32)(bpf_ktime_get_ns() / ISN_TICK_NS) +
			      (__u32)siphash_2_4(&least_secret, (const __u8 *)msg, ISN_TUPLE4_LEN) -
			      fresh.host_isn;
		if (bpf_map_update_elem(&least_flows, &key, &fresh, BPF_ANY))
			return TC_ACT_SHOT;	/* never leak the host's ISN */
		delta = fresh.delta;
	} else if (flow) {
		delta = flow->delta;
	} else {
		return TC_ACT_UNSPEC;
	}
	return least_skb_write(skb, SEQ_OFF, old, bpf_htonl(bpf_ntohl(old) + delta));
}

/* The flow of a peer's ACK (th), or NULL: not an ACK of a plain IPv4 TCP frame, or no flow. */
static __always_inline struct least_flow *least_peer_flow(void *data, void *end, struct tcphdr **th)
{
	struct least_key key;
	struct iphdr *iph;

	*th = least_tcp(data, end, &iph);
	if (!*th || !(*th)->ack)
		return NULL;
	key.local = iph->daddr;
	key.remote = iph->saddr;
	key.local_port = (*th)->dest;
	key.remote_port = (*th)->source;
	return bpf_map_lookup_elem(&least_flows, &key);
}

SEC("xdp")
int least_ingress(struct xdp_md *ctx)
{
	struct tcphdr *th;
	struct least_flow *flow = least_peer_flow((void *)(long)ctx->data,
						  (void *)(long)ctx->data_end, &th);
	__be32 old, new;

	if (!flow)
		return XDP_PASS;
	old = th->ack_seq;
	new = bpf_htonl(bpf_ntohl(old) - flow->delta);
	th->ack_seq = new;
	csum_apply_diff(&th->check, csum_diff4(old, new, false));
	return XDP_PASS;
}

/*
 * The same at tc ingress, for the rewriter with no XDP program on the
 * device (row "least_tc", beside isnguard's --ingress tc): the skb's
 * helpers write the ack and fix the checksum as the skb's ip_summed needs.
 */
SEC("tc")
int least_ingress_tc(struct __sk_buff *skb)
{
	struct tcphdr *th;
	struct least_flow *flow = least_peer_flow((void *)(long)skb->data,
						  (void *)(long)skb->data_end, &th);
	__be32 old;

	if (!flow)
		return TC_ACT_UNSPEC;
	old = th->ack_seq;
	return least_skb_write(skb, ACK_OFF, old, bpf_htonl(bpf_ntohl(old) - flow->delta));
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
