// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tcp_xfer: the end-to-end tests' traffic tool. Moves a known byte stream over
 * one or many TCP connections, both directions at once, and reports the
 * SHA-256 of what went each way, so a test compares both ends against an
 * expectation computed without the network (`tcp_xfer expect`).
 *
 * The stream of connection I under seed S is the AES-128-CTR keystream (IV 0)
 * under the key made of the first 16 bytes of SHA-256("tcp_xfer seed=S conn=I")
 * (S and I in decimal). It is fast enough for 100 MiB transfers and can be
 * reproduced without this tool (`openssl enc -aes-128-ctr` over zeros).
 *
 * On the client, connection I is the I-th one opened; on the server, the I-th
 * one accepted, so with --parallel the indexes of the two sides need not pair
 * up: compare the sets of digests.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/tcp.h>	/* tcpi_bytes_received, which glibc's tcp_info lacks */
#include <openssl/evp.h>

#define PROG_NAME "tcp_xfer"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define STREAM_CHUNK (64 * 1024)	/* bytes generated per refill of a send buffer */
#define RECV_CHUNK (256 * 1024)
#define MAX_CONNS 4096
#define LISTEN_BACKLOG 1024
#define DEFAULT_TIMEOUT_S 120

struct params {
	const char *listen;
	const char *connect;
	unsigned int conns;		/* server --conns, client --parallel */
	uint64_t send_bytes;
	uint64_t seed;
	bool recv;
	unsigned int timeout_s;		/* 0: no limit */
	unsigned int local_port;	/* client: first local port, 0 = any */
	unsigned int hold_s;		/* client: pause after all connected */
	uint64_t rate;			/* SO_MAX_PACING_RATE in bytes/s, 0 = none */
	bool peer_isn;			/* print each connection's peer ISN */
	long conn_index;		/* expect --conn, -1 = unset */
	uint64_t expect_bytes;
};

static const struct params default_params = {
	.conns = 1,
	.timeout_s = DEFAULT_TIMEOUT_S,
	.conn_index = -1,
};

/* One connection: what is left to send, and the digests of both directions. */
struct conn {
	int fd;
	unsigned int index;
	bool connected;
	bool write_shut;
	bool eof;
	bool closed;
	uint32_t peer_isn;	/* the ISN of the peer's SYN or SYN-ACK as it arrived */
	int pfd;		/* its slot in this round's pollfd array, -1 if none */
	uint64_t to_send;
	uint64_t sent;
	uint64_t received;
	EVP_CIPHER_CTX *generator;
	EVP_MD_CTX *sent_digest;
	EVP_MD_CTX *recv_digest;
	unsigned char pending[STREAM_CHUNK];
	size_t pending_off;
	size_t pending_len;
	char sent_hex[65];
	char recv_hex[65];
	char name[160];		/* "local -> remote", for messages */
};

static struct params params;
static struct timespec started;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG_NAME);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_RUNTIME);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG_NAME);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", PROG_NAME);
	exit(EXIT_USAGE);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double elapsed_s(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
}

/* ---- the deterministic stream ---- */

static EVP_CIPHER_CTX *stream_open(uint64_t seed, unsigned int index)
{
	unsigned char digest[32], iv[16] = { 0 };
	char label[96];
	unsigned int digest_len = 0;
	EVP_CIPHER_CTX *cipher;
	int len;

	len = snprintf(label, sizeof(label), "tcp_xfer seed=%" PRIu64 " conn=%u", seed, index);
	if (!EVP_Digest(label, (size_t)len, digest, &digest_len, EVP_sha256(), NULL))
		die("SHA-256 of the stream label failed");
	cipher = EVP_CIPHER_CTX_new();
	if (!cipher || !EVP_EncryptInit_ex(cipher, EVP_aes_128_ctr(), NULL, digest, iv))
		die("AES-128-CTR setup failed");
	return cipher;
}

