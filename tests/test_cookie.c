// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN cookie of bpf/cookie.h against the OpenSSL reference
 * (user/ref/cookie_ref.c) bit for bit, and its acceptance rules: current
 * and previous slot, each with the key its cookies are made with (the
 * previous one up to the slot of a rotation), every bit authenticated, no
 * random ACK taken, and no ACK chosen after reading a SYN-ACK's clear bits.
 */
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "isnguard.h"
#include "bpf_run.h"
#include "cookie_test.skel.h"
#include "harness.h"
#include "ref/cookie_ref.h"

#define RANDOM_CASES 2000
#define FORGED_ACKS 1000000
#define SLOT_NS (1ULL << COOKIE_SLOT_SHIFT)

static struct cookie_test *skel;
static struct isn_key keys[ISN_KEY_SLOTS];

static uint32_t rand32(void)
{
	return (uint32_t)random() << 16 ^ (uint32_t)random();
}

static bool setup(void)
{
	if (skel)
		return true;
	skel = cookie_test__open_and_load();
	if (!skel) {
		FAIL("load cookie_test.bpf.o");
		return false;
	}
	srandom(20261204);
	for (uint32_t slot = 0; slot < ISN_KEY_SLOTS; slot++) {
		for (int i = 0; i < ISN_KEY_LEN; i++)
			keys[slot].bytes[i] = (uint8_t)rand32();
		if (!ASSERT_OK(bpf_map__update_elem(skel->maps.isn_key, &slot, sizeof(slot),
						    &keys[slot], sizeof(keys[slot]), BPF_ANY),
			       "write key"))
			return false;
	}
	return true;
}

static void random_flow(struct flow_key *fk, int family)
{
	memset(fk, 0, sizeof(*fk));
	fk->family = (uint8_t)family;
	for (int i = 0; i < (family == 4 ? 4 : 16); i++) {
		fk->local_addr[i] = (uint8_t)rand32();
		fk->remote_addr[i] = (uint8_t)rand32();
	}
	fk->local_port = (uint16_t)rand32();
	fk->remote_port = (uint16_t)rand32();
}

static bool run(struct bpf_program *prog)
{
	uint32_t retval = 0, ns;

	return ASSERT_OK(bpf_run(prog, NULL, 0, 1, &retval, &ns), "test run") &&
	       ASSERT_EQ(retval, 2 /* XDP_PASS */, "program verdict");
}

static bool bpf_make(uint32_t key_gen, uint64_t rotated_ns, const struct flow_key *fk,
		     uint32_t client_isn, uint64_t now_ns, uint32_t opt_bits, bool ts,
		     uint32_t *cookie, uint32_t *tsval)
{
	skel->bss->in_config = (struct isn_config){ .key_gen = key_gen,
						     .key_rotated_ns = rotated_ns };
	skel->bss->in_flow = *fk;
	skel->bss->in_client_isn = client_isn;
	skel->bss->in_now_ns = now_ns;
	skel->bss->in_opt_bits = opt_bits;
	skel->bss->in_ts = ts;
	if (!run(skel->progs.test_cookie_make))
		return false;
	*cookie = skel->bss->out_cookie;
	*tsval = skel->bss->out_tsval;
	return true;
}

static uint32_t bpf_check(uint32_t key_gen, uint64_t rotated_ns, const struct flow_key *fk,
			  uint32_t client_isn, uint32_t cookie, uint64_t now_ns, bool ts,
			  uint32_t tsecr)
{
	skel->bss->in_config = (struct isn_config){ .key_gen = key_gen,
						     .key_rotated_ns = rotated_ns };
	skel->bss->in_flow = *fk;
	skel->bss->in_client_isn = client_isn;
	skel->bss->in_cookie = cookie;
	skel->bss->in_now_ns = now_ns;
	skel->bss->in_ts = ts;
	skel->bss->in_tsecr = tsecr;
	if (!run(skel->progs.test_cookie_check))
		return ~0u;
	return skel->bss->out_verdict;
}

/* Random option bits as the datapath builds them: any opts9 with timestamps, any opts4 without. */
static uint32_t random_opt_bits(bool ts)
{
	return rand32() & (ts ? COOKIE_OPT_MASK : COOKIE_NOTS_MASK);
}

