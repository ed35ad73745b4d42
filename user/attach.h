/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * attach's options (user/attach.c), shared with the config file (user/config.c),
 * whose keys are these options' long names and go through the same table.
 */
#ifndef ISNGUARD_ATTACH_H
#define ISNGUARD_ATTACH_H

#include "cli.h"
#include "loader.h"
#include "policy.h"
#include "synproxy.h"

#define ATTACH_MAX_FLOWS_LIMIT (1U << 26)

extern const char *const attach_xdp_modes[];	/* native, skb */
extern const char *const attach_ingress_hooks[];	/* xdp, tc */

/* What the options said; choice indexes are -1 when not given. */
struct attach_params {
	int hash, xdp_mode, ingress, syn_hook, synproxy_mode, synproxy_path;
	uint32_t max_flows, syn_threshold, invalid_ack_rate;
	bool json, invalid_ack_rate_given, replace;
	const char *key_file;
	struct attach_timeouts timeouts;
	struct synproxy_request synproxy;
	struct policy_request policy;	/* the SYN policy's options (limits, monitor, lists) */
};

/* attach's parser over its option table. */
void attach_parser(struct cli_parser *p);
/* The table's destination, emptied (every choice -1). */
void attach_params_reset(void);
struct attach_params *attach_params_current(void);
/*
 * The request the params make, after the checks between options; 0 or
 * EXIT_USAGE. The SYN proxy's defaults are filled into in->synproxy, which
 * req->synproxy then points to.
 */
int attach_request_from(struct cli_parser *p, struct attach_params *in,
			struct attach_request *req);

#endif /* ISNGUARD_ATTACH_H */