/* The next len bytes (len <= STREAM_CHUNK) of the stream into out. */
static void stream_next(EVP_CIPHER_CTX *cipher, unsigned char *out, size_t len)
{
	static const unsigned char zeros[STREAM_CHUNK];
	int out_len = 0;

	if (!EVP_EncryptUpdate(cipher, out, &out_len, zeros, (int)len) || (size_t)out_len != len)
		die("AES-128-CTR keystream failed");
}

static EVP_MD_CTX *digest_open(void)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
		die("SHA-256 setup failed");
	return md;
}

static void digest_close(EVP_MD_CTX *md, char hex[65])
{
	unsigned char digest[32];
	unsigned int len = 0;

	if (!EVP_DigestFinal_ex(md, digest, &len) || len != sizeof(digest))
		die("SHA-256 final failed");
	for (unsigned int i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", digest[i]);
	EVP_MD_CTX_free(md);
}

/* ---- addresses ---- */

/* "a.b.c.d:port" or "[v6]:port" into a sockaddr; exits on bad input. */
static socklen_t parse_addr(const char *text, struct sockaddr_storage *ss, const char *what)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;
	socklen_t len;
	size_t host_len;
	int err;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			die_usage("%s '%s': expected [v6addr]:port", what, text);
		host_len = (size_t)(close - text - 1);
		colon = close + 1;
		text++;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			die_usage("%s '%s': expected addr:port", what, text);
		host_len = (size_t)(colon - text);
	}
	if (host_len == 0 || host_len >= sizeof(host))
		die_usage("%s: bad address", what);
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	/* getaddrinfo() takes any number as a service and wraps it. */
	if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strtoul(colon + 1, NULL, 10) > 65535)
		die_usage("%s '%s': port must be 0-65535", what, colon + 1);
	err = getaddrinfo(host, colon + 1, &hints, &res);
	if (err)
		die_usage("%s '%s': %s", what, host, gai_strerror(err));
	len = res->ai_addrlen;
	memcpy(ss, res->ai_addr, len);
	freeaddrinfo(res);
	return len;
}

static void set_port(struct sockaddr_storage *ss, unsigned int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(out, size, "%s:%u", host, ntohs(sin->sin_port));
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(out, size, "[%s]:%u", host, ntohs(sin6->sin6_port));
	}
}

static void conn_name(struct conn *c)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote);
	char l[64] = "?", r[64] = "?";

	if (!getsockname(c->fd, (struct sockaddr *)&local, &llen))
		format_addr(&local, l, sizeof(l));
	if (!getpeername(c->fd, (struct sockaddr *)&remote, &rlen))
		format_addr(&remote, r, sizeof(r));
	snprintf(c->name, sizeof(c->name), "%s -> %s", l, r);
}

/* ---- connections ---- */

/*
 * The ISN of the peer's SYN or SYN-ACK as it came on the wire, from this
 * socket's own state: rcv_nxt (which only TCP_REPAIR mode shows, and that
 * needs CAP_NET_ADMIN) less every sequence number taken in since the SYN
 * (tcpi_bytes_received: data and FIN), less the SYN's own. A segment that
 * comes between the reads moves rcv_nxt, and then they are read again.
 */
static uint32_t read_peer_isn(const struct conn *c)
{
	int on = TCP_REPAIR_ON, off = TCP_REPAIR_OFF_NO_WP, queue = TCP_RECV_QUEUE;
	struct tcp_info info;
	uint32_t rcv_nxt, again;
	socklen_t len;

	if (setsockopt(c->fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)))
		die("conn %u: TCP_REPAIR (needs CAP_NET_ADMIN): %s", c->index, strerror(errno));
	if (setsockopt(c->fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &queue, sizeof(queue)))
		die("conn %u: TCP_REPAIR_QUEUE: %s", c->index, strerror(errno));
	len = sizeof(again);
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &again, &len))
		die("conn %u: TCP_QUEUE_SEQ: %s", c->index, strerror(errno));
	do {
		rcv_nxt = again;
		len = sizeof(info);
		if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &info, &len))
			die("conn %u: TCP_INFO: %s", c->index, strerror(errno));
		len = sizeof(again);
		if (getsockopt(c->fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &again, &len))
			die("conn %u: TCP_QUEUE_SEQ: %s", c->index, strerror(errno));
	} while (again != rcv_nxt);
	/* Off without the window probe TCP_REPAIR_OFF sends: nothing was repaired. */
	if (setsockopt(c->fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)))
		die("conn %u: TCP_REPAIR off: %s", c->index, strerror(errno));
	return rcv_nxt - (uint32_t)info.tcpi_bytes_received - 1;
}

