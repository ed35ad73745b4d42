// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The least ISN rewriter (tests/bpf/least_rewrite.bpf.c), the floor that
 * scripts/bench-conn.sh reads the rewrite rows against: a floor that did
 * less than the job would flatter every ratio to it, so it is held to the
 * job on crafted frames. The host's SYN-ACK leaves with M + F (F from the
 * OpenSSL reference, M within the clock around the run); a retransmission
 * keeps that ISN on a later clock tick, a new host ISN on the tuple gets a
 * new one; the flow's later segments move by its delta, seq out and ack
 * in (through XDP, and through tc ingress for the row without XDP);
 * another flow's segments and the peer's SYN pass untouched. Every
 * frame is otherwise as sent, checksums valid.
 */
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_fixture.h"
#include "harness.h"
#include "isnguard.h"
#include "pkt.h"
#include "ref/isn_ref.h"
#include "least_rewrite.skel.h"

#define HOST "10.9.0.1"
#define PEER "10.9.0.2"
#define HOST_PORT 80
#define OTHER_PORT 81
#define PEER_PORT 40001
#define SEQ_OFF (14 + 20 + 4)
#define TC_ACT_UNSPEC (-1)

/*
 * Host ISNs: each test's first SYN-ACK has one the tuple's entry does not,
 * so it is a new connection whichever test ran before.
 */
#define FIRST_ISN 0x01020304u
#define SECOND_ISN 0x01120304u
#define FLOW_ISN 0x0a0b0c0du

static const uint32_t peer_isn = 0x7000;

/* The object, loaded once with a fixed secret; NULL (and a failed test) if it cannot be. */
static struct least_rewrite *least(void)
{
	static struct least_rewrite *skel;
	static bool failed;

	if (skel || failed)
		return skel;
	skel = least_rewrite__open();
	if (!ASSERT_TRUE(skel != NULL, "open least_rewrite.bpf.o"))
		goto fail;
	for (unsigned int i = 0; i < sizeof(skel->data->least_secret.bytes); i++)
		skel->data->least_secret.bytes[i] = (uint8_t)(0x5a ^ i * 17);
	if (ASSERT_OK(least_rewrite__load(skel), "load least_rewrite.bpf.o"))
		return skel;
	least_rewrite__destroy(skel);
	skel = NULL;
fail:
	failed = true;
	return NULL;
}

static size_t segment(uint8_t *frame, struct pkt_spec *s, bool from_host, uint16_t host_port,
		      uint8_t flags, uint32_t seq, uint32_t ack, const char *payload)
{
	if (!pkt_tcp_segment(s, from_host ? HOST : PEER, from_host ? PEER : HOST,
			     from_host ? host_port : PEER_PORT, from_host ? PEER_PORT : host_port,
			     flags, seq, ack))
		return 0;
	s->window = 502;
	s->payload = (const uint8_t *)payload;
	s->payload_len = payload ? strlen(payload) : 0;
	return pkt_build(s, frame, PKT_MAX_LEN);
}

/* Runs prog on in into out; false (and a failed check) unless it ran and gave verdict. */
static bool run(struct bpf_program *prog, const uint8_t *in, size_t len, uint8_t *out,
		int verdict, const char *what)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = PKT_MAX_LEN, .repeat = 1);

	if (!ASSERT_OK(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts), what))
		return false;
	return ASSERT_EQ((int)opts.retval, verdict, what) && ASSERT_EQ(opts.data_size_out, len, what);
}

/*
 * The host's SYN-ACK with host ISN isn through least_egress: its wire ISN,
 * or 0 (and a failed check) unless it is M + F with M within the clock
 * around the run and nothing else changed.
 */
static uint32_t synack_wire(struct least_rewrite *skel, uint32_t isn, const char *what)
{
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN], want[PKT_MAX_LEN];
	uint32_t f, m_before, m_after, wire;
	struct pkt_spec s;
	struct flow_key fk;
	size_t len;

	len = segment(in, &s, true, HOST_PORT, TH_SYN | TH_ACK, isn, peer_isn + 1, NULL);
	dp_flow_key_of(&s, true, &fk);
	if (!ASSERT_OK(ref_isn_f(ISN_HASH_SIPHASH, &skel->data->least_secret, &fk, &f),
		       "reference F"))
		return 0;
	m_before = dp_mono_ticks();
	if (!run(skel->progs.least_egress, in, len, out, TC_ACT_UNSPEC, what))
		return 0;
	m_after = dp_mono_ticks();
	wire = get_be32(out + SEQ_OFF);
	if (!ASSERT_TRUE((uint32_t)(wire - f - m_before) <= (uint32_t)(m_after - m_before),
			 "wire ISN - F lies within the clock M around the run")) {
		test_log("%s: wire 0x%08x F 0x%08x M [%u, %u]", what, wire, f, m_before, m_after);
		return 0;
	}
	segment(want, &s, true, HOST_PORT, TH_SYN | TH_ACK, wire, peer_isn + 1, NULL);
	if (!ASSERT_MEMEQ(out, want, len, what) || !ASSERT_TRUE(pkt_csums_ok(out, len), what))
		return 0;
	return wire;
}

/* The wire ISN a SYN-ACK with host ISN isn leaves with now, or 0 (a failed check). */
static uint32_t synack_again(struct least_rewrite *skel, uint32_t isn, const char *what)
{
	uint8_t in[PKT_MAX_LEN], out[PKT_MAX_LEN];
	struct pkt_spec s;
	size_t len = segment(in, &s, true, HOST_PORT, TH_SYN | TH_ACK, isn, peer_isn + 1, NULL);

	if (!run(skel->progs.least_egress, in, len, out, TC_ACT_UNSPEC, what) ||
	    !ASSERT_TRUE(pkt_csums_ok(out, len), what))
		return 0;
	return get_be32(out + SEQ_OFF);
}