static void check_make_matches_reference(int family, bool ts)
{
	struct flow_key fk;
	uint32_t cookie, tsval, want_cookie, want_tsval, mismatches = 0;

	if (!setup())
		return;
	for (int i = 0; i < RANDOM_CASES; i++) {
		uint32_t key_gen = rand32() % 7, client_isn = rand32(), opt_bits = random_opt_bits(ts);
		uint64_t now_ns = (uint64_t)rand32() << 24 | rand32();
		/* The rotation in this slot, the one before or after, or long ago (0). */
		uint64_t rotated = rand32() % 4 ? now_ns + SLOT_NS - rand32() % (2 * SLOT_NS) : 0;
		uint32_t slot = (uint32_t)(now_ns >> COOKIE_SLOT_SHIFT);
		uint32_t make_gen = ref_cookie_key_gen(key_gen, rotated, slot);

		random_flow(&fk, family);
		if (!bpf_make(key_gen, rotated, &fk, client_isn, now_ns, opt_bits, ts, &cookie,
			      &tsval) ||
		    !ASSERT_OK(ref_cookie_make(&keys[make_gen % ISN_KEY_SLOTS], &fk, client_isn, slot,
					       opt_bits, ts, &want_cookie, &want_tsval), "reference"))
			return;
		if (cookie != want_cookie || (ts && tsval != want_tsval)) {
			if (!mismatches++)
				FAIL("case %d: cookie %08x tsval %08x, reference %08x %08x", i, cookie,
				     tsval, want_cookie, want_tsval);
		}
	}
	ASSERT_EQ(mismatches, 0, "cookies differing from the reference");
}

TEST(test_cookie_ipv4_equals_reference) { check_make_matches_reference(4, false); }
TEST(test_cookie_ipv4_timestamps_equals_reference) { check_make_matches_reference(4, true); }
TEST(test_cookie_ipv6_equals_reference) { check_make_matches_reference(6, false); }
TEST(test_cookie_ipv6_timestamps_equals_reference) { check_make_matches_reference(6, true); }

/* A slot offset, a rotation age and a change to a valid ACK, drawn for one random check. */
static uint64_t random_rotation_age(void)
{
	switch (rand32() % 4) {
	case 0: return rand32() % 1000000;				/* just rotated */
	case 1: return COOKIE_LIFETIME_NS - 1 - rand32() % 1000;	/* lifetime nearly over */
	case 2: return COOKIE_LIFETIME_NS + rand32() % 1000;		/* just over */
	default: return ((uint64_t)rand32() << 8) % (4 * COOKIE_LIFETIME_NS);
	}
}

/*
 * Random ACKs, most of them near a valid one (made in a slot around now,
 * with the key generation of that slot or the one before or after it, then
 * perhaps a bit flipped or the cookie replaced): BPF's verdict and decoded
 * options equal the reference's. Both verdicts must come up, or the cases
 * prove little.
 */
