/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reference ISN functions on OpenSSL libcrypto: an implementation of the
 * definition in bpf/isn.h that shares no code with it. The CLI prints these;
 * the tests hold the BPF output equal to them bit for bit.
 */
#ifndef ISNGUARD_ISN_REF_H
#define ISNGUARD_ISN_REF_H

#include <stddef.h>
#include <stdint.h>
#include "isnguard.h"

#define MD5_DIGEST_LEN 16

/* SipHash-2-4 with 8-byte output, returned as the little-endian u64. */
int ref_siphash24(const struct isn_key *key, const void *msg, size_t len,
		  uint64_t *out);
int ref_md5(const void *msg, size_t len, uint8_t digest[MD5_DIGEST_LEN]);

/* T of RFC 6528 for fk into buf (>= ISN_TUPLE6_LEN bytes); returns its length, 0 on a bad family. */
size_t ref_isn_tuple(const struct flow_key *fk, uint8_t *buf);

/* F for the mode; 0 on success, negative errno on failure. */
int ref_isn_f(enum isn_hash hash, const struct isn_key *key,
	      const struct flow_key *fk, uint32_t *f);

/* M from a CLOCK_MONOTONIC ns value. */
uint32_t ref_isn_ticks(uint64_t mono_ns);

const char *isn_hash_name(enum isn_hash hash);
/* The names by enum value, NULL-terminated (the --hash choices). */
extern const char *const isn_hash_choices[];
/* Returns the mode for a name, or -1. */
int isn_hash_from_name(const char *name);

#endif /* ISNGUARD_ISN_REF_H */
