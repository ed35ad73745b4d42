// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_run.h"
#include "dp_fixture.h"
#include "harness.h"
#include "map_share.h"
#include "isnguard.skel.h"
#include "ref/isn_ref.h"

#define XDP_PASS_VERDICT 2
/* TC_ACT_UNSPEC: pass, and let later filters run. */
#define TC_ACT_UNSPEC_VERDICT ((uint32_t)-1)

static struct isnguard *skel;
static bool setup_failed;

/*
 * Every helper asks first: a test may go on to its clean-up (restoring the
 * config, the key) after dp_setup failed, and must fail there, not crash.
 */
static bool loaded(const char *what)
{
	if (skel)
		return true;
	FAIL("%s: isnguard.bpf.o is not loaded", what);
	return false;
}

void dp_test_key(struct isn_key *key)
{
	static const uint8_t bytes[ISN_KEY_LEN] = {
		0x9c, 0x41, 0x07, 0xe2, 0x5d, 0xb8, 0x13, 0x6a,
		0xf0, 0x2e, 0x84, 0xc7, 0x39, 0x5b, 0xa6, 0x1d,
	};

	memcpy(key->bytes, bytes, sizeof(bytes));
}

bool dp_restore_config(void)
{
	return dp_set_hash(ISN_HASH_SIPHASH) && dp_set_max_flows(0) &&
	       dp_set_timeouts(ISN_DEFAULT_TIMEOUT_OPENING, ISN_DEFAULT_TIMEOUT_ESTABLISHED,
			       ISN_DEFAULT_TIMEOUT_CLOSING, ISN_DEFAULT_TIMEOUT_CLOSED);
}

bool dp_setup(void)
{
	struct isn_key key;

	if (skel)
		return true;
	if (setup_failed) {
		FAIL("isnguard.bpf.o did not load (see the first failure)");
		return false;
	}
	skel = isnguard__open();
	if (skel)
		skel->rodata->dev_mac = DP_DEV_MAC;
	if (!skel || bpf_map__set_max_entries(skel->maps.isn_flows, DP_FLOW_TABLE_SIZE) ||
	    bpf_map__set_max_entries(skel->maps.isn_opening, DP_OPENING_TABLE_SIZE) ||
	    bpf_map__set_max_entries(skel->maps.isn_sweep_flows,
				     DP_FLOW_TABLE_SIZE + DP_OPENING_TABLE_SIZE + ISN_SWEEP_MARGIN) ||
	    bpf_map__set_max_entries(skel->maps.isn_sweep_opening,
				     2 * DP_OPENING_TABLE_SIZE + ISN_SWEEP_MARGIN) ||
	    bpf_map__set_max_entries(skel->maps.isn_sweep_long, DP_FLOW_TABLE_SIZE) ||
	    isnguard__load(skel)) {
		FAIL("load isnguard.bpf.o: %s", strerror(errno));
		isnguard__destroy(skel);
		skel = NULL;
		setup_failed = true;
		return false;
	}
	dp_test_key(&key);
	return dp_set_key(&key) && dp_restore_config() && dp_start_sweeper();
}

/* As the loader does (start_sweeper): isnguard_sweeper, run once. */
bool dp_start_sweeper(void)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);

	if (!loaded("dp_start_sweeper"))
		return false;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.isnguard_sweeper), &opts)) {
		FAIL("run isnguard_sweeper: %s", strerror(errno));
		return false;
	}
	if (opts.retval) {
		FAIL("isnguard_sweeper could not start the timer (flow_timer_error %llu)",
		     (unsigned long long)dp_stat(STAT_FLOW_TIMER_ERROR));
		return false;
	}
	return true;
}

bool dp_share_maps(struct bpf_object *obj)
{
	return dp_share_maps_except(obj, NULL);
}

bool dp_share_maps_except(struct bpf_object *obj, const char *prefix)
{
	const char *failed;

	if (!dp_setup())
		return false;
	failed = map_share(obj, skel->obj, prefix);
	if (failed)
		FAIL("share map %s: %s", failed, strerror(errno));
	return !failed;
}

