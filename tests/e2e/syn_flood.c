// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * syn_flood: the end-to-end tests' flood generator. Sends spoofed TCP SYNs
 * (or ACKs with random seq and ack) as raw Ethernet frames on one interface
 * of a test namespace, through AF_PACKET and sendmmsg, from random source
 * addresses inside a prefix the test assigned to its own namespaces, and
 * stops after --duration seconds or --count frames, whichever comes first.
 * Prints what it sent and the rate. Test traffic only: it refuses to run
 * without both bounds, or with a source prefix wider than /16 (IPv4) or
 * /112 (IPv6).
 *
 *   syn_flood --iface m0 --dst-mac 02:..:01 --src-mac 02:..:02
 *             --src 10.200.9.0/24 --dst 10.200.1.1 --dport 5001
 *             [--type syn|ack] [--rate PPS] --duration S --count N
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define FRAME_MAX 128
#define PROG "syn_flood"

struct params {
	const char *iface;
	uint8_t dst_mac[6], src_mac[6];
	int family;
	uint8_t src[16], dst[16];
	unsigned int src_bits;	/* prefix length of the spoofed sources */
	uint16_t dport;
	bool ack;
	double duration;
	uint64_t count;
	uint64_t rate;		/* frames per second, 0 = as fast as it goes */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s\n", PROG, msg, arg ? " " : "", arg ? arg : "");
	exit(2);
}

static void parse_mac(const char *text, uint8_t *mac)
{
	if (sscanf(text, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5]) != 6)
		die("bad MAC", text);
}

static int parse_addr(const char *text, uint8_t *addr)
{
	if (inet_pton(AF_INET, text, addr) == 1)
		return 4;
	if (inet_pton(AF_INET6, text, addr) == 1)
		return 6;
	die("bad address", text);
	return 0;
}

