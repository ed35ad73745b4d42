// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN policy's settings in the pinned maps isn_syn_policy and
 * isn_synproxy_monitor: the SYN-ACK limits per source prefix and for the
 * host, and monitor mode; attach writes them (the defaults on state it
 * makes), `synproxy` changes them live, apply makes them the file's, status
 * shows them with the bucket table's fill. The prefix lists are
 * user/prefix.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "pinned.h"
#include "policy.h"
#include "synproxy.h"

const struct map_layout isn_syn_policy_layout = {
	ISN_MAP_SYN_POLICY, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct syn_policy), 1,
};
const struct map_layout isn_synproxy_monitor_layout = {
	ISN_MAP_SYNPROXY_MONITOR, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(__u64),
	SYNPROXY_PORT_WORDS,
};
const struct map_layout isn_syn_buckets_layout = {
	ISN_MAP_SYN_BUCKETS, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct syn_bucket_set),
	ISN_SYN_BUCKET_SETS,
};
const struct map_layout isn_prefix4_layout = {
	ISN_MAP_PREFIX4, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct prefix4_key), sizeof(__u32), 1,
};
const struct map_layout isn_prefix6_layout = {
	ISN_MAP_PREFIX6, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct prefix6_key), sizeof(__u32), 1,
};

/* --- options ---------------------------------------------------------------- */

int policy_monitor_option(struct cli_parser *p, const struct cli_option *o,
			  int argc __attribute__((unused)), char **argv __attribute__((unused)),
			  const char *arg)
{
	struct policy_request *req = o->dest;
	const char *why;

	memset(req->monitor_ports, 0, sizeof(req->monitor_ports));
	if (!strcmp(arg, "off")) {
		req->monitor = SYN_MONITOR_OFF;
		return 0;
	}
	if (!strcmp(arg, "all")) {
		req->monitor = SYN_MONITOR_ALL;
		return 0;
	}
	if (synproxy_parse_ports(arg, req->monitor_ports, &why))
		return cli_usage_error(p, "bad --%s '%s': %s (or all, off)", o->name, arg, why);
	req->monitor = SYN_MONITOR_PORTS;
	return 0;
}

static int prefix_option(struct cli_parser *p, const struct cli_option *o, const char *arg,
			 uint32_t list)
{
	struct policy_request *req = o->dest;
	struct prefix_entry e, *grown;
	const char *why;

	if (prefix_parse(arg, list, &e, &why))
		return cli_usage_error(p, "bad --%s '%s': %s", o->name, arg, why);
	for (size_t i = 0; i < req->prefixes.count; i++) {
		const struct prefix_entry *x = &req->prefixes.entry[i];

		if (x->family == e.family && x->len == e.len && !memcmp(x->addr, e.addr, 16)) {
			if (x->list == list)
				return 0;
			return cli_usage_error(p, "--%s '%s': on the %s list too", o->name, arg,
					       prefix_list_name(x->list));
		}
	}
	grown = realloc(req->prefixes.entry, (req->prefixes.count + 1) * sizeof(*grown));
	if (!grown)
		return cli_usage_error(p, "--%s: out of memory", o->name);
	grown[req->prefixes.count++] = e;
	req->prefixes.entry = grown;
	if (list == SYN_LIST_DENY)
		req->deny_given = true;
	else
		req->allow_given = true;
	return 0;
}

int policy_deny_option(struct cli_parser *p, const struct cli_option *o,
		       int argc __attribute__((unused)), char **argv __attribute__((unused)),
		       const char *arg)
{
	return prefix_option(p, o, arg, SYN_LIST_DENY);
}

int policy_allow_option(struct cli_parser *p, const struct cli_option *o,
			int argc __attribute__((unused)), char **argv __attribute__((unused)),
			const char *arg)
{
	return prefix_option(p, o, arg, SYN_LIST_ALLOW);
}

const char *policy_monitor_check(const struct policy_request *req, const uint64_t *ports)
{
	if (req->monitor != SYN_MONITOR_PORTS)
		return NULL;
	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++)
		if (req->monitor_ports[i] & ~ports[i])
			return "the ports to monitor must be among the SYN proxy's ports";
	return NULL;
}

bool policy_request_answers(const struct policy_request *req, const uint64_t *ports)
{
	if (!req || req->monitor == SYN_MONITOR_OFF || req->monitor < 0)
		return true;
	if (req->monitor == SYN_MONITOR_ALL)
		return false;
	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++)
		if (ports[i] & ~req->monitor_ports[i])
			return true;
	return false;
}

/* --- the settings ------------------------------------------------------------ */

