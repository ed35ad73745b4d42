// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pins the shared ABI: sizeof/offsetof of every struct in include/isnguard.h
 * and the values of its enums, as this compiler sees them, against the BTF
 * that clang wrote into the BPF object.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_run.h"
#include "harness.h"
#include "isnguard.h"

struct abi_member {
	const char *name;
	size_t offset;
	size_t size;
};

#define MEMBER(type, field) { #field, offsetof(struct type, field), sizeof(((struct type *)0)->field) }

/* MEMBERS(type, a, b, ...): { MEMBER(type, a), MEMBER(type, b), ... }, up to 20 fields. */
#define MEMBERS_1(t, f) MEMBER(t, f)
#define MEMBERS_2(t, f, ...) MEMBER(t, f), MEMBERS_1(t, __VA_ARGS__)
#define MEMBERS_3(t, f, ...) MEMBER(t, f), MEMBERS_2(t, __VA_ARGS__)
#define MEMBERS_4(t, f, ...) MEMBER(t, f), MEMBERS_3(t, __VA_ARGS__)
#define MEMBERS_5(t, f, ...) MEMBER(t, f), MEMBERS_4(t, __VA_ARGS__)
#define MEMBERS_6(t, f, ...) MEMBER(t, f), MEMBERS_5(t, __VA_ARGS__)
#define MEMBERS_7(t, f, ...) MEMBER(t, f), MEMBERS_6(t, __VA_ARGS__)
#define MEMBERS_8(t, f, ...) MEMBER(t, f), MEMBERS_7(t, __VA_ARGS__)
#define MEMBERS_9(t, f, ...) MEMBER(t, f), MEMBERS_8(t, __VA_ARGS__)
#define MEMBERS_10(t, f, ...) MEMBER(t, f), MEMBERS_9(t, __VA_ARGS__)
#define MEMBERS_11(t, f, ...) MEMBER(t, f), MEMBERS_10(t, __VA_ARGS__)
#define MEMBERS_12(t, f, ...) MEMBER(t, f), MEMBERS_11(t, __VA_ARGS__)
#define MEMBERS_13(t, f, ...) MEMBER(t, f), MEMBERS_12(t, __VA_ARGS__)
#define MEMBERS_14(t, f, ...) MEMBER(t, f), MEMBERS_13(t, __VA_ARGS__)
#define MEMBERS_15(t, f, ...) MEMBER(t, f), MEMBERS_14(t, __VA_ARGS__)
#define MEMBERS_16(t, f, ...) MEMBER(t, f), MEMBERS_15(t, __VA_ARGS__)
#define MEMBERS_17(t, f, ...) MEMBER(t, f), MEMBERS_16(t, __VA_ARGS__)
#define MEMBERS_18(t, f, ...) MEMBER(t, f), MEMBERS_17(t, __VA_ARGS__)
#define MEMBERS_19(t, f, ...) MEMBER(t, f), MEMBERS_18(t, __VA_ARGS__)
#define MEMBERS_20(t, f, ...) MEMBER(t, f), MEMBERS_19(t, __VA_ARGS__)
#define MEMBERS_NTH(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16,	\
		    _17, _18, _19, _20, n, ...) n
#define MEMBERS(t, ...) { MEMBERS_NTH(__VA_ARGS__, MEMBERS_20, MEMBERS_19, MEMBERS_18,	\
				      MEMBERS_17, MEMBERS_16, MEMBERS_15, MEMBERS_14,	\
				      MEMBERS_13, MEMBERS_12, MEMBERS_11, MEMBERS_10, MEMBERS_9, \
				      MEMBERS_8, MEMBERS_7, MEMBERS_6, MEMBERS_5, MEMBERS_4, \
				      MEMBERS_3, MEMBERS_2, MEMBERS_1)(t, __VA_ARGS__) }

/* The datapath object; the hash test object shares the ISN types with it. */
#define DATAPATH_OBJ "isnguard.bpf.o"
#define HASH_TEST_OBJ "isn_test.bpf.o"

static struct btf *object_btf(const char *object)
{
	struct btf *btf = btf__parse(build_path(object), NULL);
	char reason[128];

	if (!btf) {
		/* libbpf's own codes (LIBBPF_ERRNO__FORMAT, ...) are beyond strerror. */
		libbpf_strerror(-errno, reason, sizeof(reason));
		FAIL("parse BTF of %s: %s", object, reason);
	}
	return btf;
}