/*
 * `attach --syn-hook tc`: the same object loaded again with syn_at_tc set,
 * its tc programs on the first one's maps. Loaded on first use.
 */
static struct isnguard *syn_tc_skel;

static bool syn_tc_load(void)
{
	struct bpf_program *p;

	if (syn_tc_skel)
		return true;
	syn_tc_skel = isnguard__open();
	if (!syn_tc_skel) {
		FAIL("open isnguard.bpf.o for --syn-hook tc: %s", strerror(errno));
		return false;
	}
	syn_tc_skel->rodata->dev_mac = DP_DEV_MAC;
	syn_tc_skel->rodata->syn_at_tc = true;
	bpf_object__for_each_program(p, syn_tc_skel->obj)
		bpf_program__set_autoload(p, p == syn_tc_skel->progs.isnguard_tc_ingress ||
					     p == syn_tc_skel->progs.isnguard_tc_egress);
	if (!dp_share_maps(syn_tc_skel->obj) || isnguard__load(syn_tc_skel)) {
		FAIL("load isnguard.bpf.o with syn_at_tc: %s", strerror(errno));
		isnguard__destroy(syn_tc_skel);
		syn_tc_skel = NULL;
		return false;
	}
	return true;
}

static struct bpf_program *prog_of(enum dp_prog prog)
{
	switch (prog) {
	case DP_TC_SYN:
		return syn_tc_load() ? syn_tc_skel->progs.isnguard_tc_ingress : NULL;
	case DP_TC_SYN_EGRESS:
		return syn_tc_load() ? syn_tc_skel->progs.isnguard_tc_egress : NULL;
	case DP_XDP_INGRESS:
		return skel->progs.isnguard_xdp;
	case DP_TC_INGRESS:
		return skel->progs.isnguard_tc_ingress;
	case DP_XDP_COOKIE:
		return skel->progs.isnguard_xdp_cookie;
	case DP_TC_COOKIE:
		return skel->progs.isnguard_tc_cookie;
	case DP_TC_TICK:
		return skel->progs.isnguard_tc_tick;
	default:
		return skel->progs.isnguard_tc_egress;
	}
}

const char *dp_prog_name(enum dp_prog prog)
{
	static const char *const names[] = { "xdp ingress", "tc ingress", "tc egress",
					     "xdp cookie", "tc cookie", "tc tick",
					     "tc ingress (syn-hook tc)", "tc egress (syn-hook tc)" };

	return names[prog];
}

uint32_t dp_pass_verdict(enum dp_prog prog)
{
	return prog == DP_XDP_INGRESS || prog == DP_XDP_COOKIE ? XDP_PASS_VERDICT
							       : TC_ACT_UNSPEC_VERDICT;
}

bool dp_run(enum dp_prog prog, const uint8_t *in, size_t in_len, uint8_t *out,
	    size_t *out_len, uint32_t *verdict)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = (uint32_t)in_len,
		.data_out = out,
		.data_size_out = PKT_MAX_LEN,
		.repeat = 1,
	);

	struct bpf_program *p;

	if (!loaded("dp_run"))
		return false;
	p = prog_of(prog);
	if (!p)
		return false;
	if (bpf_prog_test_run_opts(bpf_program__fd(p), &opts)) {
		FAIL("%s: BPF_PROG_TEST_RUN: %s", dp_prog_name(prog), strerror(errno));
		return false;
	}
	*out_len = opts.data_size_out;
	*verdict = opts.retval;
	return true;
}

int dp_prog_fd(enum dp_prog prog)
{
	struct bpf_program *p;

	if (!loaded("dp_prog_fd"))
		return -1;
	p = prog_of(prog);
	return p ? bpf_program__fd(p) : -1;
}

bool dp_run_repeat(enum dp_prog prog, const uint8_t *in, size_t in_len, uint32_t repeat,
		   uint32_t *verdict)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = (uint32_t)in_len,
		.repeat = repeat,
	);

	struct bpf_program *p;

	if (!loaded("dp_run_repeat"))
		return false;
	p = prog_of(prog);
	if (!p)
		return false;
	if (bpf_prog_test_run_opts(bpf_program__fd(p), &opts)) {
		FAIL("%s: BPF_PROG_TEST_RUN x%u: %s", dp_prog_name(prog), repeat, strerror(errno));
		return false;
	}
	*verdict = opts.retval;
	return true;
}