/* Waits for M to move on from m: a retransmission after it would get another ISN if made anew. */
static void next_tick(uint32_t m)
{
	while (dp_mono_ticks() == m)
		;
}

TEST(test_least_rewriter_gives_the_synack_the_keyed_isn)
{
	struct least_rewrite *skel = least();
	uint32_t wire, again, m;

	if (!skel)
		return;
	wire = synack_wire(skel, FIRST_ISN, "SYN-ACK: seq = M + F, nothing else changed");
	if (!wire)
		return;
	m = dp_mono_ticks();
	next_tick(m);
	again = synack_again(skel, FIRST_ISN, "retransmitted SYN-ACK, a clock tick later");
	ASSERT_EQ(again, wire, "the retransmission keeps the wire ISN");

	/* A new host ISN on the tuple is a new connection: a fresh keyed ISN, kept after. */
	wire = synack_wire(skel, SECOND_ISN, "a new connection's SYN-ACK on the tuple");
	if (!wire)
		return;
	next_tick(dp_mono_ticks());
	ASSERT_EQ(synack_again(skel, SECOND_ISN, "its retransmission"), wire,
		  "the new connection's wire ISN kept");
}

/*
 * After the handshake (a SYN-ACK with host ISN FLOW_ISN), each row a segment: seq and ack as the host sees them (from the peer, its
 * ack goes out in the wire's space, + delta), and whether the rewriter
 * must move them by the flow's delta.
 */
struct least_case {
	const char *what;
	bool from_host;		/* through tc egress, else XDP and tc ingress */
	uint16_t host_port;
	uint8_t flags;
	uint32_t seq_off, ack_off;	/* from the host's ISN + 1 and the peer's ISN + 1 */
	const char *payload;
	bool translated;
};

static const struct least_case least_cases[] = {
	{ .what = "the host's data: seq + delta", .from_host = true, .host_port = HOST_PORT,
	  .flags = TH_ACK | TH_PSH, .payload = "hello", .translated = true },
	{ .what = "the peer's ACK of it: ack - delta", .host_port = HOST_PORT, .flags = TH_ACK,
	  .seq_off = 0, .ack_off = 5, .translated = true },
	{ .what = "the host's FIN: seq + delta", .from_host = true, .host_port = HOST_PORT,
	  .flags = TH_ACK | TH_FIN, .seq_off = 5, .translated = true },
	{ .what = "the peer's FIN|ACK: ack - delta", .host_port = HOST_PORT,
	  .flags = TH_ACK | TH_FIN, .ack_off = 6, .translated = true },
	{ .what = "another flow's host segment: untouched", .from_host = true,
	  .host_port = OTHER_PORT, .flags = TH_ACK | TH_PSH, .payload = "x" },
	{ .what = "another flow's peer ACK: untouched", .host_port = OTHER_PORT, .flags = TH_ACK,
	  .ack_off = 1 },
	{ .what = "the peer's SYN: untouched", .host_port = HOST_PORT, .flags = TH_SYN },
};

/* in through prog: verdict, and the frame out is want, checksums valid. */
static void frame_through(struct bpf_program *prog, const uint8_t *in, size_t len,
			  const uint8_t *want, int verdict, const char *what)
{
	uint8_t out[PKT_MAX_LEN] = {};

	if (!run(prog, in, len, out, verdict, what))
		return;
	ASSERT_MEMEQ(out, want, len, what);
	ASSERT_TRUE(pkt_csums_ok(out, len), what);
}

TEST(test_least_rewriter_moves_the_flows_segments_by_its_delta)
{
	uint8_t in[PKT_MAX_LEN], want[PKT_MAX_LEN];
	struct least_rewrite *skel = least();
	uint32_t wire, delta;
	struct pkt_spec s;

	if (!skel)
		return;
	wire = synack_wire(skel, FLOW_ISN, "the flow's SYN-ACK");
	if (!wire)
		return;
	delta = wire - FLOW_ISN;
	for (size_t i = 0; i < sizeof(least_cases) / sizeof(least_cases[0]); i++) {
		const struct least_case *c = &least_cases[i];
		uint32_t seq, ack, by = c->translated ? delta : 0;
		bool syn = c->flags & TH_SYN;
		size_t len;

		if (c->from_host) {
			seq = FLOW_ISN + 1 + c->seq_off;
			ack = peer_isn + 1 + c->ack_off;
			len = segment(in, &s, true, c->host_port, c->flags, seq, ack, c->payload);
			segment(want, &s, true, c->host_port, c->flags, seq + by, ack, c->payload);
		} else {
			seq = syn ? peer_isn : peer_isn + 1 + c->seq_off;
			ack = syn ? 0 : FLOW_ISN + 1 + c->ack_off;
			len = segment(in, &s, false, c->host_port, c->flags, seq,
				      syn ? 0 : ack + delta, c->payload);
			segment(want, &s, false, c->host_port, c->flags, seq,
				syn ? 0 : ack + delta - by, c->payload);
		}
		if (c->from_host) {
			frame_through(skel->progs.least_egress, in, len, want, TC_ACT_UNSPEC, c->what);
			continue;
		}
		/* The peer's segment, through XDP and through tc ingress (row least_tc). */
		frame_through(skel->progs.least_ingress, in, len, want, XDP_PASS, c->what);
		frame_through(skel->progs.least_ingress_tc, in, len, want, TC_ACT_UNSPEC, c->what);
	}
}
