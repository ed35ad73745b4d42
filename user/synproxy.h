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

extern const struct map_layout isn_synproxy_layout;
extern const struct map_layout isn_synproxy_ports_layout;

/* What `attach --synproxy` asks for. */
struct synproxy_request {
	bool enabled;
	uint32_t mode;			/* enum synproxy_mode */
	uint32_t syn_threshold;
	uint64_t ports[SYNPROXY_PORT_WORDS];
};

const char *synproxy_mode_name(uint32_t mode);
/* SYNPROXY_ALWAYS or SYNPROXY_AUTO for "always"/"auto", else -1. */
int synproxy_mode_from_name(const char *name);
/* "22,80,8000-8099" or "all" into a port bitmap; -1 with *why on a bad list. */
int synproxy_parse_ports(const char *spec, uint64_t *ports, const char **why);
/* The bitmap as a list the parser takes back; returns how many ports are set. */
size_t synproxy_format_ports(const uint64_t *ports, char *buf, size_t len);
int synproxy_parse_threshold(const char *text, uint32_t *threshold, const char **why);

/* Whether the kernel has bpf_sk_assign_tcp_reqsk. */
bool synproxy_kernel_supported(void);
/* The kfunc and net.ipv4.tcp_syncookies 1 or 2; else a one-line error naming the fix. */
int synproxy_check_host(const char *what);
/* The host stack's options (sysctls of this network namespace) into cfg. */
void synproxy_host_params(struct synproxy_config *cfg);

int synproxy_read(int config_fd, int ports_fd, struct synproxy_config *cfg, uint64_t *ports);
int synproxy_write(int config_fd, int ports_fd, const struct synproxy_config *cfg,
		   const uint64_t *ports);
/* Text (jw NULL) or one JSON object. */
void synproxy_print(const struct synproxy_config *cfg, const uint64_t *ports,
		    struct json_writer *jw);

#endif /* ISNGUARD_USER_SYNPROXY_H */