static void set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("fcntl O_NONBLOCK: %s", strerror(errno));
}

static void set_pacing(int fd)
{
	unsigned int rate = params.rate > UINT32_MAX ? UINT32_MAX : (unsigned int)params.rate;

	/* Without fq, TCP paces internally once a maximum rate is requested. */
	if (params.rate && setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)))
		die("SO_MAX_PACING_RATE: %s", strerror(errno));
}

static void conn_init(struct conn *c, int fd, unsigned int index, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->index = index;
	c->to_send = params.send_bytes;
	c->generator = stream_open(seed, index);
	c->sent_digest = digest_open();
	c->recv_digest = digest_open();
	snprintf(c->name, sizeof(c->name), "conn %u", index);
}

static void conn_fail(struct conn *c, const char *what, int err)
{
	die("conn %u (%s): %s: %s (sent %" PRIu64 " of %" PRIu64 ", received %" PRIu64 ")",
	    c->index, c->name, what, strerror(err), c->sent, c->to_send, c->received);
}

static void conn_finish(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->closed = true;
	digest_close(c->sent_digest, c->sent_hex);
	digest_close(c->recv_digest, c->recv_hex);
	EVP_CIPHER_CTX_free(c->generator);
}

/* Writes as much as the socket takes; shuts the write side once all is sent. */
static void conn_send(struct conn *c, bool shut_when_done)
{
	while (c->sent < c->to_send) {
		ssize_t n;

		if (c->pending_off == c->pending_len) {
			uint64_t left = c->to_send - c->sent;
			size_t len = left < STREAM_CHUNK ? (size_t)left : STREAM_CHUNK;

			stream_next(c->generator, c->pending, len);
			EVP_DigestUpdate(c->sent_digest, c->pending, len);
			c->pending_off = 0;
			c->pending_len = len;
		}
		n = send(c->fd, c->pending + c->pending_off, c->pending_len - c->pending_off,
			 MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_fail(c, "send", errno);
		}
		c->pending_off += (size_t)n;
		c->sent += (uint64_t)n;
	}
	if (shut_when_done && !c->write_shut) {
		if (shutdown(c->fd, SHUT_WR))
			conn_fail(c, "shutdown", errno);
		c->write_shut = true;
	}
}

static void conn_recv(struct conn *c)
{
	static unsigned char buf[RECV_CHUNK];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_fail(c, "recv", errno);
		}
		if (n == 0) {
			c->eof = true;
			return;
		}
		EVP_DigestUpdate(c->recv_digest, buf, (size_t)n);
		c->received += (uint64_t)n;
	}
}

static void check_deadline(const struct conn *conns, unsigned int count, const char *waiting)
{
	if (!params.timeout_s || elapsed_s() < params.timeout_s)
		return;
	for (unsigned int i = 0; i < count; i++) {
		const struct conn *c = &conns[i];

		if (!c->closed)
			die("timeout after %u s %s: conn %u (%s) sent %" PRIu64 " of %" PRIu64
			    ", received %" PRIu64 "%s", params.timeout_s, waiting, c->index, c->name,
			    c->sent, c->to_send, c->received, c->eof ? ", eof" : "");
	}
	die("timeout after %u s %s", params.timeout_s, waiting);
}

static int poll_timeout_ms(void)
{
	double left;

	if (!params.timeout_s)
		return 1000;
	left = params.timeout_s - elapsed_s();
	return left <= 0 ? 0 : left > 1 ? 1000 : (int)(left * 1000) + 1;
}

