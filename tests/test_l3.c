// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Devices without a link-layer header (tun, WireGuard, ipip): frames start
 * at the IP header. The loader sets the datapath's l3_device before load;
 * here a second instance of the object is loaded that way and fed frames
 * the packet builder made, their Ethernet header cut off. Expected bytes
 * come from the builder with the fields the translation must change.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_fixture.h"
#include "harness.h"
#include "isnguard.skel.h"
#include "pkt.h"

#define L3_HOST "10.9.0.1"
#define L3_PEER "10.9.0.2"
#define L3_HOST_PORT 443
#define L3_PEER_PORT 50123
#define L3_HOST_ISN 1000000u
#define L3_PEER_ISN 7000000u
#define XDP_PASS_VERDICT 2
#define TC_ACT_UNSPEC_VERDICT ((uint32_t)-1)

static struct isnguard *l3_skel;

static bool l3_setup(void)
{
	struct isn_config config = { .hash = ISN_HASH_SIPHASH };
	struct isn_key key;
	uint32_t zero = 0;

	if (l3_skel)
		return true;
	l3_skel = isnguard__open();
	if (!l3_skel) {
		FAIL("open isnguard.bpf.o: %s", strerror(errno));
		return false;
	}
	l3_skel->rodata->l3_device = true;
	if (isnguard__load(l3_skel)) {
		FAIL("load isnguard.bpf.o with l3_device: %s", strerror(errno));
		isnguard__destroy(l3_skel);
		l3_skel = NULL;
		return false;
	}
	dp_test_key(&key);
	return ASSERT_OK(bpf_map__update_elem(l3_skel->maps.isn_key, &zero, sizeof(zero), &key,
					      sizeof(key), BPF_ANY), "key") &&
	       ASSERT_OK(bpf_map__update_elem(l3_skel->maps.isn_config, &zero, sizeof(zero),
					      &config, sizeof(config), BPF_ANY), "config");
}

/* The builder's frame without its 14-byte Ethernet header. */
static size_t build_l3(const struct pkt_spec *s, uint8_t *buf)
{
	uint8_t frame[PKT_MAX_LEN];
	size_t len = pkt_build(s, frame, sizeof(frame));

	if (len <= 14)
		return 0;
	memcpy(buf, frame + 14, len - 14);
	return len - 14;
}

static void segment(struct pkt_spec *s, bool from_host, uint8_t flags, uint32_t seq, uint32_t ack)
{
	pkt_tcp_segment(s, from_host ? L3_HOST : L3_PEER, from_host ? L3_PEER : L3_HOST,
			from_host ? L3_HOST_PORT : L3_PEER_PORT,
			from_host ? L3_PEER_PORT : L3_HOST_PORT, flags, seq, ack);
	s->window = 501;
}

static bool run(struct bpf_program *prog, const uint8_t *in, size_t len, uint8_t *out,
		size_t *out_len, uint32_t *verdict)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = PKT_MAX_LEN, .repeat = 1);

	if (!ASSERT_OK(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts), "test run"))
		return false;
	*out_len = opts.data_size_out;
	*verdict = opts.retval;
	return true;
}

TEST(test_l3_device_synack_rewritten_and_ack_translated)
{
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN], want[PKT_MAX_LEN];
	size_t in_len, out_len, want_len;
	struct pkt_spec s;
	uint32_t verdict, wire_isn;

	if (!l3_setup())
		return;
	/* The host's SYN-ACK leaves with the keyed ISN: read it back from the frame. */
	segment(&s, true, TH_SYN | TH_ACK, L3_HOST_ISN, L3_PEER_ISN + 1);
	pkt_opt_mss(&s, 1460);
	in_len = build_l3(&s, in);
	if (!run(l3_skel->progs.isnguard_tc_egress, in, in_len, out, &out_len, &verdict))
		return;
	ASSERT_EQ(verdict, TC_ACT_UNSPEC_VERDICT, "egress verdict");
	ASSERT_EQ(out_len, in_len, "egress length");
	wire_isn = get_be32(out + 20 + 4);
	ASSERT_TRUE(wire_isn != L3_HOST_ISN, "the host ISN is replaced");
	s.seq = wire_isn;
	want_len = build_l3(&s, want);
	ASSERT_MEMEQ(out, want, want_len, "SYN-ACK = builder's with the wire ISN (checksums too)");

	/* The peer's ACK of it comes back to the host's ISN, through XDP and through tc. */
	segment(&s, false, TH_ACK, L3_PEER_ISN + 1, wire_isn + 1);
	in_len = build_l3(&s, in);
	s.ack = L3_HOST_ISN + 1;
	want_len = build_l3(&s, want);
	if (run(l3_skel->progs.isnguard_xdp, in, in_len, out, &out_len, &verdict)) {
		ASSERT_EQ(verdict, XDP_PASS_VERDICT, "xdp verdict");
		ASSERT_EQ(out_len, want_len, "xdp length");
		ASSERT_MEMEQ(out, want, want_len, "xdp: ack = builder's with the host's ack");
	}
	if (run(l3_skel->progs.isnguard_tc_ingress, in, in_len, out, &out_len, &verdict)) {
		ASSERT_EQ(verdict, TC_ACT_UNSPEC_VERDICT, "tc ingress verdict");
		ASSERT_MEMEQ(out, want, want_len, "tc ingress: ack = builder's with the host's ack");
	}
}

/*
 * What an Ethernet-parsing datapath did with such frames before the loader
 * told it the device had no link-layer header: nothing, the host's ISN
 * leaked. The default instance still treats the first 14 bytes as Ethernet.
 */
TEST(test_l2_datapath_cannot_read_l3_frames)
{
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN];
	size_t in_len, out_len;
	struct pkt_spec s;
	uint32_t verdict;

	if (!dp_setup())
		return;
	segment(&s, true, TH_SYN | TH_ACK, L3_HOST_ISN + 5, L3_PEER_ISN + 1);
	in_len = build_l3(&s, in);
	if (!dp_run(DP_TC_EGRESS, in, in_len, out, &out_len, &verdict))
		return;
	ASSERT_EQ(out_len, in_len, "length");
	ASSERT_MEMEQ(out, in, in_len, "untouched: the host ISN would leak on an L3 device");
}
