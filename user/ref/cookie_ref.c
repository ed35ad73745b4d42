// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>

#include "cookie_ref.h"
#include "isn_ref.h"

static const uint16_t mss4[COOKIE_MSS_ENTRIES] = COOKIE_MSS4_TABLE;
static const uint16_t mss6[COOKIE_MSS_ENTRIES] = COOKIE_MSS6_TABLE;
static const uint16_t nots_mss4[COOKIE_NOTS_MSS_ENTRIES] = COOKIE_NOTS_MSS4_TABLE;
static const uint16_t nots_mss6[COOKIE_NOTS_MSS_ENTRIES] = COOKIE_NOTS_MSS6_TABLE;

uint16_t ref_cookie_mss(int family, unsigned int index, bool ts)
{
	if (!ts)
		return family == FLOW_FAMILY_IPV4 ? nots_mss4[index % 2] : nots_mss6[index % 2];
	return family == FLOW_FAMILY_IPV4 ? mss4[index % 8] : mss6[index % 8];
}

unsigned int ref_cookie_mss_index(int family, uint32_t limit, bool ts)
{
	unsigned int best = 0, entries = ts ? COOKIE_MSS_ENTRIES : COOKIE_NOTS_MSS_ENTRIES;

	for (unsigned int i = 0; i < entries; i++)
		if (ref_cookie_mss(family, i, ts) <= limit)
			best = i;
	return best;
}

uint32_t ref_cookie_opt_bits(unsigned int mss_index, const struct ref_cookie_opts *o, bool ts)
{
	uint32_t wscale = o->wscale > COOKIE_TCP_WSCALE_MAX ? COOKIE_TCP_WSCALE_MAX : o->wscale;

	if (!ts)	/* one bit: MSS class 1 with SACK and window scale 8, or nothing */
		return mss_index % 2 == 1 && o->sack_ok && o->wscale_ok && wscale == 8;
	return (mss_index & 7u) | (o->wscale_ok ? (wscale + 1) << 3 : 0) |
	       (o->sack_ok ? 1u << 7 : 0) | (o->ecn_ok ? 1u << 8 : 0);
}

void ref_cookie_decode(int family, uint32_t opt_bits, bool ts, struct ref_cookie_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (!ts) {
		bool full = opt_bits & 1;

		o->mss = ref_cookie_mss(family, full ? 1 : 0, false);
		o->sack_ok = full;
		o->wscale_ok = full;
		o->wscale = full ? 8 : 0;
		return;
	}
	o->mss = ref_cookie_mss(family, opt_bits & 7, true);
	o->wscale_ok = ((opt_bits >> 3) & 0xf) != 0;
	o->wscale = o->wscale_ok ? (uint8_t)(((opt_bits >> 3) & 0xf) - 1) : 0;
	o->sack_ok = opt_bits & (1u << 7);
	o->ecn_ok = opt_bits & (1u << 8);
}

uint32_t ref_cookie_key_gen(uint32_t key_gen, uint64_t key_rotated_ns, uint32_t slot)
{
	uint32_t rotated_slot = (uint32_t)(key_rotated_ns >> 36);

	/* The slot of the rotation and those before it: the previous key (signed, for slot -1). */
	if (key_gen > 0 && (int32_t)(slot - rotated_slot) <= 0)
		return key_gen - 1;
	return key_gen;
}

int ref_cookie_hash(const struct isn_key *key, const struct flow_key *fk, uint32_t client_isn,
		    uint32_t slot, uint32_t opt_word, uint64_t *h)
{
	uint8_t msg[ISN_TUPLE6_LEN + 12];
	size_t len = ref_isn_tuple(fk, msg);

	if (!len)
		return -1;
	/* client ISN big-endian, then slot and options little-endian */
	msg[len++] = (uint8_t)(client_isn >> 24);
	msg[len++] = (uint8_t)(client_isn >> 16);
	msg[len++] = (uint8_t)(client_isn >> 8);
	msg[len++] = (uint8_t)client_isn;
	for (int i = 0; i < 4; i++)
		msg[len++] = (uint8_t)(slot >> (8 * i));
	for (int i = 0; i < 4; i++)
		msg[len++] = (uint8_t)(opt_word >> (8 * i));
	return ref_siphash24(key, msg, len, h);
}

int ref_cookie_make(const struct isn_key *key, const struct flow_key *fk, uint32_t client_isn,
		    uint32_t slot, uint32_t opt_bits, bool ts, uint32_t *cookie, uint32_t *tsval)
{
	uint32_t word = ts ? (opt_bits & 0x1ff) | 1u << 9 : opt_bits & 1;
	uint64_t h;

	if (ref_cookie_hash(key, fk, client_isn, slot, word, &h))
		return -1;
	if (ts) {
		/* the cookie: h's top half; TSval: h's bits 31-9, then the options */
		*cookie = (uint32_t)(h >> 32);
		*tsval = ((uint32_t)h & ~0x1ffu) | (opt_bits & 0x1ff);
	} else {
		/* bits 31-1 from h's top half, bit 0 the option bit */
		*cookie = ((uint32_t)(h >> 32) & ~1u) | (opt_bits & 1);
		*tsval = 0;
	}
	return 0;
}

enum cookie_verdict ref_cookie_check(const struct isn_key keys[ISN_KEY_SLOTS],
				     uint32_t key_gen, uint64_t key_rotated_ns,
				     const struct flow_key *fk, uint32_t client_isn,
				     uint32_t cookie, uint64_t now_ns, bool ts, uint32_t tsecr,
				     struct ref_cookie_opts *o)
{
	uint32_t now_slot = (uint32_t)(now_ns >> 36);
	uint32_t opt_bits = ts ? tsecr & 0x1ff : cookie & 1;

	/* This slot's cookie or the previous one's, each with the key its slot's cookies have. */
	for (uint32_t back = 0; back < 2; back++) {
		uint32_t slot = now_slot - back, want_cookie, want_tsval;
		uint32_t gen = ref_cookie_key_gen(key_gen, key_rotated_ns, slot);

		if (ref_cookie_make(&keys[gen % ISN_KEY_SLOTS], fk, client_isn, slot, opt_bits, ts,
				    &want_cookie, &want_tsval))
			return COOKIE_BAD_MAC;
		if (want_cookie == cookie && (!ts || want_tsval == tsecr)) {
			ref_cookie_decode(fk->family, opt_bits, ts, o);
			return COOKIE_OK;
		}
	}
	return COOKIE_BAD_MAC;
}