bool dp_set_key(const struct isn_key *key)
{
	uint32_t zero = 0;

	if (!loaded("dp_set_key"))
		return false;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_key), &zero, key, BPF_ANY)) {
		FAIL("set key: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool map_clear(int fd)
{
	struct flow_key key;

	/* Always the first key: each one deleted, the walk starts over. */
	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key) && errno != ENOENT) {
			FAIL("clear flow table: %s", strerror(errno));
			return false;
		}
	return true;
}

bool dp_flows_clear(void)
{
	int64_t zero_count = 0;
	uint32_t zero = 0;

	if (!loaded("dp_flows_clear"))
		return false;
	return map_clear(bpf_map__fd(skel->maps.isn_flows)) &&
	       map_clear(bpf_map__fd(skel->maps.isn_opening)) &&
	       map_clear(bpf_map__fd(skel->maps.isn_syn_resend)) &&
	       map_clear(bpf_map__fd(skel->maps.isn_resend_slots)) &&
	       map_clear(bpf_map__fd(skel->maps.isn_resend_queues)) &&
	       !bpf_map_update_elem(bpf_map__fd(skel->maps.isn_flow_count), &zero, &zero_count,
				    BPF_ANY);
}

int dp_local_addrs_fd(void)
{
	return loaded("dp_local_addrs_fd") ? bpf_map__fd(skel->maps.isn_local_addrs) : -1;
}

bool dp_set_key_slot(uint32_t slot, const struct isn_key *key)
{
	if (!loaded("dp_set_key_slot"))
		return false;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_key), &slot, key, BPF_ANY)) {
		FAIL("set key slot %u: %s", slot, strerror(errno));
		return false;
	}
	return true;
}

bool dp_set_synproxy(const struct synproxy_config *cfg, uint16_t port)
{
	struct synproxy_config cur, next;
	uint64_t bits;
	uint32_t zero = 0, word;
	int ports_fd;

	if (!loaded("dp_set_synproxy"))
		return false;
	ports_fd = bpf_map__fd(skel->maps.isn_synproxy_ports);
	for (word = 0; word < SYNPROXY_PORT_WORDS; word++) {
		bits = word == (uint32_t)port >> 6 ? 1ULL << (port & 63) : 0;
		if (bpf_map_update_elem(ports_fd, &word, &bits, BPF_ANY))
			goto fail;
	}
	/* As user/synproxy.c writes it: SYNPROXY_F_WAS_ON once it has been on. */
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_synproxy), &zero, &cur))
		goto fail;
	next = *cfg;
	next.flags = synproxy_flags_over(&next, &cur);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_synproxy), &zero, &next, BPF_ANY))
		goto fail;
	/* A fresh budget for invalid_ack_rate: none spent. */
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_invalid_acks), &zero,
				&(struct invalid_ack_budget){ 0 }, BPF_ANY))
		goto fail;
	return true;
fail:
	FAIL("set synproxy: %s", strerror(errno));
	return false;
}

/* An LPM trie emptied. */
static bool lpm_clear(int fd)
{
	uint8_t key[sizeof(struct prefix6_key)];

	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
			return false;
	return true;
}

/* Every set of isn_syn_buckets emptied, in one batch update. */
static bool buckets_clear(void)
{
	static struct syn_bucket_set sets[ISN_SYN_BUCKET_SETS];
	static uint32_t keys[ISN_SYN_BUCKET_SETS];
	uint32_t count = ISN_SYN_BUCKET_SETS;

	for (uint32_t i = 0; i < count; i++)
		keys[i] = i;
	return !bpf_map_update_batch(bpf_map__fd(skel->maps.isn_syn_buckets), keys, sets, &count,
				     NULL);
}