static uint32_t sum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)(p[len - 1] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A random source inside the prefix: the host part random, the network part kept. */
static void random_source(const struct params *p, uint8_t *src)
{
	size_t len = p->family == 4 ? 4 : 16;

	memcpy(src, p->src, len);
	for (size_t bit = p->src_bits; bit < len * 8; bit++)
		if (next_rand() & 1)
			src[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		else
			src[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
}

static size_t build(const struct params *p, uint8_t *f)
{
	size_t l3 = 14, alen = p->family == 4 ? 4 : 16, iphl = p->family == 4 ? 20 : 40;
	uint8_t *ip = f + l3, *tcp = f + l3 + iphl, src[16];
	uint16_t sport = (uint16_t)(1024 + next_rand() % 60000);
	uint32_t seq = next_rand(), ack = next_rand(), sum;
	size_t tcplen = 20 + (p->ack ? 0 : 4);

	memcpy(f, p->dst_mac, 6);
	memcpy(f + 6, p->src_mac, 6);
	f[12] = p->family == 4 ? 0x08 : 0x86;
	f[13] = p->family == 4 ? 0x00 : 0xdd;
	random_source(p, src);
	memset(ip, 0, iphl);
	if (p->family == 4) {
		ip[0] = 0x45;
		ip[2] = (uint8_t)((iphl + tcplen) >> 8);
		ip[3] = (uint8_t)(iphl + tcplen);
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, p->dst, 4);
		sum = fold(sum16(ip, 20, 0));
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
	} else {
		ip[0] = 0x60;
		ip[4] = (uint8_t)(tcplen >> 8);
		ip[5] = (uint8_t)tcplen;
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, p->dst, 16);
	}
	memset(tcp, 0, tcplen);
	tcp[0] = (uint8_t)(sport >> 8);
	tcp[1] = (uint8_t)sport;
	tcp[2] = (uint8_t)(p->dport >> 8);
	tcp[3] = (uint8_t)p->dport;
	for (int i = 0; i < 4; i++) {
		tcp[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
		tcp[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
	}
	tcp[12] = (uint8_t)((tcplen / 4) << 4);
	tcp[13] = p->ack ? 0x10 : 0x02;
	tcp[14] = 0xfa;	/* window 64240 */
	tcp[15] = 0xf0;
	if (!p->ack) {	/* MSS 1460 */
		tcp[20] = 2;
		tcp[21] = 4;
		tcp[22] = 0x05;
		tcp[23] = 0xb4;
	}
	sum = sum16(src, alen, 0);
	sum = sum16(p->dst, alen, sum);
	sum += 6 + (uint32_t)tcplen;
	sum = fold(sum16(tcp, tcplen, sum));
	tcp[16] = (uint8_t)(sum >> 8);
	tcp[17] = (uint8_t)sum;
	return l3 + iphl + tcplen;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' }, { "dst-mac", required_argument, NULL, 'D' },
		{ "src-mac", required_argument, NULL, 'S' }, { "src", required_argument, NULL, 's' },
		{ "dst", required_argument, NULL, 'd' }, { "dport", required_argument, NULL, 'p' },
		{ "type", required_argument, NULL, 't' }, { "duration", required_argument, NULL, 'T' },
		{ "count", required_argument, NULL, 'c' }, { "rate", required_argument, NULL, 'r' },
		{ 0 },
	};
	static uint8_t frames[BATCH][FRAME_MAX];
	struct params p = { 0 };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	bool have_dst_mac = false, have_src = false, have_dst = false;
	uint64_t sent = 0, errors = 0;
	double start, elapsed;
	int c, fd;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': p.iface = optarg; break;
		case 'D': parse_mac(optarg, p.dst_mac); have_dst_mac = true; break;
		case 'S': parse_mac(optarg, p.src_mac); break;
		case 's': {
			char buf[64], *slash;

			snprintf(buf, sizeof(buf), "%s", optarg);
			slash = strchr(buf, '/');
			if (!slash)
				die("--src needs PREFIX/LEN", optarg);
			*slash = '\0';
			p.family = parse_addr(buf, p.src);
			p.src_bits = (unsigned int)atoi(slash + 1);
			have_src = true;
			break;
		}
		case 'd': parse_addr(optarg, p.dst); have_dst = true; break;
		case 'p': p.dport = (uint16_t)atoi(optarg); break;
		case 't': p.ack = !strcmp(optarg, "ack"); break;
		case 'T': p.duration = atof(optarg); break;
		case 'c': p.count = strtoull(optarg, NULL, 10); break;
		case 'r': p.rate = strtoull(optarg, NULL, 10); break;
		default: die("bad option", NULL);
		}
	}
	if (!p.iface || !have_dst_mac || !have_src || !have_dst || !p.dport)
		die("needs --iface --dst-mac --src --dst --dport", NULL);
	if (p.duration <= 0 || p.duration > 60 || !p.count)
		die("needs --duration (0-60 s) and --count: every flood is bounded", NULL);
	if ((p.family == 4 && (p.src_bits < 16 || p.src_bits > 32)) ||
	    (p.family == 6 && (p.src_bits < 112 || p.src_bits > 128)))
		die("--src must be a narrow test prefix (IPv4 /16-/32, IPv6 /112-/128)", NULL);

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("AF_PACKET socket:", strerror(errno));
	sll.sll_ifindex = (int)if_nametoindex(p.iface);
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, p.dst_mac, 6);
	if (!sll.sll_ifindex)
		die("no such interface", p.iface);
	rng ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	start = now_s();
	while (sent < p.count && (elapsed = now_s() - start) < p.duration) {
		unsigned int n = BATCH;
		int done;

		if (p.rate && (double)sent > elapsed * (double)p.rate) {
			struct timespec pause = { 0, 200000 };

			nanosleep(&pause, NULL);
			continue;
		}
		if (p.count - sent < n)
			n = (unsigned int)(p.count - sent);
		for (unsigned int i = 0; i < n; i++) {
			iov[i].iov_base = frames[i];
			iov[i].iov_len = build(&p, frames[i]);
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &sll;
			msgs[i].msg_hdr.msg_namelen = sizeof(sll);
		}
		done = sendmmsg(fd, msgs, n, 0);
		if (done < 0) {
			errors++;
			continue;
		}
		sent += (uint64_t)done;
	}
	elapsed = now_s() - start;
	printf("sent %llu %s in %.2f s: %.0f per second (%llu send errors)\n",
	       (unsigned long long)sent, p.ack ? "ACKs" : "SYNs", elapsed,
	       elapsed > 0 ? (double)sent / elapsed : 0.0, (unsigned long long)errors);
	close(fd);
	return 0;
}