static void print_results(const struct conn *conns, unsigned int count, const char *role)
{
	uint64_t sent = 0, received = 0;
	double secs = elapsed_s();

	for (unsigned int i = 0; i < count; i++) {
		const struct conn *c = &conns[i];

		printf("conn %u recv_bytes %" PRIu64 " recv_sha256 %s sent_bytes %" PRIu64
		       " sent_sha256 %s", c->index, c->received, c->recv_hex, c->sent, c->sent_hex);
		if (params.peer_isn)
			printf(" peer_isn %" PRIu32, c->peer_isn);
		putchar('\n');
		sent += c->sent;
		received += c->received;
	}
	fflush(stdout);
	fprintf(stderr, "%s: %s: %u conns, sent %" PRIu64 " received %" PRIu64
		" bytes in %.3f s (%.1f Mbit/s total)\n", PROG_NAME, role, count, sent, received,
		secs, secs > 0 ? (double)(sent + received) * 8 / secs / 1e6 : 0.0);
}

/*
 * Server: serves every accepted connection at once. It sends its stream from
 * the start and closes once it has sent all and read the peer's EOF, so the
 * client's own EOF means the whole exchange is done.
 */
static int do_server(void)
{
	struct sockaddr_storage addr;
	socklen_t addr_len;
	struct pollfd *pfds;
	struct conn *conns;
	unsigned int accepted = 0, finished = 0;
	int one = 1, lfd;

	if (!params.listen)
		die_usage("server: --listen ADDR:PORT is required");
	addr_len = parse_addr(params.listen, &addr, "--listen");
	conns = calloc(params.conns, sizeof(*conns));
	pfds = calloc(params.conns + 1, sizeof(*pfds));
	if (!conns || !pfds)
		die("out of memory");

	lfd = socket(addr.ss_family, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr.ss_family == AF_INET6)
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&addr, addr_len))
		die("bind %s: %s", params.listen, strerror(errno));
	if (listen(lfd, LISTEN_BACKLOG))
		die("listen %s: %s", params.listen, strerror(errno));
	set_nonblocking(lfd);

	while (finished < params.conns) {
		unsigned int nfds = 0;

		check_deadline(conns, accepted, "waiting for connections to finish");
		if (accepted < params.conns)
			pfds[nfds++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (unsigned int i = 0; i < accepted; i++) {
			struct conn *c = &conns[i];

			c->pfd = -1;
			if (c->closed)
				continue;
			c->pfd = (int)nfds;
			pfds[nfds++] = (struct pollfd){
				.fd = c->fd,
				.events = (c->eof ? 0 : POLLIN) | (c->sent < c->to_send ? POLLOUT : 0),
			};
		}
		if (poll(pfds, nfds, poll_timeout_ms()) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));

		for (unsigned int i = 0; i < accepted; i++) {
			struct conn *c = &conns[i];

			if (c->pfd < 0 || !pfds[c->pfd].revents)
				continue;
			if (!c->eof)
				conn_recv(c);
			conn_send(c, false);
			if (c->eof && c->sent == c->to_send) {
				conn_finish(c);
				finished++;
			}
		}
		while (accepted < params.conns) {
			struct conn *c = &conns[accepted];
			int fd = accept(lfd, NULL, NULL);

			if (fd < 0) {
				if (errno == EAGAIN || errno == EINTR)
					break;
				die("accept: %s", strerror(errno));
			}
			set_nonblocking(fd);
			set_pacing(fd);
			conn_init(c, fd, accepted, params.seed);
			conn_name(c);
			if (params.peer_isn)
				c->peer_isn = read_peer_isn(c);
			accepted++;
			/* Nothing to wait for if it sends nothing and the peer already closed. */
			conn_recv(c);
			conn_send(c, false);
			if (c->eof && c->sent == c->to_send) {
				conn_finish(c);
				finished++;
			}
		}
	}
	close(lfd);
	print_results(conns, params.conns, "server");
	free(pfds);
	free(conns);
	return 0;
}

