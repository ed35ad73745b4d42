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
		return family == FLOW_FAMILY_IPV4 ? nots_mss4[index % 4] : nots_mss6[index % 4];
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

	if (!ts)	/* MSS class, SACK at bit 2, window scale 8 at bit 3 */
		return (mss_index & 3u) | (o->sack_ok ? 1u << 2 : 0) |
		       (o->wscale_ok && wscale == 8 ? 1u << 3 : 0);
	return (mss_index & 7u) | (o->wscale_ok ? (wscale + 1) << 3 : 0) |
	       (o->sack_ok ? 1u << 7 : 0) | (o->ecn_ok ? 1u << 8 : 0);
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

int ref_cookie_make(const struct isn_key *key, uint32_t key_gen, const struct flow_key *fk,
		    uint32_t client_isn, uint32_t slot, uint32_t opt_bits, bool ts,
		    uint32_t *cookie, uint32_t *tsval)
{
	uint32_t word = ts ? (opt_bits & 0x1ff) | 1u << 9 : opt_bits & 0xf;
	uint32_t clear = (key_gen % 2) | (slot % 4) << 1;
	uint64_t h;

	if (ref_cookie_hash(key, fk, client_isn, slot, word, &h))
		return -1;
	if (ts) {
		/* bits 31-3 of the cookie from h's top half; TSval: h's bits 31-9, then the options */
		*cookie = ((uint32_t)(h >> 32) & ~7u) | clear;
		*tsval = ((uint32_t)h & ~0x1ffu) | (opt_bits & 0x1ff);
	} else {
		*cookie = ((uint32_t)(h >> 32) & ~0x7fu) | (opt_bits & 0xf) << 3 | clear;
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
	uint32_t now_slot = (uint32_t)(now_ns >> 36), slot, gen = key_gen;
	uint32_t opt_bits = ts ? tsecr & 0x1ff : (cookie >> 3) & 0xf;
	uint32_t want_cookie, want_tsval;

	if (((cookie >> 1) & 3) == now_slot % 4)
		slot = now_slot;
	else if (((cookie >> 1) & 3) == (now_slot - 1) % 4)
		slot = now_slot - 1;
	else
		return COOKIE_EXPIRED;
	if ((cookie & 1) != key_gen % 2) {
		/*
		 * The previous key: until a cookie lifetime (2 slots) after the
		 * rotation. key_gen says the rotation has happened, so a stamp
		 * later than now (taken on a clock ahead of the one now is read
		 * from) means it has only just happened.
		 */
		if (key_gen == 0 || now_ns >= key_rotated_ns + 2 * (1ULL << 36))
			return COOKIE_UNKNOWN_KEY;
		gen = key_gen - 1;
	}
	if (ref_cookie_make(&keys[gen % ISN_KEY_SLOTS], gen, fk, client_isn, slot, opt_bits, ts,
			    &want_cookie, &want_tsval))
		return COOKIE_BAD_MAC;
	if (want_cookie != cookie || (ts && want_tsval != tsecr))
		return COOKIE_BAD_MAC;
	memset(o, 0, sizeof(*o));
	if (!ts) {
		o->mss = ref_cookie_mss(fk->family, opt_bits & 3, false);
		o->sack_ok = opt_bits & (1u << 2);
		o->wscale_ok = opt_bits & (1u << 3);
		o->wscale = o->wscale_ok ? 8 : 0;
		return COOKIE_OK;
	}
	o->mss = ref_cookie_mss(fk->family, opt_bits & 7, true);
	o->wscale_ok = ((opt_bits >> 3) & 0xf) != 0;
	o->wscale = o->wscale_ok ? (uint8_t)(((opt_bits >> 3) & 0xf) - 1) : 0;
	o->sack_ok = opt_bits & (1u << 7);
	o->ecn_ok = opt_bits & (1u << 8);
	return COOKIE_OK;
}
