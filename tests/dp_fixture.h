/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The datapath object under test (build/isnguard.bpf.o through its
 * skeleton), loaded once without pinning, with helpers to run a crafted
 * frame through one of its programs and to read its maps.
 */
#ifndef ISNGUARD_TEST_DP_FIXTURE_H
#define ISNGUARD_TEST_DP_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isnguard.h"
#include "pkt.h"

struct bpf_object;

enum dp_prog {
	DP_XDP_INGRESS,
	DP_TC_INGRESS,
	DP_TC_EGRESS,
	DP_XDP_COOKIE,		/* the SYN-proxy half alone, beside tc ingress */
	DP_TC_COOKIE,		/* cookie ACKs beside XDP ingress */
	DP_TC_TICK,		/* the tick device's ingress: the proxy's SYN resends */
	DP_TC_SYN,		/* tc ingress with `--syn-hook tc`: SYN cookies answered there */
	DP_TC_SYN_EGRESS,	/* tc egress beside it */
};

#define DP_FLOW_TABLE_SIZE 4096
/* Small, so a test can overflow it like a SYN flood does. */
#define DP_OPENING_TABLE_SIZE 256
/*
 * The MAC the fixture's object takes for its device's own (the loader's
 * dev_mac): test_synproxy's SYNs are sent to it.
 */
#define DP_DEV_MAC 0x020000000001ULL
/* The sweep interval the fixture's config has (the loader's is 10 s or more). */
#define DP_SWEEP_INTERVAL_MS 1000

/* Loads the object on first use and sets key and config; false (and a failed test) if it cannot. */
bool dp_setup(void);
const char *dp_prog_name(enum dp_prog prog);

/* The verdict a program gives a frame it lets through. */
uint32_t dp_pass_verdict(enum dp_prog prog);

/* A program's fd, for a run with its own options (a context); -1 and a failed test if none. */
int dp_prog_fd(enum dp_prog prog);

/* Runs a frame through prog; out receives the frame as it leaves. */
bool dp_run(enum dp_prog prog, const uint8_t *in, size_t in_len, uint8_t *out,
	    size_t *out_len, uint32_t *verdict);

/*
 * Runs a frame through prog repeat times in one test run (the program sees
 * its own output from the second time on); *verdict is the last one.
 */
bool dp_run_repeat(enum dp_prog prog, const uint8_t *in, size_t in_len, uint32_t repeat,
		   uint32_t *verdict);

/*
 * Before obj (a test-only object built from the datapath's headers) is
 * loaded: each of its maps named as one of the datapath's uses that map,
 * so its programs see and change the same flows, config and counters.
 */
bool dp_share_maps(struct bpf_object *obj);
/* The same but for the maps whose names start with prefix: obj makes its own. */
bool dp_share_maps_except(struct bpf_object *obj, const char *prefix);

/* Key and config; config changes apply to new flows (and timers) only. */
void dp_test_key(struct isn_key *key);
bool dp_set_key(const struct isn_key *key);
bool dp_set_hash(enum isn_hash hash);
bool dp_set_timeouts(uint32_t opening, uint32_t established, uint32_t closing, uint32_t closed);
bool dp_restore_config(void);
/* --max-flows as the loader writes it (0: no limit but the map's). */
bool dp_set_max_flows(uint32_t max_flows);

/* Flow table access: either table; *opening tells whether it is the handshake one. */
bool dp_flow_get(const struct flow_key *fk, struct flow_state *st);
/* Writes an entry of the flow table (isn_flows), made or replaced. */
bool dp_flow_put(const struct flow_key *fk, const struct flow_state *st);
bool dp_flow_get_in(const struct flow_key *fk, struct flow_state *st, bool *opening);

/*
 * The translating proxy's resend record of a flow (isn_syn_resend). A record
 * put moves the slot it names (its step and position) to when it is due by
 * the record's first SYN; dp_resend_slot_get reads that slot.
 */
bool dp_resend_get(const struct flow_key *fk, struct syn_resend *r);
bool dp_resend_put(const struct flow_key *fk, const struct syn_resend *r);
bool dp_resend_slot_get(const struct flow_key *fk, struct resend_slot *slot);

/* The SYN proxy: mode (SYNPROXY_OFF to switch it off), settings and one protected port. */
bool dp_set_synproxy(const struct synproxy_config *cfg, uint16_t port);
/* Key generation and rotation time in the config (the key map has ISN_KEY_SLOTS slots). */
bool dp_set_key_gen(uint32_t key_gen, uint64_t rotated_ns);
bool dp_set_key_slot(uint32_t slot, const struct isn_key *key);
/* The auto-mode rate record of a port. */
bool dp_set_syn_rate(uint16_t port, const struct syn_rate *rate);
bool dp_get_syn_rate(uint16_t port, struct syn_rate *rate);

/*
 * The SYN policy (bpf/syn_policy.h): its settings, derived fields made,
 * and the monitored ports' bitmap (NULL: none); the source buckets and the
 * host's emptied, so a test starts with full buckets.
 */
bool dp_set_syn_policy(const struct syn_policy *pol, const uint64_t *monitor);
/* A prefix into its family's list (enum syn_list), the policy's flag for the family set. */
bool dp_prefix_put(const char *prefix, uint32_t list);
/* Back to no policy at all: no limit, no list, no monitor (what other tests expect). */
bool dp_syn_policy_clear(void);
/* Source prefixes with a bucket now (ways of isn_syn_buckets with a tag). */
size_t dp_syn_buckets(void);

/* Empties both flow tables, so a test sees only its own flows (the sweeper takes every idle one). */
bool dp_flows_clear(void);
/* isn_local_addrs (bpf/local_addr.h), which no other fixture call touches; -1 before dp_setup. */
int dp_local_addrs_fd(void);

/* Starts the flow sweeper's timer (the loader's start_sweeper); dp_setup does. */
bool dp_start_sweeper(void);
/* The sweeper's record (isn_sweeper; its timer reads as zeros). */
bool dp_sweeper_get(struct flow_sweeper *sw);
/* Entries isn_flow_count says isn_flows holds. */
int64_t dp_flow_count(void);

/* Sum over CPUs of one counter. */
uint64_t dp_stat(enum isn_stat stat);
/* The fd of the loaded object's map name; -1 and a failed test if none. */
int dp_map_fd(const char *name);
/* The fd of the loaded object's program name (one attached nowhere); -1 and a failed test if none. */
int dp_prog_fd_by_name(const char *name);
/* ACKs XDP's header prediction translated (bpf/fastpath.h), over CPUs. */
uint64_t dp_fastpath_predicted(void);

/* The flow key of a spec as the host sees it: egress means the spec is the host's segment. */
void dp_flow_key_of(const struct pkt_spec *s, bool egress, struct flow_key *fk);

/* M right now, from CLOCK_MONOTONIC. */
uint32_t dp_mono_ticks(void);

#endif /* ISNGUARD_TEST_DP_FIXTURE_H */
