/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN policy's settings (user/policy.c; struct syn_policy in
 * include/isnguard.h): the SYN-ACK limits, monitor mode, the prefix lists
 * (the `prefix` command, user/prefix.c), as attach, synproxy, apply and
 * status read and write them in the pinned maps.
 */
#ifndef ISNGUARD_USER_POLICY_H
#define ISNGUARD_USER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isnguard.h"
#include "json_writer.h"
#include "maps.h"

struct cli_parser;
struct cli_option;

extern const struct map_layout isn_syn_policy_layout;
extern const struct map_layout isn_synproxy_monitor_layout;
extern const struct map_layout isn_syn_buckets_layout;
extern const struct map_layout isn_prefix4_layout;
extern const struct map_layout isn_prefix6_layout;

/* One prefix of a list: family 4 or 6, the address with the bits past len clear. */
struct prefix_entry {
	uint8_t family;
	uint8_t len;
	uint8_t addr[16];
	uint32_t list;		/* enum syn_list */
};

/* A set of prefixes, as the options --deny and --allow collect them. */
struct prefix_set {
	struct prefix_entry *entry;
	size_t count;
};

/* What attach's and synproxy's options ask of the policy; each field only where given. */
struct policy_request {
	uint32_t source_rate, source_burst, total_rate, prefix4, prefix6;
	bool source_rate_given, source_burst_given, total_rate_given, prefix4_given, prefix6_given;
	int monitor;			/* enum syn_monitor, -1: not given */
	uint64_t monitor_ports[SYNPROXY_PORT_WORDS];	/* SYN_MONITOR_PORTS */
	struct prefix_set prefixes;	/* --deny and --allow, in order */
	bool deny_given, allow_given;	/* that list is to be exactly its entries in prefixes */
};

/*
 * The SYN-ACK limits' rows, the same in attach's table and synproxy's
 * (user/synproxy.c): r is the struct policy_request they fill. Their
 * short names are past any other option's of either table.
 */
enum {
	POLICY_OPT_SOURCE_RATE = 0x400,
	POLICY_OPT_SOURCE_BURST,
	POLICY_OPT_SOURCE_PREFIX4,
	POLICY_OPT_SOURCE_PREFIX6,
	POLICY_OPT_TOTAL_RATE,
	POLICY_OPT_MONITOR,
};

#define POLICY_ROWS(r)								\
	CLI_OPT_U32("source-rate", POLICY_OPT_SOURCE_RATE, "N", &(r).source_rate, 0, SYN_RATE_MAX,	\
		    "SYN-ACKs per second one source prefix draws, past its burst; the rest "	\
		    "of its SYNs are dropped (default 10000; 0: no limit)",			\
		    .given = &(r).source_rate_given),						\
	CLI_OPT_U32("source-burst", POLICY_OPT_SOURCE_BURST, "N", &(r).source_burst, 1, SYN_RATE_MAX,	\
		    "SYN-ACKs one source prefix draws at once (default 20000)",		\
		    .given = &(r).source_burst_given),						\
	CLI_OPT_U32("source-prefix4", POLICY_OPT_SOURCE_PREFIX4, "LEN", &(r).prefix4, 1, 32,		\
		    "the IPv4 prefix one bucket stands for (default 32)",			\
		    .given = &(r).prefix4_given),						\
	CLI_OPT_U32("source-prefix6", POLICY_OPT_SOURCE_PREFIX6, "LEN", &(r).prefix6, 1, 128,		\
		    "the IPv6 prefix one bucket stands for (default 64)",			\
		    .given = &(r).prefix6_given),						\
	CLI_OPT_U32("total-rate", POLICY_OPT_TOTAL_RATE, "N", &(r).total_rate, 0, SYN_RATE_MAX,		\
		    "SYN-ACKs per second in all, past a tenth of a second's burst "		\
		    "(default 0: no cap)", .given = &(r).total_rate_given)

