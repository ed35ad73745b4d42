// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The settings an attach writes into the state it loaded over: the
 * config (defaults on a fresh table, the hash and the sweeper's interval on
 * kept state), a fresh key, the SYN proxy's ports and mode with what the
 * host's stack negotiates, and the SYN policy (user/loader.c calls them in
 * that order, the policy before the SYN proxy).
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "isnguard.h"
#include "isnguard.skel.h"
#include "loader.h"
#include "policy.h"
#include "settings.h"
#include "synproxy.h"

/*
 * Defaults on a fresh table; on kept state only the hash, when asked for,
 * and, under a sweeper made anew (struct kept_maps), its interval: the
 * kept one was the walk's of the build before.
 */
int settings_write_config(struct isnguard *skel, const struct attach_request *req, bool fresh,
			  uint32_t max_flows, bool new_sweeper)
{
	const struct attach_timeouts *t = &req->timeouts;
	int hash = req->hash;
	int fd = bpf_map__fd(skel->maps.isn_config);
	struct isn_config cfg = { 0 };
	uint32_t zero = 0;

	if (!fresh && bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	if (fresh) {
		cfg.hash = ISN_HASH_SIPHASH;
		cfg.timeout_opening = ISN_DEFAULT_TIMEOUT_OPENING;
		cfg.timeout_established = ISN_DEFAULT_TIMEOUT_ESTABLISHED;
		cfg.timeout_closing = ISN_DEFAULT_TIMEOUT_CLOSING;
		cfg.timeout_closed = ISN_DEFAULT_TIMEOUT_CLOSED;
		cfg.sweep_interval_ms = isn_sweep_interval_ms(max_flows);
		cfg.max_flows = max_flows;
	}
	if (!fresh && new_sweeper)
		cfg.sweep_interval_ms = isn_sweep_interval_ms(cfg.max_flows ? cfg.max_flows : max_flows);
	if (hash >= 0)
		cfg.hash = (uint32_t)hash;
	/* Given timeouts, on fresh and kept state alike: the command line's word is the last. */
	if (t->given[ISN_TIMEOUT_OPENING])
		cfg.timeout_opening = t->seconds[ISN_TIMEOUT_OPENING];
	if (t->given[ISN_TIMEOUT_ESTABLISHED])
		cfg.timeout_established = t->seconds[ISN_TIMEOUT_ESTABLISHED];
	if (t->given[ISN_TIMEOUT_CLOSING])
		cfg.timeout_closing = t->seconds[ISN_TIMEOUT_CLOSING];
	if (t->given[ISN_TIMEOUT_CLOSED])
		cfg.timeout_closed = t->seconds[ISN_TIMEOUT_CLOSED];
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

int settings_write_fresh_key(struct isnguard *skel)
{
	struct isn_key key;
	uint32_t zero = 0;
	int err = 0;

	if (getrandom(key.bytes, sizeof(key.bytes), 0) != (ssize_t)sizeof(key.bytes))
		err = -EIO;
	else if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_key), &zero, &key, BPF_ANY))
		err = -errno;
	explicit_bzero(&key, sizeof(key));
	return err;
}

int settings_mark_was_on(int fd)
{
	struct synproxy_config cfg;
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	cfg.flags |= SYNPROXY_F_WAS_ON;
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/* The ports and mode of --synproxy, with what the host's stack negotiates. */
int settings_write_synproxy(struct isnguard *skel, const struct synproxy_request *sp)
{
	struct synproxy_config cfg = { .mode = sp->mode, .syn_threshold = sp->syn_threshold,
				       .path = sp->path, .invalid_ack_rate = sp->invalid_ack_rate };

	synproxy_host_params(&cfg);
	return synproxy_write(bpf_map__fd(skel->maps.isn_synproxy),
			      bpf_map__fd(skel->maps.isn_synproxy_ports), &cfg, sp->ports);
}

/*
 * The SYN policy: the defaults where no attach has written it (new state,
 * or a build's before it), then what the options give; monitored ports
 * follow the protected ones; a list given becomes exactly its prefixes.
 * Before the SYN proxy's settings, so that ports switched on in monitor
 * mode never get an answer.
 */
int settings_write_policy(struct isnguard *skel, const struct attach_request *req)
{
	static uint64_t monitor[SYNPROXY_PORT_WORDS];
	const struct policy_request *want = req->policy;
	int fd = bpf_map__fd(skel->maps.isn_syn_policy);
	int monitor_fd = bpf_map__fd(skel->maps.isn_synproxy_monitor);
	struct syn_policy pol;
	size_t added, removed;
	int err = policy_read(fd, monitor_fd, &pol, monitor);

	if (err)
		return err;
	if (!(pol.flags & SYN_POLICY_SET))
		policy_defaults(&pol);
	if (want)
		policy_apply_request(&pol, monitor, want);
	if (req->synproxy)
		policy_follow_ports(&pol, monitor, req->synproxy->ports);
	err = policy_write(fd, monitor_fd, &pol, monitor);
	if (!err && want && (want->deny_given || want->allow_given))
		err = prefix_lists_set("attach", &want->prefixes, want->deny_given,
				       want->allow_given, false, &added, &removed);
	return err;
}