static void check_verdicts_match_reference(int family, bool ts)
{
	uint32_t seen[2] = { 0 }, mismatches = 0;
	struct flow_key fk;

	if (!setup())
		return;
	for (int i = 0; i < RANDOM_CASES; i++) {
		uint32_t key_gen = rand32() % 6, opt_bits = random_opt_bits(ts);
		uint64_t now = (uint64_t)(10 + rand32() % 1000000) * SLOT_NS + rand32() % SLOT_NS;
		uint32_t slot = (uint32_t)(now >> COOKIE_SLOT_SHIFT) + 1 - rand32() % 4;
		uint64_t rotated = now - random_rotation_age();
		uint32_t make_gen = ref_cookie_key_gen(key_gen, rotated, slot);
		uint32_t client_isn = rand32(), cookie, tsval, verdict, want;
		struct ref_cookie_opts o;

		switch (rand32() % 6) {
		case 0: if (make_gen) make_gen--; break;
		case 1: make_gen++; break;
		}
		random_flow(&fk, family);
		if (!ASSERT_OK(ref_cookie_make(&keys[make_gen % ISN_KEY_SLOTS], &fk, client_isn, slot,
					       opt_bits, ts, &cookie, &tsval),
			       "reference"))
			return;
		switch (rand32() % 4) {
		case 0: cookie ^= 1u << (rand32() % 32); break;
		case 1: tsval ^= 1u << (rand32() % 32); break;
		case 2: if (rand32() % 8 == 0) cookie = rand32(); break;
		}
		want = ref_cookie_check(keys, key_gen, rotated, &fk, client_isn, cookie, now, ts,
					tsval, &o);
		verdict = bpf_check(key_gen, rotated, &fk, client_isn, cookie, now, ts, tsval);
		if (verdict == want && want == COOKIE_OK &&
		    (skel->bss->out_mss != o.mss || skel->bss->out_wscale_ok != o.wscale_ok ||
		     skel->bss->out_wscale != o.wscale || skel->bss->out_sack_ok != o.sack_ok ||
		     skel->bss->out_ecn_ok != o.ecn_ok))
			verdict = ~0u;
		if (verdict != want && !mismatches++)
			FAIL("case %d: key_gen %u made with %u, slot %u at %llu, rotated %llu: "
			     "BPF %d, reference %u", i, key_gen, make_gen, slot,
			     (unsigned long long)now, (unsigned long long)rotated, (int)verdict,
			     want);
		if (want < 2)
			seen[want]++;
	}
	ASSERT_EQ(mismatches, 0, "verdicts or options differing from the reference");
	test_log("ok %u, bad MAC %u", seen[COOKIE_OK], seen[COOKIE_BAD_MAC]);
	for (int v = 0; v < 2; v++)
		ASSERT_TRUE(seen[v] > 0, "every verdict among the cases");
}

TEST(test_cookie_check_ipv4_equals_reference) { check_verdicts_match_reference(4, false); }
TEST(test_cookie_check_ipv4_timestamps_equals_reference) { check_verdicts_match_reference(4, true); }
TEST(test_cookie_check_ipv6_equals_reference) { check_verdicts_match_reference(6, false); }
TEST(test_cookie_check_ipv6_timestamps_equals_reference) { check_verdicts_match_reference(6, true); }

/* A valid cookie made by the reference for slot, checked by BPF and the reference at now. */
static void expect_verdict(const char *what, uint32_t make_gen, uint32_t key_gen,
			   uint64_t rotated_ns, uint32_t slot, uint64_t now_ns, uint32_t want)
{
	struct ref_cookie_opts ref_opts = { .wscale = 7, .wscale_ok = true, .sack_ok = true };
	struct flow_key fk;
	uint32_t cookie, tsval, opt_bits = ref_cookie_opt_bits(6, &ref_opts, true);
	uint32_t client_isn = rand32();

	random_flow(&fk, 4);
	if (!ASSERT_OK(ref_cookie_make(&keys[make_gen % ISN_KEY_SLOTS], &fk, client_isn, slot,
				       opt_bits, true, &cookie, &tsval), "reference"))
		return;
	ASSERT_EQ(bpf_check(key_gen, rotated_ns, &fk, client_isn, cookie, now_ns, true, tsval),
		  want, what);
	ASSERT_EQ(ref_cookie_check(keys, key_gen, rotated_ns, &fk, client_isn, cookie, now_ns,
				   true, tsval, &ref_opts), want, what);
}

TEST(test_cookie_current_and_previous_slot_accepted_others_refused)
{
	uint32_t slot = 1000;
	uint64_t start = (uint64_t)slot * SLOT_NS;

	if (!setup())
		return;
	expect_verdict("same slot, its start", 0, 0, 0, slot, start, COOKIE_OK);
	expect_verdict("same slot, its end", 0, 0, 0, slot, start + SLOT_NS - 1, COOKIE_OK);
	expect_verdict("next slot", 0, 0, 0, slot, start + SLOT_NS, COOKIE_OK);
	expect_verdict("next slot, its end", 0, 0, 0, slot, start + 2 * SLOT_NS - 1, COOKIE_OK);
	/* Expired: no cookie of the two slots tried, so a bad MAC (nothing in it says its slot). */
	expect_verdict("two slots on", 0, 0, 0, slot, start + 2 * SLOT_NS, COOKIE_BAD_MAC);
	expect_verdict("three slots on", 0, 0, 0, slot, start + 3 * SLOT_NS, COOKIE_BAD_MAC);
	expect_verdict("a slot before it", 0, 0, 0, slot, start - 1, COOKIE_BAD_MAC);
	expect_verdict("four slots on", 0, 0, 0, slot, start + 4 * SLOT_NS, COOKIE_BAD_MAC);
	/*
	 * The first slot after boot: its previous one is slot 0xffffffff, as
	 * the reference counts. No client holds such a cookie, but a check
	 * must not turn the slot into a time past 64 bits (a freshly booted
	 * kernel, make test-kernels, found it).
	 */
	expect_verdict("the slot before slot 0", 0, 0, 0, 0xffffffffu, SLOT_NS / 2, COOKIE_OK);
}

