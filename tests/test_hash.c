// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The keyed ISN functions: BPF (bpf/siphash.h, bpf/md5.h, bpf/isn.h) and the
 * OpenSSL reference (user/ref) against published vectors, then against each
 * other on random keys and tuples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bpf_run.h"
#include "harness.h"
#include "isnguard.h"
#include "isn_test.skel.h"
#include "ref/isn_ref.h"

/*
 * SipHash-2-4 of messages 00, 00 01, ..., 00..3e under key 00..0f: the 64
 * vectors published with the reference implementation, as the u64 read
 * little-endian from the 8 output bytes.
 */
static const uint64_t siphash_vectors[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
	0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
	0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
	0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
	0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
	0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
	0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
	0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
	0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
	0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
	0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
};

/* The RFC 1321 appendix A.5 test suite. */
static const struct {
	const char *msg;
	const char *digest_hex;
} md5_suite[] = {
	{ "", "d41d8cd98f00b204e9800998ecf8427e" },
	{ "a", "0cc175b9c0f1b6a831c399e269772661" },
	{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
	{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
	{ "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
	{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	  "d174ab98d277d9f5a5611c2c9f419d9f" },
	{ "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	  "57edf4a22be3c955ac49da2e2107b67a" },
};

static void vector_key(struct isn_key *key)
{
	for (int i = 0; i < ISN_KEY_LEN; i++)
		key->bytes[i] = (uint8_t)i;
}

static void hex_to_bytes(const char *hex, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

TEST(test_siphash_reference_vectors_openssl)
{
	struct isn_key key;
	uint8_t msg[64];

	vector_key(&key);
	for (int len = 0; len < 64; len++) {
		char what[48];
		uint64_t out = 0;

		msg[len] = (uint8_t)len;
		snprintf(what, sizeof(what), "OpenSSL SipHash-2-4, %d-byte message", len);
		if (!ASSERT_OK(ref_siphash24(&key, msg, (size_t)len, &out), what) ||
		    !ASSERT_EQ(out, siphash_vectors[len], what))
			return;
	}
}

TEST(test_siphash_reference_vectors_bpf)
{
	struct isn_test *skel = isn_test_skel();

	if (!ASSERT_TRUE(skel, "load isn_test.bpf.o"))
		return;
	vector_key(&skel->bss->in_key);
	for (int len = 0; len < 64; len++) {
		char what[48];
		uint32_t verdict = 0;

		skel->bss->in_msg[len] = (uint8_t)len;
		skel->bss->in_len = (uint32_t)len;
		snprintf(what, sizeof(what), "BPF SipHash-2-4, %d-byte message", len);
		if (!ASSERT_OK(bpf_run(skel->progs.test_siphash, NULL, 0, 1, &verdict, NULL), what) ||
		    !ASSERT_EQ(verdict, 2 /* XDP_PASS */, what) ||
		    !ASSERT_EQ(skel->bss->out_siphash, siphash_vectors[len], what))
			return;
	}
}

TEST(test_md5_rfc1321_suite_openssl)
{
	for (size_t i = 0; i < sizeof(md5_suite) / sizeof(md5_suite[0]); i++) {
		uint8_t expected[MD5_DIGEST_LEN], digest[MD5_DIGEST_LEN];
		const char *msg = md5_suite[i].msg;

		hex_to_bytes(md5_suite[i].digest_hex, expected, sizeof(expected));
		if (!ASSERT_OK(ref_md5(msg, strlen(msg), digest), msg) ||
		    !ASSERT_MEMEQ(digest, expected, sizeof(expected), msg))
			return;
	}
}

TEST(test_md5_rfc1321_suite_bpf)
{
	struct isn_test *skel = isn_test_skel();

	if (!ASSERT_TRUE(skel, "load isn_test.bpf.o"))
		return;
	for (size_t i = 0; i < sizeof(md5_suite) / sizeof(md5_suite[0]); i++) {
		uint8_t expected[MD5_DIGEST_LEN], digest[MD5_DIGEST_LEN];
		const char *msg = md5_suite[i].msg;
		uint32_t verdict = 0;

		hex_to_bytes(md5_suite[i].digest_hex, expected, sizeof(expected));
		memset(skel->bss->in_msg, 0xa5, sizeof(skel->bss->in_msg));
		memcpy(skel->bss->in_msg, msg, strlen(msg));
		skel->bss->in_len = (uint32_t)strlen(msg);
		if (!ASSERT_OK(bpf_run(skel->progs.test_md5, NULL, 0, 1, &verdict, NULL), msg) ||
		    !ASSERT_EQ(verdict, 2 /* XDP_PASS */, msg))
			return;
		/* The digest is the four state words, each little-endian. */
		for (int w = 0; w < 4; w++)
			for (int b = 0; b < 4; b++)
				digest[4 * w + b] = (uint8_t)(skel->bss->out_md5[w] >> (8 * b));
		if (!ASSERT_MEMEQ(digest, expected, sizeof(expected), msg))
			return;
	}
}

/* Lengths past what the BPF functions handle are refused, not hashed wrong. */
TEST(test_bpf_hash_rejects_oversized_messages)
{
	struct isn_test *skel = isn_test_skel();
	uint32_t verdict = 0;

	if (!ASSERT_TRUE(skel, "load isn_test.bpf.o"))
		return;
	skel->bss->in_len = 64;
	ASSERT_OK(bpf_run(skel->progs.test_siphash, NULL, 0, 1, &verdict, NULL), "run siphash");
	ASSERT_EQ(verdict, 0 /* XDP_ABORTED */, "siphash of 64 bytes");
	skel->bss->in_len = 120;
	ASSERT_OK(bpf_run(skel->progs.test_md5, NULL, 0, 1, &verdict, NULL), "run md5");
	ASSERT_EQ(verdict, 0 /* XDP_ABORTED */, "md5 of 120 bytes");
}

/* A seeded generator, so a failing case can be replayed with ISNGUARD_TEST_SEED. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next();
}

static void rng_seed(void)
{
	const char *env = getenv("ISNGUARD_TEST_SEED");
	uint64_t seed;

	if (env)
		seed = strtoull(env, NULL, 0);
	else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	rng_state = seed;
	test_log("seed 0x%llx (set ISNGUARD_TEST_SEED to replay)", (unsigned long long)seed);
}

static void random_flow(struct flow_key *fk, int family)
{
	memset(fk, 0, sizeof(*fk));
	fk->family = (uint8_t)family;
	rng_bytes(fk->local_addr, family == FLOW_FAMILY_IPV4 ? 4 : 16);
	rng_bytes(fk->remote_addr, family == FLOW_FAMILY_IPV4 ? 4 : 16);
	rng_bytes(&fk->local_port, 2);
	rng_bytes(&fk->remote_port, 2);
}

static uint32_t mono_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ref_isn_ticks((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

#define DIFFERENTIAL_CASES 2500

/* BPF F == OpenSSL F bit for bit; ISN == M + F; M within the clock around the run. */
static void check_differential(enum isn_hash hash, int family)
{
	struct isn_test *skel = isn_test_skel();
	int mismatches = 0;

	if (!ASSERT_TRUE(skel, "load isn_test.bpf.o"))
		return;
	rng_seed();
	for (int i = 0; i < DIFFERENTIAL_CASES; i++) {
		struct flow_key fk;
		struct isn_key key;
		uint32_t expected_f, before, after, m, verdict = 0;
		char what[64];

		rng_bytes(&key, sizeof(key));
		random_flow(&fk, family);
		skel->bss->in_key = key;
		skel->bss->in_flow = fk;
		skel->bss->in_hash = hash;
		snprintf(what, sizeof(what), "case %d: reference F", i);
		if (!ASSERT_OK(ref_isn_f(hash, &key, &fk, &expected_f), what))
			return;

		before = mono_ticks();
		if (!ASSERT_OK(bpf_run(skel->progs.test_isn, NULL, 0, 1, &verdict, NULL), "run test_isn"))
			return;
		after = mono_ticks();
		m = skel->bss->out_m;

		if (skel->bss->out_f != expected_f) {
			if (mismatches++ < 3)
				FAIL("case %d: BPF F 0x%08x, reference F 0x%08x", i,
				     skel->bss->out_f, expected_f);
			continue;
		}
		snprintf(what, sizeof(what), "case %d: ISN = M + F", i);
		if (!ASSERT_EQ(skel->bss->out_isn, (uint32_t)(m + expected_f), what))
			return;
		/* Unsigned differences so the check holds across the 2^32 wrap. */
		if ((uint32_t)(m - before) > (uint32_t)(after - before)) {
			FAIL("case %d: BPF M %u outside the clock [%u, %u] around the run",
			     i, m, before, after);
			return;
		}
	}
	if (mismatches)
		FAIL("%d of %d cases differ", mismatches, DIFFERENTIAL_CASES);
}

TEST(test_differential_siphash_ipv4) { check_differential(ISN_HASH_SIPHASH, FLOW_FAMILY_IPV4); }
TEST(test_differential_siphash_ipv6) { check_differential(ISN_HASH_SIPHASH, FLOW_FAMILY_IPV6); }
TEST(test_differential_md5_ipv4) { check_differential(ISN_HASH_MD5, FLOW_FAMILY_IPV4); }
TEST(test_differential_md5_ipv6) { check_differential(ISN_HASH_MD5, FLOW_FAMILY_IPV6); }
TEST(test_differential_none_ipv4) { check_differential(ISN_HASH_NONE, FLOW_FAMILY_IPV4); }
TEST(test_differential_none_ipv6) { check_differential(ISN_HASH_NONE, FLOW_FAMILY_IPV6); }

/* A corrupt mode value must not turn the secret off. */
TEST(test_unknown_hash_mode_falls_back_to_siphash)
{
	struct isn_test *skel = isn_test_skel();
	struct flow_key fk;
	struct isn_key key;
	uint32_t expected_f;

	if (!ASSERT_TRUE(skel, "load isn_test.bpf.o"))
		return;
	rng_seed();
	rng_bytes(&key, sizeof(key));
	random_flow(&fk, FLOW_FAMILY_IPV4);
	skel->bss->in_key = key;
	skel->bss->in_flow = fk;
	skel->bss->in_hash = ISN_HASH_COUNT + 7;
	ASSERT_OK(ref_isn_f(ISN_HASH_SIPHASH, &key, &fk, &expected_f), "reference F");
	ASSERT_OK(bpf_run(skel->progs.test_isn, NULL, 0, 1, NULL, NULL), "run test_isn");
	ASSERT_EQ(skel->bss->out_f, expected_f, "F for an unknown mode");
}

/* F depends on every byte of T and of K (a cheap check that none is dropped). */
TEST(test_f_depends_on_every_tuple_and_key_byte)
{
	for (int hash = ISN_HASH_SIPHASH; hash <= ISN_HASH_MD5; hash++) {
		for (int family = 4; family <= 6; family += 2) {
			struct flow_key fk;
			struct isn_key key;
			uint8_t *fields[] = { fk.local_addr, (uint8_t *)&fk.local_port,
					      fk.remote_addr, (uint8_t *)&fk.remote_port };
			size_t lens[] = { family == 4 ? 4u : 16u, 2, family == 4 ? 4u : 16u, 2 };
			uint32_t base, f;

			rng_seed();
			rng_bytes(&key, sizeof(key));
			random_flow(&fk, family);
			ref_isn_f(hash, &key, &fk, &base);
			for (int fi = 0; fi < 4; fi++) {
				for (size_t b = 0; b < lens[fi]; b++) {
					fields[fi][b] ^= 1;
					ref_isn_f(hash, &key, &fk, &f);
					fields[fi][b] ^= 1;
					if (f == base)
						FAIL("%s IPv%d: F ignores byte %zu of field %d",
						     isn_hash_name(hash), family, b, fi);
				}
			}
			for (int b = 0; b < ISN_KEY_LEN; b++) {
				key.bytes[b] ^= 0x80;
				ref_isn_f(hash, &key, &fk, &f);
				key.bytes[b] ^= 0x80;
				if (f == base)
					FAIL("%s IPv%d: F ignores key byte %d", isn_hash_name(hash),
					     family, b);
			}
		}
	}
}
