/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Parsing of command-line values: keys, endpoints, numbers. Each returns 0 or -EINVAL and a reason. */
#ifndef ISNGUARD_PARSE_H
#define ISNGUARD_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include "isnguard.h"

/* An address and port; addr in network byte order, IPv4 in the first 4 bytes. */
struct endpoint {
	uint8_t family;		/* enum flow_family */
	uint8_t addr[16];
	uint16_t port;		/* host byte order */
};

/* why receives a short reason on failure; it may be NULL. */
int parse_key_hex(const char *text, struct isn_key *key, const char **why);
int parse_endpoint(const char *text, struct endpoint *ep, const char **why);
int parse_u32(const char *text, uint32_t *value, const char **why);

/* Formats like the input: a.b.c.d:port or [v6]:port. */
void format_endpoint(const struct endpoint *ep, char *buf, size_t len);

/* The flow key of a connection between local and remote (same family). */
int flow_key_from_endpoints(const struct endpoint *local,
			    const struct endpoint *remote, struct flow_key *fk);

#endif /* ISNGUARD_PARSE_H */
