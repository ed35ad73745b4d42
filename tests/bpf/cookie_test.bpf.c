// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN-cookie functions of bpf/cookie.h under BPF_PROG_TEST_RUN on a dummy
 * frame: a case goes in through globals (.bss), the keys through the isn_key
 * map as the datapath reads them, and the result comes back in globals.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "cookie.h"

/* Inputs. */
struct isn_config in_config;
struct flow_key in_flow;
__u32 in_client_isn;
__u64 in_now_ns;
__u32 in_opt_bits;
__u32 in_ts;
__u32 in_cookie;
__u32 in_tsecr;
__u32 in_mss_limit;
__u32 in_rounds;
__u64 in_seed;
/* Chosen ACKs: cookie = (in_start + i) << in_free_shift | (in_cookie & low bits). */
__u32 in_start;
__u32 in_free_shift;

/* Outputs. */
__u32 out_cookie;
__u32 out_tsval;
__u32 out_verdict;
__u32 out_mss, out_wscale, out_wscale_ok, out_sack_ok, out_ecn_ok;
__u32 out_mss_index;
/* cookie_mss_index of every limit 0..65535, for in_flow.family and in_ts. */
__u8 out_mss_table[65536];
__u32 out_accepted;
__u32 out_tried;
__u32 out_forged_verdicts[4];	/* by enum cookie_verdict */
__u32 out_accepted_cookie;	/* the last chosen ACK's cookie accepted */

SEC("xdp")
int test_cookie_make(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();

	if (!in || cookie_make(&in_config, &in_flow, in_client_isn, in_now_ns, in_opt_bits, in_ts,
			       &out_cookie, &out_tsval, in))
		return XDP_ABORTED;
	return XDP_PASS;
}

SEC("xdp")
int test_cookie_check(struct xdp_md *ctx __maybe_unused)
{
	union isn_input *in = hash_input_get();
	struct cookie_opts opts = {};

	if (!in)
		return XDP_ABORTED;
	out_verdict = cookie_check(&in_config, &in_flow, in_client_isn, in_cookie, in_now_ns,
				   in_ts, in_tsecr, &opts, in);
	out_mss = opts.mss;
	out_wscale = opts.wscale;
	out_wscale_ok = opts.wscale_ok;
	out_sack_ok = opts.sack_ok;
	out_ecn_ok = opts.ecn_ok;
	return XDP_PASS;
}

SEC("xdp")
int test_cookie_mss_index(struct xdp_md *ctx __maybe_unused)
{
	out_mss_index = cookie_mss_index(in_flow.family, in_mss_limit, in_ts);
	return XDP_PASS;
}

static long mss_index_of_limit(__u32 limit, void *unused __maybe_unused)
{
	out_mss_table[limit & 0xffff] = (__u8)cookie_mss_index(in_flow.family, limit, in_ts);
	return 0;
}

SEC("xdp")
int test_cookie_mss_table(struct xdp_md *ctx __maybe_unused)
{
	bpf_loop(sizeof(out_mss_table), mss_index_of_limit, NULL, 0);
	return XDP_PASS;
}

/* xorshift64 from in_seed: the same million ACKs on every run, so the result repeats. */
static __u64 rng;

static __always_inline __u32 next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (__u32)(rng >> 32);
}

/* One forged ACK: random client seq, cookie and TSecr, timestamps on every other one. */
static long forged_ack(__u32 index, void *unused __maybe_unused)
{
	union isn_input *in = hash_input_get();
	struct cookie_opts opts;
	bool ts = index & 1;
	__u32 client_isn = next_random(), cookie = next_random(), tsecr = next_random();
	enum cookie_verdict verdict;

	if (!in)
		return 1;
	verdict = cookie_check(&in_config, &in_flow, client_isn, cookie, in_now_ns, ts, tsecr,
			       &opts, in);

	if (verdict == COOKIE_OK)
		out_accepted++;
	out_forged_verdicts[verdict & 3]++;
	out_tried++;
	return 0;
}

SEC("xdp")
int test_cookie_forged(struct xdp_md *ctx __maybe_unused)
{
	rng = in_seed | 1;
	bpf_loop(in_rounds, forged_ack, NULL, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * One chosen ACK: the low in_free_shift bits of the cookie copied from
 * in_cookie (what the attacker read from his own SYN-ACK), the bits above
 * them the index: in_rounds runs from in_start cover a whole sub-space.
 */
static long chosen_ack(__u32 index, void *unused __maybe_unused)
{
	union isn_input *in = hash_input_get();
	__u32 low = in_free_shift < 32 ? (1u << in_free_shift) - 1 : ~0u;
	__u32 cookie = ((in_start + index) << (in_free_shift & 31)) | (in_cookie & low);
	struct cookie_opts opts;

	if (!in)
		return 1;
	if (cookie_check(&in_config, &in_flow, in_client_isn, cookie, in_now_ns, false, 0, &opts,
			 in) == COOKIE_OK) {
		out_accepted++;
		out_accepted_cookie = cookie;
	}
	out_tried++;
	return 0;
}

SEC("xdp")
int test_cookie_chosen(struct xdp_md *ctx __maybe_unused)
{
	bpf_loop(in_rounds, chosen_ack, NULL, 0);
	return XDP_PASS;
}