/* Client: opens all connections at once, then sends, shuts down, reads to EOF. */
static int do_client(void)
{
	struct sockaddr_storage remote;
	socklen_t remote_len;
	struct pollfd *pfds;
	struct conn *conns;
	unsigned int connected = 0, finished = 0;
	bool holding = false;
	double hold_until = 0;

	if (!params.connect)
		die_usage("client: --connect ADDR:PORT is required");
	if (params.local_port && params.local_port + params.conns - 1 > 65535)
		die_usage("client: --local-port + --parallel exceeds 65535");
	remote_len = parse_addr(params.connect, &remote, "--connect");
	conns = calloc(params.conns, sizeof(*conns));
	pfds = calloc(params.conns, sizeof(*pfds));
	if (!conns || !pfds)
		die("out of memory");

	for (unsigned int i = 0; i < params.conns; i++) {
		struct conn *c = &conns[i];
		int one = 1, fd;

		fd = socket(remote.ss_family, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		conn_init(c, fd, i, params.seed);
		set_nonblocking(fd);
		set_pacing(fd);
		if (params.local_port) {
			struct sockaddr_storage local = { .ss_family = remote.ss_family };

			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			set_port(&local, params.local_port + i);
			if (bind(fd, (struct sockaddr *)&local, remote_len))
				die("conn %u: bind local port %u: %s", i, params.local_port + i,
				    strerror(errno));
		}
		if (connect(fd, (struct sockaddr *)&remote, remote_len) && errno != EINPROGRESS)
			die("conn %u: connect %s: %s", i, params.connect, strerror(errno));
	}

	while (finished < params.conns) {
		check_deadline(conns, params.conns, connected < params.conns ?
			       "connecting" : "transferring");
		if (holding && elapsed_s() >= hold_until)
			holding = false;
		for (unsigned int i = 0; i < params.conns; i++) {
			struct conn *c = &conns[i];
			short events = 0;

			if (c->closed)
				events = 0;
			else if (!c->connected)
				events = POLLOUT;
			else if (!holding && connected == params.conns)
				events = (c->eof ? 0 : POLLIN) | (c->write_shut ? 0 : POLLOUT);
			pfds[i] = (struct pollfd){ .fd = c->closed ? -1 : c->fd, .events = events };
		}
		if (poll(pfds, params.conns, holding ? 50 : poll_timeout_ms()) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));

		for (unsigned int i = 0; i < params.conns; i++) {
			struct conn *c = &conns[i];

			if (c->closed || !pfds[i].revents)
				continue;
			if (!c->connected) {
				int err = 0;
				socklen_t len = sizeof(err);

				if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
					err = errno;
				if (err)
					die("conn %u: connect %s: %s", i, params.connect, strerror(err));
				c->connected = true;
				conn_name(c);
				if (params.peer_isn)
					c->peer_isn = read_peer_isn(c);
				if (++connected == params.conns && params.hold_s) {
					holding = true;
					hold_until = elapsed_s() + params.hold_s;
				}
				continue;
			}
			if (!c->eof)
				conn_recv(c);
			conn_send(c, true);
			if (c->eof && c->write_shut) {
				conn_finish(c);
				finished++;
			}
		}
	}
	print_results(conns, params.conns, "client");
	free(pfds);
	free(conns);
	return 0;
}