/* The option rows: --monitor PORTS|all|off, --deny PREFIX, --allow PREFIX (CLI_CUSTOM). */
int policy_monitor_option(struct cli_parser *p, const struct cli_option *o, int argc,
			  char **argv, const char *arg);
int policy_deny_option(struct cli_parser *p, const struct cli_option *o, int argc, char **argv,
		       const char *arg);
int policy_allow_option(struct cli_parser *p, const struct cli_option *o, int argc,
			char **argv, const char *arg);
/*
 * Whether a SYN proxy on ports with req's monitor mode answers any of them
 * (the SYN-ACKs must then reach the peer); req NULL: it does.
 */
bool policy_request_answers(const struct policy_request *req, const uint64_t *ports);
/* Whether the monitored ports asked for are all among ports; else the usage error's words. */
const char *policy_monitor_check(const struct policy_request *req, const uint64_t *ports);

/* The defaults of a state no attach has written (SYN_POLICY_SET clear). */
void policy_defaults(struct syn_policy *pol);
/* pol with what req gives; monitored ports into monitor (SYNPROXY_PORT_WORDS words). */
void policy_apply_request(struct syn_policy *pol, uint64_t *monitor,
			  const struct policy_request *req);
/*
 * The settings after the protected ports became ports: monitored ports
 * that are not protected go (and monitor mode with the last of them).
 */
void policy_follow_ports(struct syn_policy *pol, uint64_t *monitor, const uint64_t *ports);

int policy_read(int fd, int monitor_fd, struct syn_policy *pol, uint64_t *monitor);
/* The same from the pinned maps: 0 or -errno (no state: -ENOENT). */
int policy_read_pinned(struct syn_policy *pol, uint64_t *monitor);
/* Derived fields made, SYN_POLICY_SET set, the list flags as the map has them kept. */
int policy_write(int fd, int monitor_fd, const struct syn_policy *pol, const uint64_t *monitor);
/* Both maps opened, layout-checked, for cmd; 0 or -errno after the error line. */
int policy_open(const char *cmd, int *fd, int *monitor_fd);
/* Whether two settings differ in what an operator sets (not the list flags). */
bool policy_differs(const struct syn_policy *a, const uint64_t *a_monitor,
		    const struct syn_policy *b, const uint64_t *b_monitor);

/*
 * isn_syn_buckets now: the buckets holding a source, those of them not
 * full (the source spent within its burst's time), and how many it has.
 * 0 or -errno.
 */
int policy_bucket_fill(size_t *held, size_t *spending, uint32_t *max_entries);
/*
 * Text (jw NULL) or the fields of the caller's open JSON object. ports:
 * the protected ones, which the monitored are among; buckets < 0: unknown.
 */
void policy_print(const struct syn_policy *pol, const uint64_t *ports, const uint64_t *monitor,
		  long buckets, long spending, uint32_t buckets_max, struct json_writer *jw);
/* The ports the SYN proxy only watches, of ports (into out); how many. */
size_t policy_monitored_ports(const struct syn_policy *pol, const uint64_t *ports,
			      const uint64_t *monitor, uint64_t *out);

/* --- the prefix lists (user/prefix.c) --- */
/* "198.51.100.0/24", "2001:db8::/32", an address alone (/32, /128); -1 with *why. */
int prefix_parse(const char *text, uint32_t list, struct prefix_entry *e, const char **why);
void prefix_format(const struct prefix_entry *e, char *buf, size_t len);
const char *prefix_list_name(uint32_t list);
/* Every entry of both lists, sorted (free *out): 0 or -errno. */
int prefix_lists_read(struct prefix_entry **out, size_t *count);
/*
 * The lists made what want says: each list whose *_given is set becomes
 * exactly want's entries of it; the others are kept. With dry_run nothing
 * changes. *added, *removed: how many entries would change. 0 or -errno.
 */
int prefix_lists_set(const char *cmd, const struct prefix_set *want, bool deny, bool allow,
		     bool dry_run, size_t *added, size_t *removed);

#endif /* ISNGUARD_USER_POLICY_H */
