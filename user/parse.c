// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int parse_key_hex(const char *text, struct isn_key *key, const char **why)
{
	struct isn_key parsed;
	size_t len = strlen(text);

	if (len != 2 * ISN_KEY_LEN)
		return fail(why, "expected 32 hex digits (128 bits)");
	for (size_t i = 0; i < ISN_KEY_LEN; i++) {
		int hi = hex_value((unsigned char)text[2 * i]);
		int lo = hex_value((unsigned char)text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return fail(why, "not a hex digit");
		parsed.bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	*key = parsed;
	return 0;
}

int parse_u32(const char *text, uint32_t *value, const char **why)
{
	unsigned long long v;
	char *end;

	if (!*text || *text == '-' || isspace((unsigned char)*text))
		return fail(why, "expected an unsigned number");
	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || *end)
		return fail(why, "expected an unsigned number");
	if (v > UINT32_MAX)
		return fail(why, "larger than 2^32 - 1");
	*value = (uint32_t)v;
	return 0;
}

static int parse_port(const char *text, uint16_t *port, const char **why)
{
	uint32_t v;

	for (const char *p = text; *p; p++)
		if (!isdigit((unsigned char)*p))
			return fail(why, "port is not a decimal number");
	if (!*text || parse_u32(text, &v, NULL) || v > 65535)
		return fail(why, "port must be 0-65535");
	*port = (uint16_t)v;
	return 0;
}

int parse_endpoint(const char *text, struct endpoint *ep, const char **why)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port_text;
	struct endpoint parsed = { 0 };
	size_t host_len;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return fail(why, "expected [IPv6]:PORT");
		host_len = (size_t)(close - text - 1);
		if (host_len >= sizeof(host))
			return fail(why, "bad IPv6 address");
		memcpy(host, text + 1, host_len);
		host[host_len] = '\0';
		if (inet_pton(AF_INET6, host, parsed.addr) != 1)
			return fail(why, "bad IPv6 address");
		parsed.family = FLOW_FAMILY_IPV6;
		port_text = close + 2;
	} else {
		const char *colon = strchr(text, ':');

		if (!colon)
			return fail(why, "expected ADDR:PORT");
		if (strchr(colon + 1, ':'))
			return fail(why, "IPv6 addresses go in brackets: [ADDR]:PORT");
		host_len = (size_t)(colon - text);
		if (host_len >= sizeof(host))
			return fail(why, "bad IPv4 address");
		memcpy(host, text, host_len);
		host[host_len] = '\0';
		if (inet_pton(AF_INET, host, parsed.addr) != 1)
			return fail(why, "bad IPv4 address");
		parsed.family = FLOW_FAMILY_IPV4;
		port_text = colon + 1;
	}
	if (parse_port(port_text, &parsed.port, why))
		return -EINVAL;
	*ep = parsed;
	return 0;
}

void format_endpoint(const struct endpoint *ep, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ep->family == FLOW_FAMILY_IPV6) {
		inet_ntop(AF_INET6, ep->addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ep->port);
	} else {
		inet_ntop(AF_INET, ep->addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ep->port);
	}
}

int flow_key_from_endpoints(const struct endpoint *local,
			    const struct endpoint *remote, struct flow_key *fk)
{
	if (local->family != remote->family)
		return -EAFNOSUPPORT;
	memset(fk, 0, sizeof(*fk));
	fk->family = local->family;
	memcpy(fk->local_addr, local->addr, sizeof(fk->local_addr));
	memcpy(fk->remote_addr, remote->addr, sizeof(fk->remote_addr));
	fk->local_port = htons(local->port);
	fk->remote_port = htons(remote->port);
	return 0;
}
