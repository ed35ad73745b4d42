// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN proxy's port lists as users write them (`--synproxy 80,443,8000-8080`,
 * `synproxy PORTS`, the config file's `synproxy` key) and as status and
 * synproxy print them: the 65536-bit set of isn_synproxy_ports, parsed and
 * formatted back in ranges.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synproxy.h"

static void port_set(uint64_t *ports, unsigned int port)
{
	ports[port >> 6] |= 1ULL << (port & 63);
}

bool synproxy_port_is_set(const uint64_t *ports, unsigned int port)
{
	return (ports[port >> 6] >> (port & 63)) & 1;
}

static int parse_port(const char *text, size_t len, unsigned int *port)
{
	char buf[8];
	char *end;
	unsigned long v;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return -1;
	v = strtoul(buf, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -1;
	*port = (unsigned int)v;
	return 0;
}

int synproxy_parse_ports(const char *spec, uint64_t *ports, const char **why)
{
	const char *item = spec;

	memset(ports, 0, SYNPROXY_PORT_WORDS * sizeof(*ports));
	if (!strcmp(spec, "all")) {
		for (unsigned int p = 1; p <= 65535; p++)
			port_set(ports, p);
		return 0;
	}
	if (!*spec) {
		*why = "empty port list";
		return -1;
	}
	while (*item) {
		size_t len = strcspn(item, ",");
		const char *dash = memchr(item, '-', len);
		unsigned int lo, hi;

		if (dash) {
			if (parse_port(item, (size_t)(dash - item), &lo) ||
			    parse_port(dash + 1, len - (size_t)(dash - item) - 1, &hi)) {
				*why = "a port is 1-65535, a range LOW-HIGH";
				return -1;
			}
			if (lo > hi) {
				*why = "a range must go from low to high";
				return -1;
			}
		} else if (parse_port(item, len, &lo)) {
			*why = "a port is 1-65535, a range LOW-HIGH";
			return -1;
		} else {
			hi = lo;
		}
		for (unsigned int p = lo; p <= hi; p++)
			port_set(ports, p);
		item += len;
		if (*item == ',') {
			item++;
			if (!*item) {
				*why = "trailing comma";
				return -1;
			}
		}
	}
	return 0;
}

/* The set as the parser takes it back: "22,80,8000-8099", "all" or "" (none). */
size_t synproxy_format_ports(const uint64_t *ports, char *buf, size_t len)
{
	size_t used = 0, count = 0;
	unsigned int p = 1;

	buf[0] = '\0';
	for (unsigned int q = 1; q <= 65535; q++)
		count += synproxy_port_is_set(ports, q);
	if (count == 65535) {
		snprintf(buf, len, "all");
		return count;
	}
	while (p <= 65535) {
		unsigned int end;
		int n;

		if (!synproxy_port_is_set(ports, p)) {
			p++;
			continue;
		}
		for (end = p; end < 65535 && synproxy_port_is_set(ports, end + 1); end++)
			;
		n = end == p ? snprintf(buf + used, len - used, "%s%u", used ? "," : "", p)
			     : snprintf(buf + used, len - used, "%s%u-%u", used ? "," : "", p, end);
		if (n < 0 || (size_t)n >= len - used) {
			snprintf(buf + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
			break;
		}
		used += (size_t)n;
		p = end + 1;
	}
	return count;
}
