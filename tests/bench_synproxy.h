/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tests/bench_synproxy.c's parts: its cases, the namespace, sockets and
 * frames they run on (bench_synproxy_env.c), and the BPF objects they load
 * (bench_synproxy_load.c).
 */
#ifndef ISNGUARD_TEST_BENCH_SYNPROXY_H
#define ISNGUARD_TEST_BENCH_SYNPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>
#include "isnguard.h"
#include "pkt.h"

struct isnguard;
struct bench_steps;

#define MAX_ROUNDS 31
#define BENCH_PORT 18600	/* protected */
#define BENCH_OPEN_PORT 18601	/* not protected */
#define BENCH_COOKIE_SPORT 18602	/* the cookie ACKs' client port: no socket has it */
#define BENCH_CLIENT_ISN 0x1234567u

struct bcase {
	const char *name;
	int prog_fd;
	int target_fd;		/* harness cases: what bench_target holds, else -1 */
	bool tc;		/* a tc harness: the target goes in bench_target_tc */
	int forwarding;		/* the namespace's forwarding in its runs: 0, 1, or -1 either */
	int cookie_slots_back;	/* a cookie ACK made again each round (cookie_ack), or -1 */
	bool cookie_bad_mac;
	uint8_t frame[PKT_MAX_LEN];
	size_t len;
	double ns[MAX_ROUNDS];	/* sorted once the rounds are done */
	double round_ns[MAX_ROUNDS];	/* in the rounds' order */
	double median;
	struct bcase *other;	/* the same case with the other build's program (--other) */
	bool is_other;		/* run beside its case, not in the round's order */
};

/* bench_synproxy_env.c: the bench's own network namespace, its sockets and frames. */
extern const struct isn_key bench_key;
int bench_netns(void);
int set_forwarding(int on);
int listen_tcp(int family, uint16_t port);
int connect_loopback(uint16_t port, uint16_t *sport);
size_t linux_syn(int family, uint8_t *buf);
size_t loopback_ack(uint16_t sport, uint16_t dport, uint8_t *buf);
size_t cookie_ack(uint32_t slots_back, bool bad_mac, uint8_t *buf);

/* bench_synproxy_load.c: the datapath and the programs beside it, on its maps. */
int setup_datapath(struct isnguard **dp);
int setup_syn_tc(struct isnguard *dp, struct isnguard **syn_tc);
int setup_no_policy(struct isnguard *dp, struct isnguard **no_policy);
int setup_steps(struct isnguard *dp, struct bench_steps **steps);
int setup_other(struct isnguard *dp, const char *path, struct bpf_object **other);
uint64_t stat_sum(struct isnguard *dp, uint32_t stat);

#endif /* ISNGUARD_TEST_BENCH_SYNPROXY_H */
