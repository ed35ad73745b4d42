// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark programs for the SYN proxy (tests/bench_synproxy.c).
 *
 * A `repeat N` test run hands every run the same buffer, so from the second
 * run on a SYN-answering program would see its own SYN-ACK. bench_restore4/6
 * write the SYN back (tail grown or cut to its length), then tail-call the
 * program under test from bench_target; their own cost is measured by
 * tail-calling bench_empty_tx and subtracted.
 *
 * bench_kernel_synack4 is the baseline: the same SYN-ACK built with the
 * kernel's own cookie, bpf_tcp_raw_gen_syncookie_ipv4, with full checksums,
 * the client's TSval echoed and a listener lookup first, as the kernel
 * selftests' xdp_synproxy does. It handles exactly Linux's 40-byte SYN.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "compiler.h"

#define SYN4_LEN (14 + 20 + 40)
#define SYN6_LEN (14 + 40 + 40)
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_target SEC(".maps");

__u8 syn4[SYN4_LEN];
__u8 syn6[SYN6_LEN];

static __always_inline int restore_and_call(struct xdp_md *ctx, const __u8 *frame, int len)
{
	int delta = len - (int)((long)ctx->data_end - (long)ctx->data);

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, (void *)frame, len))
		return XDP_ABORTED;
	bpf_tail_call(ctx, &bench_target, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int bench_restore4(struct xdp_md *ctx)
{
	return restore_and_call(ctx, syn4, SYN4_LEN);
}

SEC("xdp")
int bench_restore6(struct xdp_md *ctx)
{
	return restore_and_call(ctx, syn6, SYN6_LEN);
}

/*
 * bench_restore4 with the SYN from a new source each run (11.0.0.1 on, a
 * 24-bit counter), both checksums updated for it: every SYN is the first
 * of its source, as in a flood from random spoofed addresses.
 */
__u32 src_counter;

static __always_inline __u16 csum_replace4(__u16 check, __be32 from, __be32 to)
{
	__s64 sum = bpf_csum_diff(&from, 4, &to, 4, (__u16)~check);
	__u32 s = (__u32)sum;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

SEC("xdp")
int bench_restore4_newsrc(struct xdp_md *ctx)
{
	int delta = SYN4_LEN - (int)((long)ctx->data_end - (long)ctx->data);
	void *data, *end;
	struct iphdr *iph;
	struct tcphdr *th;
	__be32 from, to;

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, syn4, SYN4_LEN))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + SYN4_LEN > end)
		return XDP_ABORTED;
	iph = data + 14;
	th = data + 34;
	from = iph->saddr;
	to = bpf_htonl(0x0b000000 | (++src_counter & 0xffffff));
	iph->saddr = to;
	iph->check = csum_replace4(iph->check, from, to);
	th->check = csum_replace4(th->check, from, to);
	bpf_tail_call(ctx, &bench_target, 0);
	return XDP_ABORTED;
}

/*
 * The same at tc, for isnguard_tc_ingress answering SYNs (`--syn-hook tc`):
 * BPF_PROG_TEST_RUN reuses one skb for every run, so each run restores
 * the SYN the last one turned into a SYN-ACK. Tail calls stay within a
 * program type: tc's own array.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_target_tc SEC(".maps");

static __always_inline int restore_and_call_tc(struct __sk_buff *skb, const __u8 *frame, int len)
{
	if (skb->len != (__u32)len && bpf_skb_change_tail(skb, len, 0))
		return 2;	/* TC_ACT_SHOT */
	if (bpf_skb_store_bytes(skb, 0, frame, len, 0))
		return 2;
	bpf_tail_call(skb, &bench_target_tc, 0);
	return 2;
}

SEC("tc")
int bench_restore4_tc(struct __sk_buff *skb)
{
	return restore_and_call_tc(skb, syn4, SYN4_LEN);
}

SEC("tc")
int bench_restore6_tc(struct __sk_buff *skb)
{
	return restore_and_call_tc(skb, syn6, SYN6_LEN);
}

SEC("xdp")
int bench_empty_tx(struct xdp_md *ctx __maybe_unused)
{
	return XDP_TX;
}