/* The SHA-256 of a stream, computed without any network. */
static int do_expect(void)
{
	unsigned int first = 0, count = params.conns;
	static unsigned char chunk[STREAM_CHUNK];

	if (params.conn_index >= 0) {
		first = (unsigned int)params.conn_index;
		count = 1;
	}
	for (unsigned int i = first; i < first + count; i++) {
		EVP_CIPHER_CTX *cipher = stream_open(params.seed, i);
		EVP_MD_CTX *md = digest_open();
		char hex[65];

		for (uint64_t left = params.expect_bytes; left;) {
			size_t len = left < STREAM_CHUNK ? (size_t)left : STREAM_CHUNK;

			stream_next(cipher, chunk, len);
			EVP_DigestUpdate(md, chunk, len);
			left -= len;
		}
		digest_close(md, hex);
		EVP_CIPHER_CTX_free(cipher);
		if (params.conn_index >= 0)
			printf("%s\n", hex);
		else
			printf("conn %u sha256 %s\n", i, hex);
	}
	return 0;
}

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns(), hence of the ISN's M. */
static int do_mono(void)
{
	printf("%" PRIu64 "\n", mono_ns());
	return 0;
}

static int do_help(void);

struct mode {
	const char *name;
	int (*fn)(void);
	const char *synopsis;
	const char *help;
};

static const struct mode modes[] = {
	{ "server", do_server,
	  "--listen ADDR:PORT [--conns N] [--send BYTES] [--seed S] [--rate B/S] [--timeout SEC]\n"
	  "                 [--peer-isn]",
	  "accept N connections; read each to EOF, send BYTES of stream S on each" },
	{ "client", do_client,
	  "--connect ADDR:PORT [--parallel N] [--send BYTES] [--recv] [--seed S]\n"
	  "                 [--local-port P] [--hold SEC] [--rate B/S] [--timeout SEC] [--peer-isn]",
	  "open N connections at once; send BYTES of stream S, shut down, read to EOF" },
	{ "expect", do_expect, "--bytes N --seed S (--conn I | --conns N)",
	  "print the SHA-256 of BYTES of stream S for one or N connections" },
	{ "mono", do_mono, "", "print CLOCK_MONOTONIC in ns" },
	{ "help", do_help, "", "show this help" },
	{ 0 },
};

struct option_help {
	struct option opt;
	const char *help;
};

enum {
	OPT_LISTEN = 256, OPT_CONNECT, OPT_CONNS, OPT_PARALLEL, OPT_SEND, OPT_RECV, OPT_SEED,
	OPT_TIMEOUT, OPT_LOCAL_PORT, OPT_HOLD, OPT_RATE, OPT_PEER_ISN, OPT_CONN, OPT_BYTES, OPT_HELP,
};

static const struct option_help options[] = {
	{ { "listen", required_argument, NULL, OPT_LISTEN }, "server address, [v6]:port for IPv6" },
	{ { "connect", required_argument, NULL, OPT_CONNECT }, "server address to connect to" },
	{ { "conns", required_argument, NULL, OPT_CONNS }, "server: connections to serve (1)" },
	{ { "parallel", required_argument, NULL, OPT_PARALLEL }, "client: connections to open (1)" },
	{ { "send", required_argument, NULL, OPT_SEND }, "bytes to send on each connection (0)" },
	{ { "recv", no_argument, NULL, OPT_RECV },
	  "client: the server sends too (the client reads to EOF either way)" },
	{ { "seed", required_argument, NULL, OPT_SEED }, "stream seed of what this side sends (0)" },
	{ { "timeout", required_argument, NULL, OPT_TIMEOUT }, "give up after SEC seconds, 0 = never (120)" },
	{ { "local-port", required_argument, NULL, OPT_LOCAL_PORT },
	  "client: bind connection I to local port P+I" },
	{ { "hold", required_argument, NULL, OPT_HOLD },
	  "client: wait SEC seconds once all are connected, before sending" },
	{ { "rate", required_argument, NULL, OPT_RATE }, "pace each connection to B bytes/s" },
	{ { "peer-isn", no_argument, NULL, OPT_PEER_ISN },
	  "add peer_isn N to each conn line: the peer's wire ISN (TCP_REPAIR: CAP_NET_ADMIN)" },
	{ { "conn", required_argument, NULL, OPT_CONN }, "expect: the connection index" },
	{ { "bytes", required_argument, NULL, OPT_BYTES }, "expect: stream length" },
	{ { "help", no_argument, NULL, OPT_HELP }, "show this help" },
	{ { 0 }, NULL },
};