/*
 * A rotation takes effect for cookies at the next slot: the slot it falls
 * in, and the slots before, keep the previous key, so a cookie made just
 * before it stays good for its whole life, and no slot has two keys.
 */
TEST(test_cookie_previous_key_accepted_for_a_lifetime_after_rotation)
{
	uint32_t slot = 5000;
	uint64_t start = (uint64_t)slot * SLOT_NS, now = start + 12345;

	if (!setup())
		return;
	expect_verdict("current key, rotated a slot before", 1, 1, now - SLOT_NS, slot, now,
		       COOKIE_OK);
	expect_verdict("previous key, rotated in this slot", 0, 1, now - 1000, slot, now, COOKIE_OK);
	expect_verdict("current key, rotated in this slot: not yet used", 1, 1, now - 1000, slot,
		       now, COOKIE_BAD_MAC);
	expect_verdict("previous key, rotated in the cookie's slot, the next slot's end", 0, 1,
		       start - 1000, slot - 1, start + SLOT_NS - 1, COOKIE_OK);
	expect_verdict("previous key, a slot after the rotation's", 0, 1, start - 1000, slot, now,
		       COOKIE_BAD_MAC);
	expect_verdict("previous key, lifetime over", 0, 1, start - SLOT_NS, slot - 2, now,
		       COOKIE_BAD_MAC);
	expect_verdict("no previous key before the first rotation", 1, 0, 0, slot, now,
		       COOKIE_BAD_MAC);
}

/*
 * `isnguard key rotate` stamps key_rotated_ns from CLOCK_MONOTONIC; the
 * datapath reads its now from bpf_ktime_get_coarse_ns(), which runs up to a
 * tick (1 to 10 ms) behind it. For that tick after a rotation now is below
 * the stamp; the rotation has happened all the same (key_gen says so), and
 * a cookie sent just before it, with the previous key, is still good, as
 * are those made in the tick: the slot of the stamp is the previous key's.
 */
TEST(test_cookie_previous_key_accepted_when_rotation_stamp_is_ahead_of_now)
{
	uint32_t slot = 5000;
	uint64_t now = (uint64_t)slot * SLOT_NS + 12345, end = (uint64_t)(slot + 1) * SLOT_NS - 1;

	if (!setup())
		return;
	expect_verdict("stamp 1 ns ahead", 0, 1, now + 1, slot, now, COOKIE_OK);
	expect_verdict("stamp a 4 ms tick ahead", 0, 1, now + 4000000, slot, now, COOKIE_OK);
	expect_verdict("stamp in the next slot, now at this one's end", 0, 1, end + 4000000, slot,
		       end, COOKIE_OK);
	expect_verdict("current key, stamp ahead: not yet used", 1, 1, now + 4000000, slot, now,
		       COOKIE_BAD_MAC);
}

/* BPF's verdict on (cookie, tsecr, client ISN) at now, and the reference's. */
static bool verdicts_agree(const struct flow_key *fk, uint32_t client_isn, uint32_t cookie,
			   uint64_t now, bool ts, uint32_t tsecr, uint32_t *verdict)
{
	struct ref_cookie_opts ref_opts;
	uint32_t want = ref_cookie_check(keys, 0, 0, fk, client_isn, cookie, now, ts, tsecr,
					 &ref_opts);

	*verdict = bpf_check(0, 0, fk, client_isn, cookie, now, ts, tsecr);
	return *verdict == want;
}

/*
 * Each of the 32 bits of the cookie, of TSecr (with timestamps) and of the
 * client ISN, flipped alone: refused, with the reason the reference gives
 * (the clear bits say expired or unknown key; any other, bad MAC).
 */
