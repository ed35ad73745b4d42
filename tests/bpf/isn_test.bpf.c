// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test and benchmark programs for the keyed ISN functions of bpf/. Run
 * through BPF_PROG_TEST_RUN on a dummy frame; inputs and outputs travel in
 * global variables (the skeleton's .bss), so userspace sets a case, runs the
 * program and reads the result.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "compiler.h"
#include "csum.h"
#include "isn.h"

/* Inputs. */
struct isn_key in_key;
__u8 in_msg[MD5_MAX_BLOCKS * MD5_BLOCK_LEN] __attribute__((aligned(8)));
__u32 in_len;
struct flow_key in_flow;
__u32 in_hash;

/* Outputs. */
__u64 out_siphash;
__u32 out_md5[4];
__u32 out_f;
__u32 out_m;
__u32 out_isn;

/* XDP_PASS on success; XDP_ABORTED flags an input the function rejects. */
SEC("xdp")
int test_siphash(struct xdp_md *ctx __maybe_unused)
{
	if (in_len > SIPHASH_MAX_LEN)
		return XDP_ABORTED;
	out_siphash = siphash_2_4(&in_key, in_msg, in_len);
	return XDP_PASS;
}

/*
 * MD5 of in_len bytes: md5.h's padding (md5_padded_word) and compression
 * (md5_transform), driven here for a length known only at run time. The
 * datapath hashes constant lengths (md5_digest, where padding folds away;
 * test_isn and the differential tests check it). Inlined with a variable
 * length, md5_digest is more than kernel 6.1's verifier will follow (over
 * 1M instructions): the padded words come from a bpf_loop callback instead.
 */
__u32 md5_words[MD5_MAX_BLOCKS * 16];

static long md5_word_at(__u32 index, void *unused __maybe_unused)
{
	__u32 word = index & (MD5_MAX_BLOCKS * 16 - 1);

	md5_words[word] = md5_padded_word(in_msg, in_len, word * 4);
	return 0;
}

SEC("xdp")
int test_md5(struct xdp_md *ctx __maybe_unused)
{
	__u32 len = in_len, blocks = (len + 8) / MD5_BLOCK_LEN + 1, last, blk;

	if (len > MD5_MAX_LEN)
		return XDP_ABORTED;
	bpf_loop(blocks * 16, md5_word_at, NULL, 0);
	/* The bit length, little-endian, in the last block's last two words. */
	last = (blocks * 16 - 2) & (MD5_MAX_BLOCKS * 16 - 2);
	md5_words[last] = len << 3;
	md5_words[last + 1] = len >> 29;
	md5_init(out_md5);
	for (blk = 0; blk < MD5_MAX_BLOCKS; blk++)
		if (blk < blocks)
			md5_transform(out_md5, &md5_words[blk * 16]);
	return XDP_PASS;
}

SEC("xdp")
int test_isn(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();
	__u64 now = bpf_ktime_get_ns();

	if (!in)
		return XDP_ABORTED;
	out_f = isn_secret_f(&in_key, in_hash, &in_flow, in);
	out_m = isn_clock_ticks(now);
	out_isn = isn_compute(&in_key, in_hash, &in_flow, now, in);
	return XDP_PASS;
}

/*
 * Benchmarks: one F per run, so ns per run minus bench_empty's is the cost of
 * F. The mode is fixed per program so no branch on it is timed.
 */
SEC("xdp")
int bench_empty(struct xdp_md *ctx __maybe_unused)
{
	return XDP_PASS;
}

SEC("xdp")
int bench_ktime(struct xdp_md *ctx __maybe_unused)
{
	out_m = isn_clock_ticks(bpf_ktime_get_ns());
	return XDP_PASS;
}

SEC("xdp")
int bench_f_siphash(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();

	if (!in)
		return XDP_ABORTED;
	out_f = isn_f_siphash(&in_key, &in_flow, in);
	return XDP_PASS;
}

SEC("xdp")
int bench_f_md5(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();

	if (!in)
		return XDP_ABORTED;
	out_f = isn_f_md5(&in_key, &in_flow, in);
	return XDP_PASS;
}

SEC("xdp")
int bench_f_none(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();

	if (!in)
		return XDP_ABORTED;
	out_f = isn_secret_f(&in_key, ISN_HASH_NONE, &in_flow, in);
	return XDP_PASS;
}

SEC("xdp")
int bench_isn_siphash(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();

	if (!in)
		return XDP_ABORTED;
	out_isn = isn_compute(&in_key, ISN_HASH_SIPHASH, &in_flow, bpf_ktime_get_ns(), in);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Not used by a program: these put the shared enums into this object's BTF
 * for tests/test_abi.c (the datapath stores them in fixed-width fields).
 */
enum flow_family abi_family;
enum isn_stat abi_stat;
enum isn_hash abi_hash;

/* The tc baseline for the datapath benchmark. */
SEC("tc")
int bench_empty_tc(struct __sk_buff *skb __maybe_unused)
{
	return 0;	/* TC_ACT_OK */
}

/*
 * The floor of the datapath benchmark: the least any ack translator must do.
 * Parse Ethernet, IPv4 (no options) and TCP; one LRU lookup by flow; ack -=
 * delta with an incremental checksum. The datapath's paths are reported as
 * multiples of it (make bench).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow_key);
	__type(value, __u32);
} floor_flows SEC(".maps");

SEC("xdp")
int bench_floor(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = data + 14;
	struct tcphdr *th = data + 34;
	struct flow_key fk = {};
	__be32 old, new;
	__u32 *delta;

	if (data + 54 > end || eth->h_proto != bpf_htons(0x0800) || iph->ihl != 5 ||
	    iph->protocol != IPPROTO_TCP)
		return XDP_PASS;
	fk.family = FLOW_FAMILY_IPV4;
	__builtin_memcpy(fk.local_addr, &iph->daddr, 4);
	__builtin_memcpy(fk.remote_addr, &iph->saddr, 4);
	fk.local_port = th->dest;
	fk.remote_port = th->source;
	delta = bpf_map_lookup_elem(&floor_flows, &fk);
	if (!delta)
		return XDP_PASS;
	old = th->ack_seq;
	new = bpf_htonl(bpf_ntohl(old) - *delta);
	th->ack_seq = new;
	csum_apply_diff(&th->check, csum_diff4(old, new, false));
	return XDP_PASS;
}

/*
 * The new-flow SYN bench (make bench): a `repeat N` test run hands every
 * run the same skb, which the program under test changed (its seq is the
 * wire ISN after the first run). bench_syn_fresh_flow writes the host's
 * ISN back and a new source port, the host's local port, then tail-calls
 * bench_syn_target: every run is the SYN of a connection never seen. Its
 * own cost is measured by tail-calling bench_empty_tc and subtracted. The
 * frame is Ethernet, IPv4 without options, TCP; the checksum goes stale,
 * which egress never verifies.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_syn_target SEC(".maps");

__u32 bench_syn_isn;		/* the host's ISN, network order */
__u16 bench_syn_port;		/* the next source port, host order */

SEC("tc")
int bench_syn_fresh_flow(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *th = data + 14 + 20;

	if ((void *)(th + 1) > end)
		return 2;	/* TC_ACT_SHOT */
	th->source = bpf_htons(bench_syn_port++);
	th->seq = bench_syn_isn;
	bpf_tail_call(skb, &bench_syn_target, 0);
	return 2;	/* TC_ACT_SHOT */
}