void policy_defaults(struct syn_policy *pol)
{
	uint32_t lists = pol->flags & (SYN_POLICY_LIST4 | SYN_POLICY_LIST6);
	__u64 key[2] = { pol->source_hash_key[0], pol->source_hash_key[1] };

	/* The hash key stays: a new one would forget every source's bucket. */
	if (!key[0] && !key[1] && getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		key[0] = 0x9e3779b97f4a7c15ULL ^ (__u64)getpid();	/* no entropy: not secret */
	memset(pol, 0, sizeof(*pol));
	pol->source_hash_key[0] = key[0];
	pol->source_hash_key[1] = key[1];
	pol->source_rate = SYN_SOURCE_RATE_DEFAULT;
	pol->source_burst = SYN_SOURCE_BURST_DEFAULT;
	pol->source_prefix4 = SYN_SOURCE_PREFIX4_DEFAULT;
	pol->source_prefix6 = SYN_SOURCE_PREFIX6_DEFAULT;
	pol->flags = SYN_POLICY_SET | lists;
	syn_policy_derive(pol);
}

void policy_apply_request(struct syn_policy *pol, uint64_t *monitor,
			  const struct policy_request *req)
{
	if (req->source_rate_given)
		pol->source_rate = req->source_rate;
	if (req->source_burst_given)
		pol->source_burst = req->source_burst;
	if (req->total_rate_given)
		pol->total_rate = req->total_rate;
	if (req->prefix4_given)
		pol->source_prefix4 = (uint8_t)req->prefix4;
	if (req->prefix6_given)
		pol->source_prefix6 = (uint8_t)req->prefix6;
	if (req->monitor >= 0) {
		pol->monitor = (uint8_t)req->monitor;
		memcpy(monitor, req->monitor_ports, SYNPROXY_PORT_WORDS * sizeof(*monitor));
	}
	syn_policy_derive(pol);
}

void policy_follow_ports(struct syn_policy *pol, uint64_t *monitor, const uint64_t *ports)
{
	bool any = false;

	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++) {
		monitor[i] &= ports[i];
		any |= monitor[i] != 0;
	}
	if (pol->monitor == SYN_MONITOR_PORTS && !any)
		pol->monitor = SYN_MONITOR_OFF;
}

int policy_read(int fd, int monitor_fd, struct syn_policy *pol, uint64_t *monitor)
{
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, pol))
		return -errno;
	for (uint32_t i = 0; i < SYNPROXY_PORT_WORDS; i++)
		if (bpf_map_lookup_elem(monitor_fd, &i, &monitor[i]))
			return -errno;
	return 0;
}

int policy_read_pinned(struct syn_policy *pol, uint64_t *monitor)
{
	int fd = pinned_map_open(ISN_MAP_SYN_POLICY);
	int monitor_fd = pinned_map_open(ISN_MAP_SYNPROXY_MONITOR);
	int err = fd < 0 ? fd : monitor_fd < 0 ? monitor_fd
		  : policy_read(fd, monitor_fd, pol, monitor);

	if (fd >= 0)
		close(fd);
	if (monitor_fd >= 0)
		close(monitor_fd);
	return err;
}

int policy_open(const char *cmd, int *fd, int *monitor_fd)
{
	*fd = map_open_checked(cmd, &isn_syn_policy_layout, NULL);
	if (*fd < 0)
		return *fd;
	*monitor_fd = map_open_checked(cmd, &isn_synproxy_monitor_layout, NULL);
	if (*monitor_fd < 0) {
		close(*fd);
		return *monitor_fd;
	}
	return 0;
}

/*
 * The monitored ports before the mode that reads them when monitor mode
 * goes on, after it when it goes off: no SYN meets a half-written set.
 */
int policy_write(int fd, int monitor_fd, const struct syn_policy *pol_in, const uint64_t *monitor)
{
	struct syn_policy pol = *pol_in, cur;
	uint32_t zero = 0;
	int err = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cur))
		memset(&cur, 0, sizeof(cur));
	pol.flags = SYN_POLICY_SET | (cur.flags & (SYN_POLICY_LIST4 | SYN_POLICY_LIST6));
	syn_policy_derive(&pol);
	if (pol.monitor != SYN_MONITOR_PORTS && bpf_map_update_elem(fd, &zero, &pol, BPF_ANY))
		return -errno;
	for (uint32_t i = 0; i < SYNPROXY_PORT_WORDS && !err; i++)
		if (bpf_map_update_elem(monitor_fd, &i, &monitor[i], BPF_ANY))
			err = -errno;
	if (!err && pol.monitor == SYN_MONITOR_PORTS && bpf_map_update_elem(fd, &zero, &pol, BPF_ANY))
		err = -errno;
	return err;
}