static __always_inline __u16 fold(__s64 sum)
{
	__u32 s = (__u32)sum;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

static __always_inline int kernel_synack4(struct xdp_md *ctx, bool lookup)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = data + 14;
	struct tcphdr *th = data + 34;
	struct bpf_sock_tuple tuple = {};
	__be32 *opt = data + 54, addr;
	__u32 words[10], client_isn, tsval;
	struct bpf_sock *sk;
	__u8 mac[6];
	__s64 value, sum;
	__be16 port;
	int state;

	if (data + SYN4_LEN > end || eth->h_proto != bpf_htons(ETH_P_IP) || iph->ihl != 5 ||
	    th->doff != 10)
		return XDP_PASS;
	if (lookup) {
		tuple.ipv4.saddr = iph->saddr;
		tuple.ipv4.daddr = iph->daddr;
		tuple.ipv4.sport = th->source;
		tuple.ipv4.dport = th->dest;
		sk = bpf_skc_lookup_tcp(ctx, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
		if (!sk)
			return XDP_PASS;
		state = sk->state;
		bpf_sk_release(sk);
		if (state != BPF_TCP_LISTEN)
			return XDP_PASS;
	}

	value = bpf_tcp_raw_gen_syncookie_ipv4(iph, th, 40);
	if (value < 0)
		return XDP_PASS;
	client_isn = bpf_ntohl(th->seq);
	tsval = bpf_ntohl(opt[2]);	/* Linux's layout: MSS, SACK-permitted + TS, NOP WS */

	__builtin_memcpy(mac, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, mac, 6);
	addr = iph->saddr;
	iph->saddr = iph->daddr;
	iph->daddr = addr;
	iph->ttl = 64;
	iph->id = 0;
	iph->check = 0;
	iph->check = fold(bpf_csum_diff(NULL, 0, (__be32 *)iph, 20, 0));

	port = th->source;
	th->source = th->dest;
	th->dest = port;
	th->seq = bpf_htonl((__u32)value);
	th->ack_seq = bpf_htonl(client_isn + 1);
	((__u8 *)th)[13] = 0x12;	/* SYN, ACK */
	th->window = bpf_htons(65535);
	th->check = 0;
	opt[0] = bpf_htonl(0x02040000 | (__u32)(value >> 32));
	opt[1] = bpf_htonl(0x0402080a);
	opt[2] = bpf_htonl((__u32)(bpf_ktime_get_ns() / 1000000));
	opt[3] = bpf_htonl(tsval);
	opt[4] = bpf_htonl(0x01030307);
	__builtin_memcpy(words, th, 40);
	sum = bpf_csum_diff(NULL, 0, &iph->saddr, 8,
			    (__u32)bpf_htons(IPPROTO_TCP) + (__u32)bpf_htons(40));
	sum = bpf_csum_diff(NULL, 0, (__be32 *)words, 40, (__u32)sum);
	th->check = fold(sum);
	return XDP_TX;
}

SEC("xdp")
int bench_kernel_synack4(struct xdp_md *ctx)
{
	return kernel_synack4(ctx, true);
}

/* The same without the listener lookup: the SYN-ACK and the kernel's cookie alone. */
SEC("xdp")
int bench_kernel_synack4_nolookup(struct xdp_md *ctx)
{
	return kernel_synack4(ctx, false);
}

/*
 * The IPv6 baseline: the same SYN-ACK with bpf_tcp_raw_gen_syncookie_ipv6
 * after the same listener lookup, for Linux's 40-byte SYN over IPv6.
 */
static __always_inline int kernel_synack6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + 14;
	struct tcphdr *th = data + 54;
	struct bpf_sock_tuple tuple = {};
	__be32 *opt = data + 74;
	struct in6_addr addr;
	__u32 words[10], client_isn, tsval;
	struct bpf_sock *sk;
	__u8 mac[6];
	__s64 value, sum;
	__be16 port;
	int state;

	if (data + SYN6_LEN > end || eth->h_proto != bpf_htons(ETH_P_IPV6) ||
	    ip6->nexthdr != IPPROTO_TCP || th->doff != 10)
		return XDP_PASS;
	__builtin_memcpy(tuple.ipv6.saddr, &ip6->saddr, 16);
	__builtin_memcpy(tuple.ipv6.daddr, &ip6->daddr, 16);
	tuple.ipv6.sport = th->source;
	tuple.ipv6.dport = th->dest;
	sk = bpf_skc_lookup_tcp(ctx, &tuple, sizeof(tuple.ipv6), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return XDP_PASS;
	state = sk->state;
	bpf_sk_release(sk);
	if (state != BPF_TCP_LISTEN)
		return XDP_PASS;

	value = bpf_tcp_raw_gen_syncookie_ipv6(ip6, th, 40);
	if (value < 0)
		return XDP_PASS;
	client_isn = bpf_ntohl(th->seq);
	tsval = bpf_ntohl(opt[2]);

	__builtin_memcpy(mac, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, mac, 6);
	addr = ip6->saddr;
	ip6->saddr = ip6->daddr;
	ip6->daddr = addr;
	ip6->hop_limit = 64;

	port = th->source;
	th->source = th->dest;
	th->dest = port;
	th->seq = bpf_htonl((__u32)value);
	th->ack_seq = bpf_htonl(client_isn + 1);
	((__u8 *)th)[13] = 0x12;	/* SYN, ACK */
	th->window = bpf_htons(65535);
	th->check = 0;
	opt[0] = bpf_htonl(0x02040000 | (__u32)(value >> 32));
	opt[1] = bpf_htonl(0x0402080a);
	opt[2] = bpf_htonl((__u32)(bpf_ktime_get_ns() / 1000000));
	opt[3] = bpf_htonl(tsval);
	opt[4] = bpf_htonl(0x01030307);
	__builtin_memcpy(words, th, 40);
	sum = bpf_csum_diff(NULL, 0, (__be32 *)&ip6->saddr, 32,
			    bpf_htonl(40) + bpf_htonl(IPPROTO_TCP));
	sum = bpf_csum_diff(NULL, 0, (__be32 *)words, 40, (__u32)sum);
	th->check = fold(sum);
	return XDP_TX;
}

SEC("xdp")
int bench_kernel_synack6(struct xdp_md *ctx)
{
	return kernel_synack6(ctx);
}

/*
 * The floor of any XDP responder: parse Ethernet, IPv4 or IPv6 and TCP,
 * swap the MACs, the addresses and the ports, XDP_TX. The checksums hold
 * (the sums' terms only change places).
 */
SEC("xdp")
int bench_reflect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct tcphdr *th;
	__u8 mac[6];
	__be16 port;

	if (data + 14 > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + 14;
		__be32 addr;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
			return XDP_PASS;
		th = (void *)ip + ip->ihl * 4;
		if ((void *)(th + 1) > end)
			return XDP_PASS;
		addr = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = addr;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + 14;
		struct in6_addr addr;

		th = (void *)(ip6 + 1);
		if ((void *)(th + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return XDP_PASS;
		addr = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = addr;
	} else {
		return XDP_PASS;
	}
	__builtin_memcpy(mac, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, mac, 6);
	port = th->source;
	th->source = th->dest;
	th->dest = port;
	return XDP_TX;
}

/*
 * The steps isnguard's SYN answer pays for in helpers, each alone on the
 * SYN (which they leave as it is): the listener lookup, and the route
 * decision's bpf_fib_lookup as bpf/route.h makes it.
 */
SEC("xdp")
int bench_listener_lookup(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bpf_sock_tuple tuple = {};
	struct ethhdr *eth = data;
	struct bpf_sock *sk;
	struct tcphdr *th;
	__u32 size;

	if (data + SYN4_LEN > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + 14;

		th = data + 34;
		tuple.ipv4.saddr = ip->saddr;
		tuple.ipv4.daddr = ip->daddr;
		tuple.ipv4.sport = th->source;
		tuple.ipv4.dport = th->dest;
		size = sizeof(tuple.ipv4);
	} else {
		struct ipv6hdr *ip6 = data + 14;

		th = data + 54;
		if ((void *)(th + 1) > end)
			return XDP_PASS;
		__builtin_memcpy(tuple.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6->daddr, 16);
		tuple.ipv6.sport = th->source;
		tuple.ipv6.dport = th->dest;
		size = sizeof(tuple.ipv6);
	}
	sk = bpf_skc_lookup_tcp(ctx, &tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return XDP_ABORTED;
	bpf_sk_release(sk);
	return XDP_TX;
}

SEC("xdp")
int bench_fib_lookup(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct tcphdr *th;

	if (data + SYN4_LEN > end)
		return XDP_PASS;
	fib.l4_protocol = IPPROTO_TCP;
	fib.ifindex = ctx->ingress_ifindex;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + 14;

		th = data + 34;
		fib.family = 2;
		fib.ipv4_src = ip->saddr;
		fib.ipv4_dst = ip->daddr;
	} else {
		struct ipv6hdr *ip6 = data + 14;

		th = data + 54;
		if ((void *)(th + 1) > end)
			return XDP_PASS;
		fib.family = 10;
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	}
	fib.sport = th->source;
	fib.dport = th->dest;
	bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	return XDP_TX;
}

/*
 * The kernel's cookie ACK check at tc, the baseline of isnguard_tc_cookie's:
 * the listener lookup, then bpf_tcp_raw_check_syncookie_ipv4 (IPv4 ACKs
 * with a 20-byte IP header, as the bench's are). The ACK's cookie is
 * isnguard's, so the kernel's check fails it, as isnguard's fails a bad MAC.
 */
SEC("tc")
int bench_kernel_check4(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct bpf_sock_tuple tuple = {};
	struct iphdr *ip = data + 14;
	struct tcphdr *th = data + 34;
	struct bpf_sock *sk;
	int state;

	if (data + 54 > end || ip->ihl != 5)
		return -1;
	tuple.ipv4.saddr = ip->saddr;
	tuple.ipv4.daddr = ip->daddr;
	tuple.ipv4.sport = th->source;
	tuple.ipv4.dport = th->dest;
	sk = bpf_skc_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 2;
	state = sk->state;
	bpf_sk_release(sk);
	if (state != BPF_TCP_LISTEN)
		return -1;
	return bpf_tcp_raw_check_syncookie_ipv4(ip, th) ? 2 : -1;
}

/* The least a tc filter can do: the baseline for an established segment's cost. */
SEC("tc")
int bench_empty_tc(struct __sk_buff *skb __maybe_unused)
{
	return -1;	/* TC_ACT_UNSPEC */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
