/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reference SYN cookie on OpenSSL libcrypto, written from the format in
 * include/isnguard.h and sharing no code with bpf/cookie.h. The tests hold
 * the datapath's SYN-ACKs and verdicts equal to it bit for bit.
 */
#ifndef ISNGUARD_COOKIE_REF_H
#define ISNGUARD_COOKIE_REF_H

#include <stdbool.h>
#include <stdint.h>
#include "isnguard.h"

struct ref_cookie_opts {
	uint16_t mss;
	uint8_t wscale;		/* the client's shift, when wscale_ok */
	bool wscale_ok;
	bool sack_ok;
	bool ecn_ok;
};

/* MSS of table entry index for the family (4 or 6): the 8-entry table with timestamps, else the 2 classes. */
uint16_t ref_cookie_mss(int family, unsigned int index, bool ts);
/* The largest entry not above limit, else 0. */
unsigned int ref_cookie_mss_index(int family, uint32_t limit, bool ts);
/*
 * The option bits for an MSS index and options: opts9 with timestamps
 * (wscale clamped to 14); without, opts1: 1 for MSS class 1 with SACK and
 * window scale 8, else 0.
 */
uint32_t ref_cookie_opt_bits(unsigned int mss_index, const struct ref_cookie_opts *o, bool ts);
/* What option bits say: the options the SYN-ACK offers and a valid ACK gives the connection. */
void ref_cookie_decode(int family, uint32_t opt_bits, bool ts, struct ref_cookie_opts *o);
/*
 * The key generation the cookies of slot are made with: key_gen, or the
 * previous one for the slot key_rotated_ns falls in and those before.
 */
uint32_t ref_cookie_key_gen(uint32_t key_gen, uint64_t key_rotated_ns, uint32_t slot);

/* h of the format: SipHash-2-4(key, T || client ISN || slot || options word). */
int ref_cookie_hash(const struct isn_key *key, const struct flow_key *fk, uint32_t client_isn,
		    uint32_t slot, uint32_t opt_word, uint64_t *h);

/* The cookie and, with ts, the SYN-ACK's TSval, for slot (CLOCK_MONOTONIC >> 36) with key. */
int ref_cookie_make(const struct isn_key *key, const struct flow_key *fk, uint32_t client_isn,
		    uint32_t slot, uint32_t opt_bits, bool ts, uint32_t *cookie, uint32_t *tsval);

/*
 * The verdict on an ACK's cookie (its ack - 1) at now_ns, keys[] by slot
 * (key_gen % ISN_KEY_SLOTS is current, key_rotated_ns the latest
 * rotation); decodes the options when valid. Accepted: the cookie of now's
 * slot or of the one before, each with its slot's key (ref_cookie_key_gen).
 */
enum cookie_verdict ref_cookie_check(const struct isn_key keys[ISN_KEY_SLOTS],
				     uint32_t key_gen, uint64_t key_rotated_ns,
				     const struct flow_key *fk, uint32_t client_isn,
				     uint32_t cookie, uint64_t now_ns, bool ts, uint32_t tsecr,
				     struct ref_cookie_opts *o);

#endif /* ISNGUARD_COOKIE_REF_H */