static void check_every_bit(int family, bool ts)
{
	struct ref_cookie_opts opts = { .wscale = ts ? 9 : 8, .wscale_ok = true, .sack_ok = true,
					.ecn_ok = ts };
	uint64_t now = 777 * SLOT_NS + 99;
	uint32_t cookie, tsval, verdict, client_isn = 0x12345678, accepted = 0, disagreed = 0;
	struct flow_key fk;

	if (!setup())
		return;
	random_flow(&fk, family);
	if (!ASSERT_OK(ref_cookie_make(&keys[0], &fk, client_isn, 777,
				       ref_cookie_opt_bits(3, &opts, ts), ts, &cookie, &tsval),
		       "reference"))
		return;
	if (!ASSERT_EQ(bpf_check(0, 0, &fk, client_isn, cookie, now, ts, tsval), COOKIE_OK,
		       "the unchanged cookie"))
		return;
	for (int bit = 0; bit < 32; bit++) {
		const uint32_t flip = 1u << bit;
		const struct { uint32_t isn, cookie, tsecr; bool on; } changes[] = {
			{ client_isn, cookie ^ flip, tsval, true },
			{ client_isn, cookie, tsval ^ flip, ts },
			{ client_isn ^ flip, cookie, tsval, true },
		};

		for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
			if (!changes[i].on)
				continue;
			if (!verdicts_agree(&fk, changes[i].isn, changes[i].cookie, now, ts,
					    changes[i].tsecr, &verdict) && !disagreed++)
				FAIL("bit %d of %s: BPF says %u, the reference does not", bit,
				     i == 0 ? "the cookie" : i == 1 ? "TSecr" : "the client ISN",
				     verdict);
			accepted += verdict == COOKIE_OK;
		}
	}
	/* Whether timestamps were negotiated is in the MAC: the same ACK the other way is refused. */
	accepted += bpf_check(0, 0, &fk, client_isn, cookie, now, !ts, tsval) == COOKIE_OK;
	ASSERT_EQ(accepted, 0, "single-bit changes of cookie, TSecr or client ISN accepted");
	ASSERT_EQ(disagreed, 0, "verdicts differing from the reference");
}

TEST(test_cookie_every_bit_is_authenticated_ipv4) { check_every_bit(4, false); }
TEST(test_cookie_every_bit_is_authenticated_ipv4_timestamps) { check_every_bit(4, true); }
TEST(test_cookie_every_bit_is_authenticated_ipv6) { check_every_bit(6, false); }
TEST(test_cookie_every_bit_is_authenticated_ipv6_timestamps) { check_every_bit(6, true); }

static void check_decoding(bool ts)
{
	uint64_t now = 31 * SLOT_NS;
	uint32_t last = ts ? COOKIE_OPT_MASK : COOKIE_NOTS_MASK;
	struct flow_key fk;

	for (uint32_t opt_bits = 0; opt_bits <= last; opt_bits++) {
		struct ref_cookie_opts want;
		uint32_t cookie, tsval, client_isn = rand32();

		random_flow(&fk, opt_bits & 1 ? 6 : 4);
		if (ref_cookie_make(&keys[0], &fk, client_isn, 31, opt_bits, ts, &cookie, &tsval) ||
		    ref_cookie_check(keys, 0, 0, &fk, client_isn, cookie, now, ts, tsval, &want) !=
			    COOKIE_OK) {
			FAIL("reference refuses its own cookie, options %#x", opt_bits);
			return;
		}
		if (bpf_check(0, 0, &fk, client_isn, cookie, now, ts, tsval) != COOKIE_OK ||
		    skel->bss->out_mss != want.mss || skel->bss->out_wscale_ok != want.wscale_ok ||
		    skel->bss->out_wscale != want.wscale || skel->bss->out_sack_ok != want.sack_ok ||
		    skel->bss->out_ecn_ok != want.ecn_ok) {
			FAIL("options %#x: BPF decodes mss %u ws %u/%u sack %u ecn %u, reference "
			     "mss %u ws %u/%u sack %u ecn %u", opt_bits, skel->bss->out_mss,
			     skel->bss->out_wscale_ok, skel->bss->out_wscale, skel->bss->out_sack_ok,
			     skel->bss->out_ecn_ok, want.mss, want.wscale_ok, want.wscale,
			     want.sack_ok, want.ecn_ok);
			return;
		}
	}
}