#define NMEMB(a) (sizeof(a) / sizeof((a)[0]))

static void check_struct(const char *object, const char *name, size_t size,
			 const struct abi_member *members, size_t nmembers)
{
	struct btf *btf = object_btf(object);
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	if (!btf)
		return;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);
	if (!ASSERT_TRUE(id > 0, name))
		goto out;
	t = btf__type_by_id(btf, id);
	ASSERT_EQ(btf__resolve_size(btf, id), size, name);
	ASSERT_EQ(btf_vlen(t), nmembers, "member count");
	m = btf_members(t);
	for (size_t i = 0; i < nmembers && i < btf_vlen(t); i++) {
		const char *mname = btf__name_by_offset(btf, m[i].name_off);

		ASSERT_STREQ(mname, members[i].name, "member name");
		ASSERT_EQ(btf_member_bit_offset(t, (uint32_t)i) / 8, members[i].offset, members[i].name);
		ASSERT_EQ(btf__resolve_size(btf, m[i].type), members[i].size, members[i].name);
	}
out:
	btf__free(btf);
}

/* The name and size from the type itself, the member count from its table. */
#define CHECK_STRUCT(object, type, members) \
	check_struct(object, #type, sizeof(struct type), members, NMEMB(members))

TEST(test_abi_flow_key_matches_btf)
{
	static const struct abi_member members[] =
		MEMBERS(flow_key, local_addr, remote_addr, local_port, remote_port, family, pad);

	CHECK_STRUCT(DATAPATH_OBJ, flow_key, members);
	CHECK_STRUCT(HASH_TEST_OBJ, flow_key, members);
}

TEST(test_abi_isn_key_matches_btf)
{
	static const struct abi_member members[] = MEMBERS(isn_key, bytes);

	CHECK_STRUCT(DATAPATH_OBJ, isn_key, members);
	CHECK_STRUCT(HASH_TEST_OBJ, isn_key, members);
}

TEST(test_abi_isn_config_matches_btf)
{
	static const struct abi_member members[] =
		MEMBERS(isn_config, hash, flags, timeout_opening, timeout_established,
			timeout_closing, timeout_closed, key_gen, sweep_interval_ms,
			key_rotated_ns, max_flows, pad);

	CHECK_STRUCT(DATAPATH_OBJ, isn_config, members);
}

TEST(test_abi_synproxy_records_match_btf)
{
	static const struct abi_member config_members[] =
		MEMBERS(synproxy_config, mode, flags, syn_threshold, rcv_wscale, window, path,
			invalid_ack_rate);
	static const struct abi_member rate_members[] =
		MEMBERS(syn_rate, window_start_ns, last_syn_ns, syns, active);
	static const struct abi_member budget_members[] = MEMBERS(invalid_ack_budget, tat_ns);

	CHECK_STRUCT(DATAPATH_OBJ, synproxy_config, config_members);
	CHECK_STRUCT(DATAPATH_OBJ, syn_rate, rate_members);
	CHECK_STRUCT(DATAPATH_OBJ, invalid_ack_budget, budget_members);
}

TEST(test_abi_events_match_btf)
{
	static const struct abi_member event_members[] =
		MEMBERS(isn_event, ts_ns, netns_ino, type, ifindex, reason, rate, threshold, key_gen,
			saddr, daddr, sport, dport, family, proto, pad);
	static const struct abi_member state_members[] =
		MEMBERS(isn_event_state, table_full_ns, reader_pid, key_gen, pad);
	static const struct abi_member drops_members[] =
		MEMBERS(isn_event_drops, window_start_ns, sent, pad);

	CHECK_STRUCT(DATAPATH_OBJ, isn_event, event_members);
	CHECK_STRUCT(DATAPATH_OBJ, isn_event_state, state_members);
	CHECK_STRUCT(DATAPATH_OBJ, isn_event_drops, drops_members);
	ASSERT_EQ(sizeof(struct isn_event), 2 * 8 + 6 * 4 + 2 * 16 + 2 * 2 + 2 + 10, "isn_event size");
}

TEST(test_abi_flow_state_matches_btf)
{
	static const struct abi_member members[] =
		MEMBERS(flow_state, seq_delta, host_isn, wire_isn, flags, hash, host_snd_nxt,
			ts_delta, peer_tsval, peer_window, wscale_host, wscale_wire,
			peer_wscale_wire, peer_wscale_host, open_cpu, host_ack, sweep_id,
			created_ns, last_seen_ns, late_acks, pad);

	CHECK_STRUCT(DATAPATH_OBJ, flow_state, members);
}

TEST(test_abi_flow_sweeper_matches_btf)
{
	static const struct abi_member members[] =
		MEMBERS(flow_sweeper, timer, armed, long_ms, size, head, tail, run_ns_max,
			run_slots_max, interval_ms, closed_ms, pad);
	static const struct abi_member slot_members[] = MEMBERS(sweep_slot, key, due, id);

	CHECK_STRUCT(DATAPATH_OBJ, flow_sweeper, members);
	CHECK_STRUCT(DATAPATH_OBJ, sweep_slot, slot_members);
}

TEST(test_abi_link_records_match_btf)
{
	static const struct abi_member key_members[] = MEMBERS(link_key, netns_ino, ifindex, pad);
	static const struct abi_member info_members[] =
		MEMBERS(link_info, ifname, ingress, ingress_prog_id, egress_prog_id, flags,
			attached_at);

	CHECK_STRUCT(DATAPATH_OBJ, link_key, key_members);
	CHECK_STRUCT(DATAPATH_OBJ, link_info, info_members);
}

TEST(test_abi_syn_resend_matches_btf)
{
	static const struct abi_member members[] =
		MEMBERS(syn_resend, first_ns, netns_ino, ifindex, resends, tcp_len, macs, tcp,
			queue_pos, pad);
	static const struct abi_member queues_members[] =
		MEMBERS(resend_queues, head, tail, written);
	static const struct abi_member slot_key_members[] =
		MEMBERS(resend_slot_key, netns_ino, step, pos);
	static const struct abi_member slot_members[] = MEMBERS(resend_slot, key, due_ns);

	CHECK_STRUCT(DATAPATH_OBJ, syn_resend, members);
	CHECK_STRUCT(DATAPATH_OBJ, resend_queues, queues_members);
	CHECK_STRUCT(DATAPATH_OBJ, resend_slot_key, slot_key_members);
	CHECK_STRUCT(DATAPATH_OBJ, resend_slot, slot_members);
}

TEST(test_abi_local_addr_matches_btf)
{
	static const struct abi_member key_members[] =
		MEMBERS(local_addr_key, netns_ino, family, pad, addr);
	static const struct abi_member members[] = MEMBERS(local_addr, checked_ns);

	CHECK_STRUCT(DATAPATH_OBJ, local_addr_key, key_members);
	CHECK_STRUCT(DATAPATH_OBJ, local_addr, members);
}

TEST(test_abi_syn_policy_records_match_btf)
{
	static const struct abi_member policy_members[] =
		MEMBERS(syn_policy, source_rate, source_burst, total_rate, flags, source_step_ns,
			source_tolerance_ns, total_step_ns, total_tolerance_ns, source_prefix4,
			source_prefix6, monitor, pad, source_hash_key);
	static const struct abi_member bucket_members[] = MEMBERS(syn_bucket, tat_ns);
	static const struct abi_member set_members[] = MEMBERS(syn_bucket_set, tag, tat_ns);
	static const struct abi_member key4_members[] = MEMBERS(prefix4_key, prefixlen, addr);
	static const struct abi_member key6_members[] = MEMBERS(prefix6_key, prefixlen, addr);

	CHECK_STRUCT(DATAPATH_OBJ, syn_policy, policy_members);
	CHECK_STRUCT(DATAPATH_OBJ, syn_bucket, bucket_members);
	CHECK_STRUCT(DATAPATH_OBJ, syn_bucket_set, set_members);
	CHECK_STRUCT(DATAPATH_OBJ, prefix4_key, key4_members);
	CHECK_STRUCT(DATAPATH_OBJ, prefix6_key, key6_members);
}

static void check_enum_value(struct btf *btf, const char *enum_name, const char *name, long value)
{
	int id = btf__find_by_name_kind(btf, enum_name, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;

	if (!ASSERT_TRUE(id > 0, enum_name))
		return;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (uint32_t i = 0; i < btf_vlen(t); i++) {
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name)) {
			ASSERT_EQ(e[i].val, value, name);
			return;
		}
	}
	FAIL("%s has no %s", enum_name, name);
}