bool dp_set_syn_policy(const struct syn_policy *pol_in, const uint64_t *monitor)
{
	struct syn_policy pol = *pol_in, cur;
	uint32_t zero = 0;
	int monitor_fd;

	if (!loaded("dp_set_syn_policy"))
		return false;
	/* The list flags are dp_prefix_put's. */
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_syn_policy), &zero, &cur))
		goto fail;
	pol.flags |= cur.flags & (SYN_POLICY_LIST4 | SYN_POLICY_LIST6);
	syn_policy_derive(&pol);
	monitor_fd = bpf_map__fd(skel->maps.isn_synproxy_monitor);
	for (uint32_t word = 0; word < SYNPROXY_PORT_WORDS; word++) {
		uint64_t bits = monitor ? monitor[word] : 0;

		if (bpf_map_update_elem(monitor_fd, &word, &bits, BPF_ANY))
			goto fail;
	}
	if (!pol.source_hash_key[0] && !pol.source_hash_key[1]) {
		pol.source_hash_key[0] = 0x5d1c0ffee0ddf00dULL;
		pol.source_hash_key[1] = 0x0123456789abcdefULL;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_policy), &zero, &pol, BPF_ANY) ||
	    !buckets_clear() ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_total), &zero,
				&(struct syn_bucket){ 0 }, BPF_ANY))
		goto fail;
	return true;
fail:
	FAIL("set the SYN policy: %s", strerror(errno));
	return false;
}

bool dp_prefix_put(const char *prefix, uint32_t list)
{
	char addr[64];
	const char *slash = strchr(prefix, '/');
	struct prefix6_key k6 = { 0 };
	struct prefix4_key k4 = { 0 };
	struct syn_policy pol;
	uint32_t zero = 0;
	bool v6 = strchr(prefix, ':') != NULL;
	int fd;

	if (!loaded("dp_prefix_put"))
		return false;
	snprintf(addr, sizeof(addr), "%.*s", slash ? (int)(slash - prefix) : (int)strlen(prefix),
		 prefix);
	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, v6 ? (void *)k6.addr : (void *)k4.addr) != 1) {
		FAIL("bad prefix %s", prefix);
		return false;
	}
	k4.prefixlen = slash ? (uint32_t)atoi(slash + 1) : 32;
	k6.prefixlen = slash ? (uint32_t)atoi(slash + 1) : 128;
	fd = bpf_map__fd(v6 ? skel->maps.isn_prefix6 : skel->maps.isn_prefix4);
	if (bpf_map_update_elem(fd, v6 ? (void *)&k6 : (void *)&k4, &list, BPF_ANY) ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_syn_policy), &zero, &pol))
		goto fail;
	pol.flags |= v6 ? SYN_POLICY_LIST6 : SYN_POLICY_LIST4;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_policy), &zero, &pol, BPF_ANY))
		goto fail;
	return true;
fail:
	FAIL("put prefix %s: %s", prefix, strerror(errno));
	return false;
}

bool dp_syn_policy_clear(void)
{
	uint32_t zero = 0;

	if (!loaded("dp_syn_policy_clear"))
		return false;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_policy), &zero,
				&(struct syn_policy){ 0 }, BPF_ANY) ||
	    !lpm_clear(bpf_map__fd(skel->maps.isn_prefix4)) ||
	    !lpm_clear(bpf_map__fd(skel->maps.isn_prefix6)) || !buckets_clear()) {
		FAIL("clear the SYN policy: %s", strerror(errno));
		return false;
	}
	return true;
}

size_t dp_syn_buckets(void)
{
	struct syn_bucket_set set;
	size_t count = 0;
	int fd;

	if (!loaded("dp_syn_buckets"))
		return 0;
	fd = bpf_map__fd(skel->maps.isn_syn_buckets);
	for (uint32_t i = 0; i < ISN_SYN_BUCKET_SETS; i++) {
		if (bpf_map_lookup_elem(fd, &i, &set))
			break;
		for (int w = 0; w < SYN_BUCKET_WAYS; w++)
			count += set.tag[w] != 0;
	}
	return count;
}

