// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "isn_ref.h"

const char *const isn_hash_choices[ISN_HASH_COUNT + 1] = {
	[ISN_HASH_SIPHASH] = "siphash",
	[ISN_HASH_MD5] = "md5",
	[ISN_HASH_NONE] = "none",
	NULL,
};

const char *isn_hash_name(enum isn_hash hash)
{
	return (unsigned)hash < ISN_HASH_COUNT ? isn_hash_choices[hash] : "unknown";
}

int isn_hash_from_name(const char *name)
{
	for (int i = 0; i < ISN_HASH_COUNT; i++)
		if (strcmp(name, isn_hash_choices[i]) == 0)
			return i;
	return -1;
}

int ref_siphash24(const struct isn_key *key, const void *msg, size_t len,
		  uint64_t *out)
{
	/* OpenSSL's default SipHash output is 16 bytes; the ISN uses the 8-byte one. */
	unsigned int out_size = 8;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_SIZE, &out_size),
		OSSL_PARAM_construct_end(),
	};
	uint8_t tag[8];
	size_t tag_len = 0;
	EVP_MAC_CTX *ctx = NULL;
	EVP_MAC *mac;
	int err = -EIO;

	mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	if (!mac)
		return -ENOSYS;
	ctx = EVP_MAC_CTX_new(mac);
	if (ctx && EVP_MAC_init(ctx, key->bytes, ISN_KEY_LEN, params) &&
	    EVP_MAC_update(ctx, msg, len) &&
	    EVP_MAC_final(ctx, tag, &tag_len, sizeof(tag)) && tag_len == 8) {
		uint64_t v = 0;

		for (int i = 7; i >= 0; i--)
			v = v << 8 | tag[i];
		*out = v;
		err = 0;
	}
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return err;
}

int ref_md5(const void *msg, size_t len, uint8_t digest[MD5_DIGEST_LEN])
{
	unsigned int digest_len = 0;

	if (!EVP_Digest(msg, len, digest, &digest_len, EVP_md5(), NULL) ||
	    digest_len != MD5_DIGEST_LEN)
		return -EIO;
	return 0;
}

size_t ref_isn_tuple(const struct flow_key *fk, uint8_t *buf)
{
	size_t addr_len;

	switch (fk->family) {
	case FLOW_FAMILY_IPV4:
		addr_len = 4;
		break;
	case FLOW_FAMILY_IPV6:
		addr_len = 16;
		break;
	default:
		return 0;
	}
	memcpy(buf, fk->local_addr, addr_len);
	memcpy(buf + addr_len, &fk->local_port, 2);
	memcpy(buf + addr_len + 2, fk->remote_addr, addr_len);
	memcpy(buf + 2 * addr_len + 2, &fk->remote_port, 2);
	return 2 * addr_len + 4;
}

int ref_isn_f(enum isn_hash hash, const struct isn_key *key,
	      const struct flow_key *fk, uint32_t *f)
{
	uint8_t msg[ISN_TUPLE6_LEN + ISN_KEY_LEN];
	uint8_t digest[MD5_DIGEST_LEN];
	size_t len = ref_isn_tuple(fk, msg);
	uint64_t sip;
	int err;

	if (!len)
		return -EAFNOSUPPORT;
	switch (hash) {
	case ISN_HASH_SIPHASH:
		err = ref_siphash24(key, msg, len, &sip);
		if (!err)
			*f = (uint32_t)sip;
		return err;
	case ISN_HASH_MD5:
		memcpy(msg + len, key->bytes, ISN_KEY_LEN);
		err = ref_md5(msg, len + ISN_KEY_LEN, digest);
		if (!err)
			*f = (uint32_t)digest[0] | (uint32_t)digest[1] << 8 |
			     (uint32_t)digest[2] << 16 | (uint32_t)digest[3] << 24;
		return err;
	case ISN_HASH_NONE:
		*f = 0;
		return 0;
	default:
		return -EINVAL;
	}
}

uint32_t ref_isn_ticks(uint64_t mono_ns)
{
	return (uint32_t)(mono_ns / ISN_TICK_NS);
}