TEST(test_cookie_decodes_the_options_it_carries_with_timestamps)
{
	if (setup())
		check_decoding(true);
}

TEST(test_cookie_decodes_the_options_it_carries_without_timestamps)
{
	if (setup())
		check_decoding(false);
}

/*
 * Every limit 0..65535, both families, both tables: BPF picks what the
 * reference picks, and that is the rule itself: the entry is not above the
 * limit (or is the smallest, when all are) and the next one is.
 */
TEST(test_cookie_mss_index_is_largest_entry_not_above_limit)
{
	if (!setup())
		return;
	for (int ts = 0; ts <= 1; ts++) {
		for (int family = 4; family <= 6; family += 2) {
			unsigned int entries = ts ? COOKIE_MSS_ENTRIES : COOKIE_NOTS_MSS_ENTRIES;
			uint32_t wrong = 0;

			test_case_begin("ipv%d_%s", family, ts ? "timestamps" : "no_timestamps");
			skel->bss->in_flow.family = (uint8_t)family;
			skel->bss->in_ts = (uint32_t)ts;
			if (!run(skel->progs.test_cookie_mss_table))
				return;
			for (uint32_t limit = 0; limit <= 0xffff; limit++) {
				unsigned int index = skel->bss->out_mss_table[limit];
				unsigned int want = ref_cookie_mss_index(family, limit, ts);
				bool rule = (index == 0 || ref_cookie_mss(family, index, ts) <= limit) &&
					    (index + 1 >= entries ||
					     ref_cookie_mss(family, index + 1, ts) > limit);

				if ((index != want || !rule) && !wrong++)
					FAIL("limit %u: BPF index %u, reference %u", limit, index,
					     want);
			}
			ASSERT_EQ(wrong, 0, "limits with another index");
		}
	}
	test_case_end();
	ASSERT_EQ(ref_cookie_mss_index(4, 1460, true), 6, "1460 is entry 6");
	ASSERT_EQ(ref_cookie_mss(4, ref_cookie_mss_index(4, 1459, true), true), 1440,
		  "1459 rounds down");
	ASSERT_EQ(ref_cookie_mss(4, ref_cookie_mss_index(4, 1400, false), false), 1300,
		  "1400 rounds down to the 1300 class without timestamps");
	ASSERT_EQ(ref_cookie_mss(6, ref_cookie_mss_index(6, 100, true), true), 1220,
		  "below every entry: the smallest");
}

/*
 * A million ACKs with random seq, ack and TSecr against one tuple, half of
 * them claiming timestamps, just after a rotation: 2^-30 per ACK without
 * timestamps, 2^-54 with, so about 0.0005 expected; none may pass. The ACKs
 * come from a fixed seed, so the run repeats exactly.
 */
TEST(test_cookie_million_random_acks_none_accepted)
{
	struct flow_key fk;

	if (!setup())
		return;
	random_flow(&fk, 4);
	skel->bss->in_config = (struct isn_config){ .key_gen = 1, .key_rotated_ns = 100 * SLOT_NS };
	skel->bss->in_flow = fk;
	skel->bss->in_now_ns = 100 * SLOT_NS + 5;
	skel->bss->in_rounds = FORGED_ACKS;
	skel->bss->in_seed = 0x5eed1e55f00dull;
	skel->bss->out_accepted = 0;
	skel->bss->out_tried = 0;
	memset(skel->bss->out_forged_verdicts, 0, sizeof(skel->bss->out_forged_verdicts));
	if (!run(skel->progs.test_cookie_forged))
		return;
	ASSERT_EQ(skel->bss->out_tried, FORGED_ACKS, "random ACKs checked");
	ASSERT_EQ(skel->bss->out_accepted, 0, "random ACKs accepted");
	printf("#   %u random ACKs checked in BPF, %u accepted (%u bad MAC)\n",
	       skel->bss->out_tried, skel->bss->out_accepted,
	       skel->bss->out_forged_verdicts[COOKIE_BAD_MAC]);
	ASSERT_EQ(skel->bss->out_forged_verdicts[COOKIE_BAD_MAC], FORGED_ACKS,
		  "every random ACK refused by the MAC");
}