bool dp_set_syn_rate(uint16_t port, const struct syn_rate *rate)
{
	uint32_t index = port;

	if (!loaded("dp_set_syn_rate"))
		return false;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_rate), &index, rate, BPF_ANY)) {
		FAIL("set syn rate: %s", strerror(errno));
		return false;
	}
	return true;
}

bool dp_get_syn_rate(uint16_t port, struct syn_rate *rate)
{
	uint32_t index = port;

	if (!loaded("dp_get_syn_rate"))
		return false;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_syn_rate), &index, rate)) {
		FAIL("read syn rate: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool config_update(void (*change)(struct isn_config *, const uint32_t *), const uint32_t *v)
{
	struct isn_config cfg;
	uint32_t zero = 0;
	int fd;

	if (!loaded("config_update"))
		return false;
	fd = bpf_map__fd(skel->maps.isn_config);
	if (bpf_map_lookup_elem(fd, &zero, &cfg)) {
		FAIL("read config: %s", strerror(errno));
		return false;
	}
	change(&cfg, v);
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY)) {
		FAIL("write config: %s", strerror(errno));
		return false;
	}
	return true;
}

static void change_hash(struct isn_config *cfg, const uint32_t *v)
{
	cfg->hash = v[0];
}

static void change_timeouts(struct isn_config *cfg, const uint32_t *v)
{
	cfg->timeout_opening = v[0];
	cfg->timeout_established = v[1];
	cfg->timeout_closing = v[2];
	cfg->timeout_closed = v[3];
	/* Each flow looked at every second: a test sees an expiry within 2 s of its timeout. */
	cfg->sweep_interval_ms = DP_SWEEP_INTERVAL_MS;
}

static void set_key_gen(struct isn_config *cfg, const uint32_t *v)
{
	cfg->key_gen = v[0];
	cfg->key_rotated_ns = (uint64_t)v[1] << 32 | v[2];
}

bool dp_set_key_gen(uint32_t key_gen, uint64_t rotated_ns)
{
	const uint32_t v[3] = { key_gen, (uint32_t)(rotated_ns >> 32), (uint32_t)rotated_ns };

	return config_update(set_key_gen, v);
}

static void set_max_flows(struct isn_config *cfg, const uint32_t *v)
{
	cfg->max_flows = v[0];
}

bool dp_set_max_flows(uint32_t max_flows)
{
	return config_update(set_max_flows, &max_flows);
}

bool dp_set_hash(enum isn_hash hash)
{
	uint32_t v = hash;

	return config_update(change_hash, &v);
}

bool dp_set_timeouts(uint32_t opening, uint32_t established, uint32_t closing, uint32_t closed)
{
	uint32_t v[4] = { opening, established, closing, closed };

	return config_update(change_timeouts, v);
}

bool dp_flow_get_in(const struct flow_key *fk, struct flow_state *st, bool *opening)
{
	bool found_opening = false, found;

	if (!loaded("dp_flow_get_in"))
		return false;
	found = bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_flows), fk, st) == 0;
	if (!found) {
		found = bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_opening), fk, st) == 0;
		found_opening = found;
	}
	if (opening)
		*opening = found_opening;
	return found;
}

bool dp_flow_get(const struct flow_key *fk, struct flow_state *st)
{
	return dp_flow_get_in(fk, st, NULL);
}

bool dp_flow_put(const struct flow_key *fk, const struct flow_state *st)
{
	if (!loaded("dp_flow_put"))
		return false;
	return bpf_map_update_elem(bpf_map__fd(skel->maps.isn_flows), fk, st, BPF_ANY) == 0;
}

bool dp_resend_get(const struct flow_key *fk, struct syn_resend *r)
{
	if (!loaded("dp_resend_get"))
		return false;
	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_syn_resend), fk, r) == 0;
}

/*
 * When the record's slot is due, computed here from its first SYN and its
 * step: 1, 3 and 7 s after the first, the give-up at the connect timeout.
 */
