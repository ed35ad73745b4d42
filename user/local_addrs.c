// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isn_local_addrs from the namespace's address list. Attach (and attach
 * --replace) writes it; the datapath trusts an entry for a second after
 * the route last confirmed it and deletes one the route no longer calls
 * local (bpf/local_addr.h), so an address removed later stops counting as
 * local on its own, and one added later takes the route lookup, as every
 * destination did before, until the next attach writes it.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "isnguard.h"
#include "local_addrs.h"

/* Every key of netns_ino's, deleted: collected in one walk, then deleted. */
static int local_addrs_clear(int fd, uint64_t netns_ino)
{
	struct local_addr_key cur, next, *keys = NULL;
	size_t n = 0, cap = 0;
	int err = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (next.netns_ino == netns_ino) {
			if (n == cap) {
				struct local_addr_key *more;

				cap = cap ? cap * 2 : 64;
				more = realloc(keys, cap * sizeof(*keys));
				if (!more) {
					free(keys);
					return -ENOMEM;
				}
				keys = more;
			}
			keys[n++] = next;
		}
		cur = next;
		prev = &cur;
	}
	for (size_t i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &keys[i]) && errno != ENOENT)
			err = -errno;
	free(keys);
	return err;
}

int local_addrs_fill(int fd, uint64_t netns_ino)
{
	const struct local_addr never = { .checked_ns = 0 };
	struct ifaddrs *list, *ifa;
	int err, count = 0;

	if (getifaddrs(&list))
		return -errno;
	err = local_addrs_clear(fd, netns_ino);
	for (ifa = list; !err && ifa; ifa = ifa->ifa_next) {
		struct local_addr_key key = { .netns_ino = netns_ino };

		if (!ifa->ifa_addr)
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET) {
			key.family = FLOW_FAMILY_IPV4;
			memcpy(key.addr, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
		} else if (ifa->ifa_addr->sa_family == AF_INET6) {
			key.family = FLOW_FAMILY_IPV6;
			memcpy(key.addr, &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		if (bpf_map_update_elem(fd, &key, &never, BPF_ANY))
			err = errno == E2BIG ? 0 : -errno;	/* full: the rest take the route */
		else
			count++;
	}
	freeifaddrs(list);
	return err ? err : count;
}
