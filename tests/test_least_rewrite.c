// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The least ISN rewriter (tests/bpf/least_rewrite.bpf.c), the floor that
 * scripts/bench-conn.sh reads the rewrite rows against: a floor that did
 * less than the job would flatter every ratio to it, so it is held to the
 * job on crafted frames. The host's SYN-ACK leaves with M + F (F from the
 * OpenSSL reference, M within the clock around the run), a retransmission
 * with the same wire ISN, the host's next segment shifted by the same delta
 * and the peer's ACK shifted back, each frame otherwise as sent with valid
 * checksums; another flow's segments and the peer's SYN pass untouched.
 */
#include <string.h>
#include <arpa/inet.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "isnguard.h"
#include "pkt.h"
#include "ref/isn_ref.h"
#include "least_rewrite.skel.h"

#define HOST "10.9.0.1"
#define PEER "10.9.0.2"
#define HOST_PORT 80
#define PEER_PORT 40001
#define SEQ_OFF (14 + 20 + 4)
#define ACK_OFF (14 + 20 + 8)

static uint32_t mono_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ref_isn_ticks((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

static size_t segment(uint8_t *frame, bool from_host, uint16_t host_port, uint8_t flags,
		      uint32_t seq, uint32_t ack, const char *payload)
{
	struct pkt_spec s;

	if (!pkt_tcp_segment(&s, from_host ? HOST : PEER, from_host ? PEER : HOST,
			     from_host ? host_port : PEER_PORT, from_host ? PEER_PORT : host_port,
			     flags, seq, ack))
		return 0;
	s.window = 502;
	s.payload = (const uint8_t *)payload;
	s.payload_len = payload ? strlen(payload) : 0;
	return pkt_build(&s, frame, PKT_MAX_LEN);
}

/* Runs prog on in; the output must be want (the same length), checksums valid. */
static void expect(struct bpf_program *prog, const uint8_t *in, size_t len, const uint8_t *want,
		   const char *what)
{
	uint8_t out[PKT_MAX_LEN];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (!ASSERT_OK(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts), what))
		return;
	ASSERT_EQ(opts.retval, strcmp(bpf_program__name(prog), "least_ingress") ? 0 : XDP_PASS,
		  what);
	if (!ASSERT_EQ(opts.data_size_out, len, what))
		return;
	ASSERT_MEMEQ(out, want, len, what);
	ASSERT_TRUE(pkt_csums_ok(out, len), what);
}

TEST(test_least_rewriter_does_the_job_it_is_the_floor_of)
{
	uint8_t in[PKT_MAX_LEN], want[PKT_MAX_LEN], out[PKT_MAX_LEN];
	uint32_t host_isn = 0x01020304, peer_isn = 0x7000, f, m_before, m_after, wire, delta;
	struct least_rewrite *skel = least_rewrite__open();
	struct flow_key fk = { .family = FLOW_FAMILY_IPV4 };
	size_t len;

	if (!ASSERT_TRUE(skel != NULL, "open least_rewrite.bpf.o"))
		return;
	for (unsigned int i = 0; i < sizeof(skel->data->least_secret.bytes); i++)
		skel->data->least_secret.bytes[i] = (uint8_t)(0x5a ^ i * 17);
	if (!ASSERT_OK(least_rewrite__load(skel), "load least_rewrite.bpf.o"))
		goto out;
	inet_pton(AF_INET, HOST, fk.local_addr);
	inet_pton(AF_INET, PEER, fk.remote_addr);
	fk.local_port = htons(HOST_PORT);
	fk.remote_port = htons(PEER_PORT);
	if (!ASSERT_OK(ref_isn_f(ISN_HASH_SIPHASH, &skel->data->least_secret, &fk, &f),
		       "reference F"))
		goto out;

	/* The SYN-ACK: seq = M + F, nothing else changed. */
	len = segment(in, true, HOST_PORT, TH_SYN | TH_ACK, host_isn, peer_isn + 1, NULL);
	{
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

		m_before = mono_ticks();
		if (!ASSERT_OK(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.least_egress),
						      &opts), "SYN-ACK run"))
			goto out;
		m_after = mono_ticks();
		ASSERT_EQ(opts.retval, 0, "SYN-ACK passes (TC_ACT_OK)");
	}
	wire = get_be32(out + SEQ_OFF);
	if (!ASSERT_TRUE((uint32_t)(wire - f - m_before) <= (uint32_t)(m_after - m_before),
			 "wire ISN - F lies within the clock M around the run")) {
		test_log("wire 0x%08x F 0x%08x M [%u, %u]", wire, f, m_before, m_after);
		goto out;
	}
	segment(want, true, HOST_PORT, TH_SYN | TH_ACK, wire, peer_isn + 1, NULL);
	ASSERT_MEMEQ(out, want, len, "SYN-ACK with only seq (and checksum) changed");
	ASSERT_TRUE(pkt_csums_ok(out, len), "SYN-ACK checksums");
	delta = wire - host_isn;

	/* Retransmitted: the same wire ISN, whatever the clock says now. */
	expect(skel->progs.least_egress, in, len, want, "retransmitted SYN-ACK");

	/* The host's data: seq + delta. */
	len = segment(in, true, HOST_PORT, TH_ACK | TH_PSH, host_isn + 1, peer_isn + 1, "hello");
	segment(want, true, HOST_PORT, TH_ACK | TH_PSH, host_isn + 1 + delta, peer_isn + 1, "hello");
	expect(skel->progs.least_egress, in, len, want, "host data, seq shifted");

	/* The peer's ACK of it: ack - delta. */
	len = segment(in, false, HOST_PORT, TH_ACK, peer_isn + 1, wire + 6, NULL);
	segment(want, false, HOST_PORT, TH_ACK, peer_isn + 1, host_isn + 6, NULL);
	expect(skel->progs.least_ingress, in, len, want, "peer ACK, ack shifted back");

	/* No entry: another flow's segments, and the peer's SYN, pass as they are. */
	len = segment(in, true, HOST_PORT + 1, TH_ACK, host_isn + 1, peer_isn + 1, "x");
	expect(skel->progs.least_egress, in, len, in, "another flow's host segment untouched");
	len = segment(in, false, HOST_PORT + 1, TH_ACK, peer_isn + 1, wire + 6, NULL);
	expect(skel->progs.least_ingress, in, len, in, "another flow's peer ACK untouched");
	len = segment(in, false, HOST_PORT, TH_SYN, peer_isn, 0, NULL);
	expect(skel->progs.least_ingress, in, len, in, "the peer's SYN untouched");
out:
	least_rewrite__destroy(skel);
}