static uint64_t resend_due(const struct syn_resend *r)
{
	static const uint64_t due_s[SYNPROXY_RESEND_STEPS] = { 1, 3, 7 };

	if (r->resends >= SYNPROXY_SYN_RESENDS)
		return r->first_ns + SYNPROXY_CONNECT_TIMEOUT_NS;
	return r->first_ns + due_s[r->resends] * 1000000000ULL;
}

bool dp_resend_put(const struct flow_key *fk, const struct syn_resend *r)
{
	struct resend_slot_key sk = { .netns_ino = 0, .step = r->resends, .pos = r->queue_pos };
	int slots = bpf_map__fd(skel ? skel->maps.isn_resend_slots : NULL);
	struct resend_slot slot;

	if (!loaded("dp_resend_put"))
		return false;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_syn_resend), fk, r, BPF_ANY))
		return false;
	/* The slot the record names, if any, due as the record now says (the fixture's netns_ino: 0). */
	if (bpf_map_lookup_elem(slots, &sk, &slot) || memcmp(&slot.key, fk, sizeof(*fk)))
		return true;
	slot.due_ns = resend_due(r);
	return bpf_map_update_elem(slots, &sk, &slot, BPF_EXIST) == 0;
}

bool dp_resend_slot_get(const struct flow_key *fk, struct resend_slot *slot)
{
	struct resend_slot_key sk = { .netns_ino = 0 };
	struct syn_resend r;

	if (!dp_resend_get(fk, &r))
		return false;
	sk.step = r.resends;
	sk.pos = r.queue_pos;
	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_resend_slots), &sk, slot) == 0 &&
	       !memcmp(&slot->key, fk, sizeof(*fk));
}

bool dp_sweeper_get(struct flow_sweeper *sw)
{
	uint32_t zero = 0;

	if (!loaded("dp_sweeper_get"))
		return false;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_sweeper), &zero, sw)) {
		FAIL("read isn_sweeper: %s", strerror(errno));
		return false;
	}
	return true;
}

int64_t dp_flow_count(void)
{
	uint32_t zero = 0;
	int64_t count = -1;

	if (loaded("dp_flow_count") &&
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_flow_count), &zero, &count))
		FAIL("read isn_flow_count: %s", strerror(errno));
	return count;
}

uint64_t dp_stat(enum isn_stat stat)
{
	if (!loaded("dp_stat"))
		return UINT64_MAX;
	return percpu_u64_sum(bpf_map__fd(skel->maps.isn_stats), stat, sizeof(uint64_t), 0);
}

int dp_map_fd(const char *name)
{
	struct bpf_map *map;

	if (!loaded("dp_map_fd"))
		return -1;
	map = bpf_object__find_map_by_name(skel->obj, name);
	if (!map) {
		FAIL("no map %s in isnguard.bpf.o", name);
		return -1;
	}
	return bpf_map__fd(map);
}

int dp_prog_fd_by_name(const char *name)
{
	struct bpf_program *prog;

	if (!loaded("dp_prog_fd_by_name"))
		return -1;
	prog = bpf_object__find_program_by_name(skel->obj, name);
	if (!prog) {
		FAIL("no program %s in isnguard.bpf.o", name);
		return -1;
	}
	return bpf_program__fd(prog);
}

uint64_t dp_fastpath_predicted(void)
{
	if (!loaded("dp_fastpath_predicted"))
		return UINT64_MAX;
	return percpu_u64_sum(bpf_map__fd(skel->maps.isn_fastpath), 0,
			      sizeof(struct fastpath_scratch),
			      offsetof(struct fastpath_scratch, predicted));
}

void dp_flow_key_of(const struct pkt_spec *s, bool egress, struct flow_key *fk)
{
	size_t alen = s->family == 6 ? 16 : 4;

	memset(fk, 0, sizeof(*fk));
	fk->family = s->family == 6 ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4;
	memcpy(fk->local_addr, egress ? s->src : s->dst, alen);
	memcpy(fk->remote_addr, egress ? s->dst : s->src, alen);
	fk->local_port = htons(egress ? s->sport : s->dport);
	fk->remote_port = htons(egress ? s->dport : s->sport);
}

uint32_t dp_mono_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ref_isn_ticks((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}