bool policy_differs(const struct syn_policy *a, const uint64_t *a_monitor,
		    const struct syn_policy *b, const uint64_t *b_monitor)
{
	return a->source_rate != b->source_rate || a->source_burst != b->source_burst ||
	       a->total_rate != b->total_rate || a->source_prefix4 != b->source_prefix4 ||
	       a->source_prefix6 != b->source_prefix6 || a->monitor != b->monitor ||
	       (a->monitor == SYN_MONITOR_PORTS &&
		memcmp(a_monitor, b_monitor, SYNPROXY_PORT_WORDS * sizeof(*a_monitor)));
}

struct bucket_fill {
	__u64 now;
	size_t held, spending;
};

/*
 * Ways holding a source, and of those the ones whose bucket is not full:
 * what forgetting them would lose (a full bucket is as good as none).
 */
static int count_chunk(const void *keys __attribute__((unused)), const void *values,
		       size_t count, void *ctx)
{
	const struct syn_bucket_set *sets = values;
	struct bucket_fill *fill = ctx;

	for (size_t i = 0; i < count; i++)
		for (int w = 0; w < SYN_BUCKET_WAYS; w++) {
			fill->held += sets[i].tag[w] != 0;
			fill->spending += sets[i].tag[w] && (__s64)(sets[i].tat_ns[w] - fill->now) > 0;
		}
	return 0;
}

int policy_bucket_fill(size_t *held, size_t *spending, uint32_t *max_entries)
{
	struct bpf_map_info info = { 0 };
	struct bucket_fill fill = { 0 };
	__u32 len = sizeof(info);
	struct timespec ts;
	int fd = pinned_map_open(ISN_MAP_SYN_BUCKETS), err;

	*held = *spending = 0;
	*max_entries = 0;
	if (fd < 0)
		return fd;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);	/* bpf_ktime_get_coarse_ns's clock */
	fill.now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (!err)
		err = map_walk(fd, sizeof(__u32), sizeof(struct syn_bucket_set), count_chunk, &fill);
	*held = fill.held;
	*spending = fill.spending;
	*max_entries = info.max_entries * SYN_BUCKET_WAYS;
	close(fd);
	return err;
}

size_t policy_monitored_ports(const struct syn_policy *pol, const uint64_t *ports,
			      const uint64_t *monitor, uint64_t *out)
{
	size_t count = 0;

	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++) {
		out[i] = pol->monitor == SYN_MONITOR_ALL ? ports[i]
			 : pol->monitor == SYN_MONITOR_PORTS ? ports[i] & monitor[i] : 0;
		count += (size_t)__builtin_popcountll(out[i]);
	}
	return count;
}

static const char *const monitor_names[] = {
	[SYN_MONITOR_OFF] = "off", [SYN_MONITOR_PORTS] = "ports", [SYN_MONITOR_ALL] = "all",
};

void policy_print(const struct syn_policy *pol, const uint64_t *ports, const uint64_t *monitor,
		  long buckets, long spending, uint32_t buckets_max, struct json_writer *jw)
{
	static uint64_t watched[SYNPROXY_PORT_WORDS];
	char list[512];
	size_t count = policy_monitored_ports(pol, ports, monitor, watched);

	synproxy_format_ports(watched, list, sizeof(list));
	if (jw) {
		jw_uint_field(jw, "source_rate", pol->source_rate);
		jw_uint_field(jw, "source_burst", pol->source_burst);
		jw_uint_field(jw, "source_prefix4", pol->source_prefix4);
		jw_uint_field(jw, "source_prefix6", pol->source_prefix6);
		jw_uint_field(jw, "total_rate", pol->total_rate);
		jw_string_field(jw, "monitor", pol->monitor <= SYN_MONITOR_ALL
						       ? monitor_names[pol->monitor] : "unknown");
		jw_string_field(jw, "monitor_ports", list);
		jw_uint_field(jw, "monitor_port_count", count);
		if (buckets >= 0) {
			jw_uint_field(jw, "source_buckets", (uint64_t)buckets);
			jw_uint_field(jw, "source_buckets_spending", (uint64_t)spending);
			jw_uint_field(jw, "source_buckets_max", buckets_max);
		}
		return;
	}
	if (count)
		printf("          MONITOR ONLY, ports %s: SYNs are counted (syn_monitor_would_*) "
		       "and passed to the host, none answered\n", list);
	if (pol->source_rate)
		printf("          SYN-ACKs per source prefix (/%u, /%u): %u/s, burst %u",
		       pol->source_prefix4, pol->source_prefix6, pol->source_rate,
		       pol->source_burst);
	else
		printf("          SYN-ACKs per source prefix: no limit");
	if (buckets >= 0)
		printf(" (buckets: %ld of %u held, %ld not full)", buckets, buckets_max, spending);
	if (pol->total_rate)
		printf("; in all: %u/s\n", pol->total_rate);
	else
		printf("; in all: no limit\n");
}