/*
 * Chosen ACKs at now, in BPF: cookies (start + i) << CHOSEN_FREE_SHIFT,
 * their low bits copied from copied, for i below count (in runs bpf_loop
 * allows). *accepted counts those the check takes, *last the last of them.
 */
#define CHOSEN_FREE_SHIFT 7
#define BPF_LOOP_MAX (1u << 23)

static bool bpf_chosen(const struct flow_key *fk, uint32_t client_isn, uint64_t now,
		       uint32_t copied, uint32_t start, uint32_t count, uint32_t *accepted,
		       uint32_t *last)
{
	skel->bss->in_config = (struct isn_config){ 0 };
	skel->bss->in_flow = *fk;
	skel->bss->in_client_isn = client_isn;
	skel->bss->in_now_ns = now;
	skel->bss->in_cookie = copied;
	skel->bss->in_free_shift = CHOSEN_FREE_SHIFT;
	skel->bss->out_accepted = 0;
	skel->bss->out_tried = 0;
	skel->bss->out_accepted_cookie = 0;
	for (uint32_t done = 0; done < count; done += BPF_LOOP_MAX) {
		skel->bss->in_start = start + done;
		skel->bss->in_rounds = count - done < BPF_LOOP_MAX ? count - done : BPF_LOOP_MAX;
		if (!run(skel->progs.test_cookie_chosen))
			return false;
	}
	*accepted = skel->bss->out_accepted;
	*last = skel->bss->out_accepted_cookie;
	return ASSERT_EQ(skel->bss->out_tried, count, "chosen ACKs checked");
}

/*
 * Issue 17's attack on a client without timestamps: the attacker solicits
 * a SYN-ACK for a tuple of his own, reads every bit of its cookie that the
 * format leaves in clear, and sends ACKs for another tuple (a spoofed one)
 * with those bits copied, trying every value of the others. Before, the
 * low 7 bits were in clear (key generation, slot, options), so the 2^25
 * ACKs over the other bits held the victim's cookie, always: one accepted,
 * 2^-25 per chosen ACK. Now the option bit (bit 0) is the only bit in
 * clear: copying the low 7 bits, each of the two valid cookies (this slot's,
 * the previous one's) lies in the 2^25 only if its bits 1-6, MAC bits of
 * another tuple, equal the attacker's: 2 x 2^-6, 1/32. The key and tuples
 * are fixed, so the run repeats; here none is accepted.
 */
TEST(test_cookie_chosen_acks_after_a_solicited_synack_find_no_cookie)
{
	struct ref_cookie_opts windows = { .wscale = COOKIE_NOTS_WSCALE, .wscale_ok = true,
					   .sack_ok = true };
	uint32_t opt_bits = ref_cookie_opt_bits(ref_cookie_mss_index(4, 1460, false), &windows,
						false);
	uint32_t client_isn = 0x5eed0001, solicited, victim_cookie, tsval, accepted, last;
	uint64_t now = 1000 * SLOT_NS + SLOT_NS / 2;
	struct flow_key attacker, victim;

	if (!setup())
		return;
	random_flow(&attacker, 4);
	random_flow(&victim, 4);
	if (!bpf_make(0, 0, &attacker, client_isn, now, opt_bits, false, &solicited, &tsval) ||
	    !bpf_make(0, 0, &victim, client_isn, now, opt_bits, false, &victim_cookie, &tsval))
		return;
	/* The control: the victim's own low bits copied, a run around its cookie finds it. */
	if (!bpf_chosen(&victim, client_isn, now, victim_cookie,
			(victim_cookie >> CHOSEN_FREE_SHIFT) & ~1023u, 1024, &accepted, &last))
		return;
	ASSERT_EQ(accepted, 1, "the victim's cookie, its own low bits copied");
	ASSERT_EQ(last, victim_cookie, "the cookie accepted");

	if (!bpf_chosen(&victim, client_isn, now, solicited, 0, 1u << (32 - CHOSEN_FREE_SHIFT),
			&accepted, &last))
		return;
	printf("#   %u chosen ACKs for another tuple, the low %d bits of a solicited SYN-ACK's "
	       "cookie copied: %u accepted\n", 1u << (32 - CHOSEN_FREE_SHIFT), CHOSEN_FREE_SHIFT,
	       accepted);
	ASSERT_EQ(accepted, 0, "chosen ACKs accepted");
}
