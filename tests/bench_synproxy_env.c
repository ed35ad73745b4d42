// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench_synproxy's ground: its own network namespace, the sockets and the frames its cases run on. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_synproxy.h"
#include "ref/cookie_ref.h"

int listen_tcp(int family, uint16_t port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == 6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, family == 4 ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		 family == 4 ? sizeof(a4) : sizeof(a6)) || listen(fd, 64)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A real established loopback connection to port; *sport gets the client's port. */
int connect_loopback(uint16_t port, uint16_t *sport)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen))
		return -1;
	*sport = ntohs(a.sin_port);
	return fd;
}

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;

	return f && !fclose(f) && ok;
}

/* in6_ifreq of <linux/ipv6.h>, which clashes with <netinet/in.h>. */
struct bench_in6_ifreq {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

/*
 * A network namespace of the bench's own, so that forwarding can be
 * switched on and off between cases: lo up with the SYNs' destinations,
 * 10.0.0.1/32 and 2001:db8::1/128, as the host's own addresses. Test runs
 * come in on lo, and look sockets and routes up here.
 */
int bench_netns(void)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	struct bench_in6_ifreq r6 = { .prefixlen = 128 };
	int fd, fd6, err = 0;

	if (unshare(CLONE_NEWNET))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	fd6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || fd6 < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
		err = -1;
	ifr.ifr_flags |= IFF_UP;
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr))
		err = -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:9");
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", &sin->sin_addr);
	if (!err && ioctl(fd, SIOCSIFADDR, &ifr))
		err = -1;
	inet_pton(AF_INET, "255.255.255.255", &sin->sin_addr);
	if (!err && ioctl(fd, SIOCSIFNETMASK, &ifr))
		err = -1;
	r6.ifindex = (int)if_nametoindex("lo");
	inet_pton(AF_INET6, "2001:db8::1", &r6.addr);
	if (!err && ioctl(fd6, SIOCSIFADDR, &r6))
		err = -1;
	if (fd >= 0)
		close(fd);
	if (fd6 >= 0)
		close(fd6);
	return err;
}

static int forwarding_now = -1;

/* The namespace's IPv4 and IPv6 forwarding, every device's (all). */
int set_forwarding(int on)
{
	const char *v = on ? "1" : "0";

	if (on < 0 || on == forwarding_now)
		return 0;
	if (!write_file("/proc/sys/net/ipv4/conf/all/forwarding", v) ||
	    !write_file("/proc/sys/net/ipv6/conf/all/forwarding", v))
		return -1;
	forwarding_now = on;
	return 0;
}

size_t linux_syn(int family, uint8_t *buf)
{
	struct pkt_spec s = { 0 };

	memcpy(s.eth_src, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s.eth_dst, "\x02\x00\x00\x00\x00\x01", 6);
	pkt_set_addrs(&s, family == 6 ? "2001:db8::2" : "10.0.0.2",
		      family == 6 ? "2001:db8::1" : "10.0.0.1");
	s.sport = 40000;
	s.dport = BENCH_PORT;
	s.seq = 12345678;
	s.flags = TH_SYN;
	s.window = 64240;
	pkt_opt_mss(&s, family == 6 ? 1440 : 1460);
	pkt_opt_sack_perm(&s);
	pkt_opt_timestamp(&s, 0x11223344, 0);
	pkt_opt_nop(&s);
	pkt_opt_wscale(&s, 7);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

size_t loopback_ack(uint16_t sport, uint16_t dport, uint8_t *buf)
{
	struct pkt_spec s = { 0 };

	pkt_set_addrs(&s, "127.0.0.1", "127.0.0.1");
	s.sport = sport;
	s.dport = dport;
	s.seq = 1000;
	s.ack = 2000;
	s.flags = TH_ACK;
	s.window = 512;
	pkt_opt_nop(&s);
	pkt_opt_nop(&s);
	pkt_opt_timestamp(&s, 5, 6);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

/* The datapath's key (generation 0), which the reference makes the cookie ACKs' cookies with. */
const struct isn_key bench_key = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };

/*
 * A cookie ACK from 127.0.0.1:BENCH_COOKIE_SPORT to the protected port, its
 * cookie made by the reference slots_back slots before now (Linux's options,
 * timestamps on), or, with bad_mac, one bit of it flipped.
 */
size_t cookie_ack(uint32_t slots_back, bool bad_mac, uint8_t *buf)
{
	struct ref_cookie_opts o = { .wscale = 7, .wscale_ok = true, .sack_ok = true };
	struct timespec now;
	struct pkt_spec s = { 0 };
	struct flow_key fk = { .family = FLOW_FAMILY_IPV4 };
	uint32_t slot, cookie, tsval;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	slot = (uint32_t)((((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec) >>
			   COOKIE_SLOT_SHIFT) - slots_back);
	pkt_set_addrs(&s, "127.0.0.1", "127.0.0.1");
	memcpy(fk.local_addr, "\x7f\x00\x00\x01", 4);
	memcpy(fk.remote_addr, "\x7f\x00\x00\x01", 4);
	fk.local_port = htons(BENCH_PORT);
	fk.remote_port = htons(BENCH_COOKIE_SPORT);
	if (ref_cookie_make(&bench_key, &fk, BENCH_CLIENT_ISN, slot,
			    ref_cookie_opt_bits(ref_cookie_mss_index(4, 65483, true), &o, true), true,
			    &cookie, &tsval))
		return 0;
	s.sport = BENCH_COOKIE_SPORT;
	s.dport = BENCH_PORT;
	s.seq = BENCH_CLIENT_ISN + 1;
	s.ack = (cookie ^ (bad_mac ? 1u << 20 : 0)) + 1;
	s.flags = TH_ACK;
	s.window = 512;
	pkt_opt_nop(&s);
	pkt_opt_nop(&s);
	pkt_opt_timestamp(&s, 7, tsval);
	return pkt_build(&s, buf, PKT_MAX_LEN);
}

