/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The SYN proxy's settings: port lists, host checks, the pinned maps (user/synproxy.c). */
#ifndef ISNGUARD_USER_SYNPROXY_H
#define ISNGUARD_USER_SYNPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isnguard.h"
#include "json_writer.h"
#include "maps.h"

#define SYNPROXY_DEFAULT_THRESHOLD 1000
#define SYNPROXY_MAX_THRESHOLD 100000000U

struct cli_parser;
struct cli_option;

extern const struct map_layout isn_synproxy_layout;
extern const struct map_layout isn_synproxy_ports_layout;

/* What `attach --synproxy` asks for. */
struct synproxy_request {
	bool enabled;
	uint32_t mode;			/* enum synproxy_mode */
	uint32_t syn_threshold;
	uint32_t path;			/* enum synproxy_path */
	uint32_t invalid_ack_rate;	/* ACKs/s failing the cookie check handed to the stack */
	uint64_t ports[SYNPROXY_PORT_WORDS];
};

const char *synproxy_mode_name(uint32_t mode);
/* "always", "auto": the --synproxy-mode / --mode choices. */
extern const char *const synproxy_modes[];
/* The --synproxy PORTS option (a CLI_CUSTOM row): the ports into a struct synproxy_request. */
int synproxy_ports_option(struct cli_parser *p, const struct cli_option *o, int argc,
			  char **argv, const char *arg);
/* SYNPROXY_ALWAYS or SYNPROXY_AUTO for "always"/"auto", else -1. */
int synproxy_mode_from_name(const char *name);
/* "22,80,8000-8099" or "all" into a port bitmap; -1 with *why on a bad list. */
int synproxy_parse_ports(const char *spec, uint64_t *ports, const char **why);
/* The bitmap as a list the parser takes back; returns how many ports are set. */
size_t synproxy_format_ports(const uint64_t *ports, char *buf, size_t len);
/* Whether port is in the set (isn_synproxy_ports' layout, and isn_synproxy_monitor's). */
bool synproxy_port_is_set(const uint64_t *ports, unsigned int port);

/* "auto", "local", "translate": the --synproxy-path / --path choices, by enum synproxy_path. */
extern const char *const synproxy_paths[];
const char *synproxy_path_name(uint32_t path);
/* Whether the kernel has bpf_sk_assign_tcp_reqsk. */
bool synproxy_kernel_supported(void);
/*
 * What the path needs of the host: the local path the kfunc and
 * net.ipv4.tcp_syncookies 1 or 2 (auto only where the kfunc exists; else
 * it translates); else a one-line error naming the fix.
 */
int synproxy_check_host(const char *what, uint32_t path);
/* The host stack's options (sysctls of this network namespace) into cfg. */
void synproxy_host_params(struct synproxy_config *cfg);

int synproxy_read(int config_fd, int ports_fd, struct synproxy_config *cfg, uint64_t *ports);
/* The same from the pinned maps: 0 or -errno (no state: -ENOENT). */
int synproxy_read_pinned(struct synproxy_config *cfg, uint64_t *ports);
int synproxy_write(int config_fd, int ports_fd, const struct synproxy_config *cfg,
		   const uint64_t *ports);
/* The SYN policy beside the settings, as synproxy_print shows it (user/policy.c). */
struct policy_view {
	const struct syn_policy *pol;
	const uint64_t *monitor;	/* isn_synproxy_monitor's bitmap */
	long buckets;			/* isn_syn_buckets' buckets held; < 0: unknown */
	long spending;			/* of them, not full */
	uint32_t buckets_max;
};

/* Text (jw NULL) or one JSON object; view (may be NULL) adds the SYN policy. */
void synproxy_print(const struct synproxy_config *cfg, const uint64_t *ports,
		    const struct policy_view *view, struct json_writer *jw);

#endif /* ISNGUARD_USER_SYNPROXY_H */