TEST(test_abi_enums_match_btf)
{
	struct btf *btf = object_btf(HASH_TEST_OBJ);

	if (!btf)
		return;
	check_enum_value(btf, "isn_hash", "ISN_HASH_SIPHASH", ISN_HASH_SIPHASH);
	check_enum_value(btf, "isn_hash", "ISN_HASH_MD5", ISN_HASH_MD5);
	check_enum_value(btf, "isn_hash", "ISN_HASH_NONE", ISN_HASH_NONE);
	check_enum_value(btf, "flow_family", "FLOW_FAMILY_IPV4", FLOW_FAMILY_IPV4);
	check_enum_value(btf, "flow_family", "FLOW_FAMILY_IPV6", FLOW_FAMILY_IPV6);
#define CHECK_STAT(name, text) check_enum_value(btf, "isn_stat", #name, name);
	ISNGUARD_STATS(CHECK_STAT)
#undef CHECK_STAT
	check_enum_value(btf, "isn_stat", "STAT_COUNT", STAT_COUNT);
	btf__free(btf);
}

/* Value structs have no holes: explicit padding only (what bpftool prints is all there is). */
TEST(test_abi_structs_have_no_implicit_padding)
{
	ASSERT_EQ(sizeof(struct flow_key), 16 + 16 + 2 + 2 + 1 + 3, "flow_key size");
	ASSERT_EQ(sizeof(struct isn_key), ISN_KEY_LEN, "isn_key size");
	ASSERT_EQ(sizeof(struct isn_config), 8 * 4 + 8 + 2 * 4, "isn_config size");
	ASSERT_EQ(sizeof(struct synproxy_config), 7 * 4, "synproxy_config size");
	ASSERT_EQ(sizeof(struct syn_rate), 2 * 8 + 2 * 4, "syn_rate size");
	/* The read part, then the written part and its cache line's padding (include/isnguard.h). */
	ASSERT_EQ(offsetof(struct flow_state, host_ack), FLOW_STATE_READ_BYTES, "flow_state read part");
	ASSERT_EQ(FLOW_STATE_READ_BYTES, 8 * 4 + 2 + 4 + 2, "flow_state read part size");
	ASSERT_EQ(sizeof(struct flow_state), FLOW_STATE_READ_BYTES + 64, "flow_state size");
	ASSERT_EQ(sizeof(struct flow_state), FLOW_STATE_READ_BYTES + 2 * 4 + 2 * 8 + 4 + 36,
		  "flow_state written part size");
	ASSERT_EQ(sizeof(struct flow_sweeper), 16 + 2 * 4 + 4 * 4 + 8 * 8 + 8 + 4 * 4,
		  "flow_sweeper size");
	ASSERT_EQ(sizeof(struct sweep_slot), sizeof(struct flow_key) + 2 * 4, "sweep_slot size");
	ASSERT_EQ(sizeof(struct link_key), 8 + 4 + 4, "link_key size");
	ASSERT_EQ(sizeof(struct link_info), 16 + 4 * 4 + 8, "link_info size");
	ASSERT_EQ(sizeof(struct syn_resend), 2 * 8 + 3 * 4 + 12 + 10 * 4 + 2 * 4, "syn_resend size");
	ASSERT_EQ(sizeof(struct resend_queues), 3 * SYNPROXY_RESEND_STEPS * 4, "resend_queues size");
	ASSERT_EQ(sizeof(struct resend_slot_key), 8 + 2 * 4, "resend_slot_key size");
	ASSERT_EQ(sizeof(struct resend_slot), sizeof(struct flow_key) + 8, "resend_slot size");
	ASSERT_EQ(sizeof(struct local_addr_key), 8 + 1 + 7 + 16, "local_addr_key size");
	ASSERT_EQ(sizeof(struct local_addr), 8, "local_addr size");
	ASSERT_EQ(sizeof(struct syn_policy), 4 * 4 + 4 * 8 + 3 + 5 + 2 * 8, "syn_policy size");
	ASSERT_EQ(sizeof(struct syn_bucket_set), 64, "syn_bucket_set size: one cache line");
	ASSERT_EQ(sizeof(struct syn_source), 16, "syn_source size");
	ASSERT_EQ(sizeof(struct prefix4_key), 4 + 4, "prefix4_key size");
	ASSERT_EQ(sizeof(struct prefix6_key), 4 + 16, "prefix6_key size");
	ASSERT_EQ(sizeof(struct isn_event_state), ISN_TABLE_COUNT * 8 + ISN_EVENT_READERS * 4 + 2 * 4,
		  "isn_event_state size");
	ASSERT_EQ(sizeof(struct isn_event_drops), 8 + 2 * 4, "isn_event_drops size");
}
