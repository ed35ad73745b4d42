// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * LD_PRELOAD shim for a load generator (scripts/bench-conn.sh runs wrk with
 * it): each IPv4 TCP connect() first binds the socket to the next of
 * SRC_SPREAD_COUNT addresses from SRC_SPREAD_FIRST, the port left to
 * connect() (IP_BIND_ADDRESS_NO_PORT), so one client machine opens its
 * connections from many addresses as a client population does. From one
 * address its 64K ports come round every few seconds at a busy server's
 * rate, and nearly every SYN then meets the server's TIME_WAIT socket of
 * the tuple's last connection (60 s): the server's answer and isnguard's
 * work are then those of a reused tuple, not of a new connection. Without
 * the two variables, or for anything but IPv4 TCP, connect() is untouched.
 * A failed bind is reported on stderr and the connect goes on unbound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static int spread_bind(int fd)
{
	static unsigned int next;
	static uint32_t first, count;
	static int ready = -1;
	struct sockaddr_in src = { .sin_family = AF_INET };
	int type, one = 1, saved = errno;
	socklen_t len = sizeof(type);
	const char *f, *c;

	if (ready < 0) {
		struct in_addr a;

		f = getenv("SRC_SPREAD_FIRST");
		c = getenv("SRC_SPREAD_COUNT");
		ready = f && c && inet_pton(AF_INET, f, &a) == 1 && atoi(c) > 0;
		if (ready) {
			first = ntohl(a.s_addr);
			count = (uint32_t)atoi(c);
		}
	}
	if (!ready || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_STREAM)
		goto out;
	src.sin_addr.s_addr = htonl(first + next++ % count);
	if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&src, sizeof(src)))
		fprintf(stderr, "src_spread: bind to %s: %s\n", inet_ntoa(src.sin_addr),
			strerror(errno));
out:
	errno = saved;
	return 0;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static connect_fn real;

	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "connect");
	if (addr && addr->sa_family == AF_INET)
		spread_bind(fd);
	return real(fd, addr, len);
}