static int do_help(void)
{
	printf("Usage: %s MODE [options]\n\nModes:\n", PROG_NAME);
	for (const struct mode *m = modes; m->name; m++)
		printf("  %-6s %s\n         %s %s%s%s\n", m->name, m->help, PROG_NAME, m->name,
		       *m->synopsis ? " " : "", m->synopsis);
	printf("\nOptions:\n");
	for (const struct option_help *o = options; o->opt.name; o++)
		printf("  --%-12s %s\n", o->opt.name, o->help);
	printf("\nEach connection prints: conn I recv_bytes N recv_sha256 HEX sent_bytes N"
	       " sent_sha256 HEX [peer_isn N]\n"
	       "Stream S of connection I: AES-128-CTR keystream, IV 0, key ="
	       " SHA-256(\"tcp_xfer seed=S conn=I\")[0:16].\n");
	return 0;
}

static uint64_t parse_number(const char *text, const char *what, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!*text || *text == '-')
		die_usage("%s '%s': expected an unsigned number", what, text);
	v = strtoull(text, &end, 0);
	/* Sizes may carry a binary suffix: 100M is 100 MiB. */
	if (*end && !end[1] && strchr("KMG", *end)) {
		unsigned int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 30;

		if (v > (UINT64_MAX >> shift))
			die_usage("%s '%s': too large", what, text);
		v <<= shift;
		end++;
	}
	if (errno || *end || v > max)
		die_usage("%s '%s': expected an unsigned number up to %" PRIu64, what, text, max);
	return v;
}

static void parse_options(int argc, char **argv)
{
	struct option long_options[sizeof(options) / sizeof(options[0])];
	int opt;

	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		long_options[i] = options[i].opt;
	params = default_params;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN: params.listen = optarg; break;
		case OPT_CONNECT: params.connect = optarg; break;
		case OPT_CONNS:
		case OPT_PARALLEL:
			params.conns = (unsigned int)parse_number(optarg, "connections", MAX_CONNS);
			if (!params.conns)
				die_usage("connections: at least 1");
			break;
		case OPT_SEND: params.send_bytes = parse_number(optarg, "--send", UINT64_MAX); break;
		case OPT_RECV: params.recv = true; break;
		case OPT_SEED: params.seed = parse_number(optarg, "--seed", UINT64_MAX); break;
		case OPT_TIMEOUT:
			params.timeout_s = (unsigned int)parse_number(optarg, "--timeout", 86400);
			break;
		case OPT_LOCAL_PORT:
			params.local_port = (unsigned int)parse_number(optarg, "--local-port", 65535);
			break;
		case OPT_HOLD: params.hold_s = (unsigned int)parse_number(optarg, "--hold", 3600); break;
		case OPT_RATE: params.rate = parse_number(optarg, "--rate", UINT32_MAX); break;
		case OPT_PEER_ISN: params.peer_isn = true; break;
		case OPT_CONN: params.conn_index = (long)parse_number(optarg, "--conn", MAX_CONNS); break;
		case OPT_BYTES: params.expect_bytes = parse_number(optarg, "--bytes", UINT64_MAX); break;
		case OPT_HELP: do_help(); exit(0);
		case ':': die_usage("%s: %s needs a value", argv[0], argv[optind - 1]);
		default: die_usage("%s: unknown option '%s'", argv[0], argv[optind - 1]);
		}
	}
	if (optind != argc)
		die_usage("unexpected argument '%s'", argv[optind]);
}

int main(int argc, char **argv)
{
	clock_gettime(CLOCK_MONOTONIC, &started);
	if (argc < 2)
		die_usage("a mode is required");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return do_help();
	for (const struct mode *m = modes; m->name; m++) {
		if (strcmp(argv[1], m->name))
			continue;
		parse_options(argc - 1, argv + 1);
		return m->fn();
	}
	die_usage("unknown mode '%s'", argv[1]);
}
