// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * build/isnguard prefix against the SYN policy's maps, made and pinned by
 * the test as include/isnguard.h shapes them, in a bpffs directory of its
 * own: the lists' entries, the policy's flags the datapath reads to know a
 * family has entries, the output, and the errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli_run.h"
#include "harness.h"
#include "isnguard.h"

struct prefix_state {
	char dir[96];
	int policy_fd, trie4_fd, trie6_fd, stats_fd;
};

static const char *const prefix_maps[] = { ISN_MAP_SYN_POLICY, ISN_MAP_PREFIX4, ISN_MAP_PREFIX6,
					   ISN_MAP_STATS };

static int pin_new(const struct prefix_state *st, enum bpf_map_type type, const char *name,
		   __u32 key_size, __u32 value_size, __u32 entries, __u32 flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
	int fd = bpf_map_create(type, name, key_size, value_size, entries, &opts);
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	if (fd >= 0 && bpf_obj_pin(fd, path)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void prefix_state_destroy(struct prefix_state *st)
{
	int fds[] = { st->policy_fd, st->trie4_fd, st->trie6_fd, st->stats_fd };
	char path[160];

	for (size_t i = 0; i < sizeof(prefix_maps) / sizeof(prefix_maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", st->dir, prefix_maps[i]);
		unlink(path);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	rmdir(st->dir);
	unsetenv("ISNGUARD_PIN_DIR");
}

static bool prefix_state_create(struct prefix_state *st)
{
	static int serial;
	const struct syn_policy pol = { .source_rate = 1000, .flags = SYN_POLICY_SET };
	__u32 zero = 0;

	snprintf(st->dir, sizeof(st->dir), "/sys/fs/bpf/isnguard-unit-prefix-%d-%d", (int)getpid(),
		 serial++);
	mkdir(st->dir, 0700);
	setenv("ISNGUARD_PIN_DIR", st->dir, 1);
	st->policy_fd = pin_new(st, BPF_MAP_TYPE_ARRAY, ISN_MAP_SYN_POLICY, sizeof(__u32),
				sizeof(struct syn_policy), 1, 0);
	st->trie4_fd = pin_new(st, BPF_MAP_TYPE_LPM_TRIE, ISN_MAP_PREFIX4, sizeof(struct prefix4_key),
			       sizeof(__u32), 64, BPF_F_NO_PREALLOC);
	st->trie6_fd = pin_new(st, BPF_MAP_TYPE_LPM_TRIE, ISN_MAP_PREFIX6, sizeof(struct prefix6_key),
			       sizeof(__u32), 64, BPF_F_NO_PREALLOC);
	st->stats_fd = pin_new(st, BPF_MAP_TYPE_PERCPU_ARRAY, ISN_MAP_STATS, sizeof(__u32),
			       sizeof(__u64), STAT_COUNT, 0);
	if (st->policy_fd >= 0 && st->trie4_fd >= 0 && st->trie6_fd >= 0 && st->stats_fd >= 0 &&
	    !bpf_map_update_elem(st->policy_fd, &zero, &pol, BPF_ANY))
		return true;
	FAIL("create pinned maps in %s: %s", st->dir, strerror(errno));
	prefix_state_destroy(st);
	return false;
}

static uint32_t policy_flags(const struct prefix_state *st)
{
	struct syn_policy pol = { 0 };
	__u32 zero = 0;

	bpf_map_lookup_elem(st->policy_fd, &zero, &pol);
	return pol.flags;
}

/* The list of a prefix in its trie (exactly that prefix), or -1 when absent. */
static int64_t trie_list(const struct prefix_state *st, const char *addr, uint32_t len)
{
	struct prefix6_key k6 = { .prefixlen = len };
	struct prefix4_key k4 = { .prefixlen = len };
	bool v6 = strchr(addr, ':') != NULL;
	uint32_t list;

	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, v6 ? (void *)k6.addr : (void *)k4.addr) != 1 ||
	    bpf_map_lookup_elem(v6 ? st->trie6_fd : st->trie4_fd, v6 ? (void *)&k6 : (void *)&k4,
				&list))
		return -1;
	return list;
}

/*
 * add puts each prefix in its family's trie with its list as the value and
 * sets the family's flag (SYN_POLICY_LIST4, LIST6) the datapath looks at;
 * list prints both lists; del takes them out and clears the flag of a family
 * left empty; the policy's other fields stay as they were.
 */
TEST(test_prefix_add_list_del_keep_the_tries_and_flags)
{
	const char *add_deny[] = { "prefix", "add", "deny", "198.51.100.0/24", "10.9.9.9", NULL };
	const char *add_allow[] = { "prefix", "add", "allow", "2001:db8::/32", "--json", NULL };
	const char *list[] = { "prefix", "list", "--json", NULL };
	const char *del4[] = { "prefix", "del", "198.51.100.0/24", "10.9.9.9/32", NULL };
	const char *flush[] = { "prefix", "flush", "allow", "--json", NULL };
	struct prefix_state st;
	struct cli_result res;

	if (!prefix_state_create(&st))
		return;
	if (run_cli(&res, add_deny)) {
		ASSERT_EQ(res.status, 0, "add deny: exit status");
		ASSERT_STREQ(res.out, "added to deny 198.51.100.0/24\nadded to deny 10.9.9.9/32\n",
			     "add deny: stdout");
	}
	ASSERT_EQ(trie_list(&st, "198.51.100.0", 24), SYN_LIST_DENY, "198.51.100.0/24 in the trie");
	ASSERT_EQ(trie_list(&st, "10.9.9.9", 32), SYN_LIST_DENY, "10.9.9.9/32 in the trie");
	ASSERT_EQ(policy_flags(&st), SYN_POLICY_SET | SYN_POLICY_LIST4, "flags after IPv4 entries");
	if (run_cli(&res, add_allow)) {
		ASSERT_EQ(res.status, 0, "add allow: exit status");
		ASSERT_STREQ(res.out, "{\"action\":\"add\",\"list\":\"allow\",\"prefixes\":[\"2001:db8::/32\"],"
			     "\"changed\":1}\n", "add allow: stdout");
	}
	ASSERT_EQ(trie_list(&st, "2001:db8::", 32), SYN_LIST_ALLOW, "2001:db8::/32 in the trie");
	ASSERT_EQ(policy_flags(&st), SYN_POLICY_SET | SYN_POLICY_LIST4 | SYN_POLICY_LIST6,
		  "flags with both families");
	if (run_cli(&res, list)) {
		ASSERT_EQ(res.status, 0, "list: exit status");
		ASSERT_STREQ(res.out, "{\"deny\":[\"10.9.9.9/32\",\"198.51.100.0/24\"],\"denied_syns\":0,"
			     "\"allow\":[\"2001:db8::/32\"],\"allowed_syns\":0}\n", "list: stdout");
	}
	if (run_cli(&res, del4))
		ASSERT_EQ(res.status, 0, "del: exit status");
	ASSERT_EQ(trie_list(&st, "198.51.100.0", 24), -1, "198.51.100.0/24 gone");
	ASSERT_EQ(policy_flags(&st), SYN_POLICY_SET | SYN_POLICY_LIST6, "flags once IPv4 is empty");
	if (run_cli(&res, flush)) {
		ASSERT_EQ(res.status, 0, "flush: exit status");
		ASSERT_STREQ(res.out, "{\"action\":\"flush\",\"list\":\"allow\",\"prefixes\":"
			     "[\"2001:db8::/32\"],\"changed\":1}\n", "flush: stdout");
	}
	ASSERT_EQ(policy_flags(&st), SYN_POLICY_SET, "flags once both are empty");
	prefix_state_destroy(&st);
}

/*
 * A prefix on the other list is refused (exit 1, one line), as is one on
 * neither list to delete; a bad prefix is bad usage (exit 2) and changes
 * nothing, nor does an add without its list.
 */
TEST(test_prefix_refusals_and_bad_usage)
{
	static const struct {
		const char *args[6];
		int status;
		const char *err;
	} rows[] = {
		{ { "prefix", "add", "allow", "198.51.100.0/24" }, 1,
		  "isnguard: prefix add allow 198.51.100.0/24: on the deny list ('isnguard prefix del "
		  "198.51.100.0/24' first)\n" },
		{ { "prefix", "del", "203.0.113.0/24" }, 1,
		  "isnguard: prefix del 203.0.113.0/24: not on either list\n" },
		{ { "prefix", "del", "allow", "198.51.100.0/24" }, 1,
		  "isnguard: prefix del 198.51.100.0/24: not on allow list\n" },
		{ { "prefix", "add", "deny", "198.51.100.1/24" }, 2, NULL },
		{ { "prefix", "add", "deny", "10.0.0.0/33" }, 2, NULL },
		{ { "prefix", "add", "deny", "nonsense" }, 2, NULL },
		{ { "prefix", "add", "198.51.100.0/24" }, 2, NULL },
		{ { "prefix", "frobnicate" }, 2, NULL },
	};
	const char *seed[] = { "prefix", "add", "deny", "198.51.100.0/24", NULL };
	struct prefix_state st;
	struct cli_result res;

	if (!prefix_state_create(&st))
		return;
	if (run_cli(&res, seed))
		ASSERT_EQ(res.status, 0, "seed: exit status");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		test_case_begin("%s_%s_%s", rows[i].args[1], rows[i].args[2] ? rows[i].args[2] : "",
				rows[i].args[3] ? rows[i].args[3] : "");
		if (!run_cli(&res, rows[i].args))
			continue;
		ASSERT_EQ(res.status, rows[i].status, "exit status");
		if (rows[i].err)
			ASSERT_STREQ(res.err, rows[i].err, "stderr");
		else
			ASSERT_TRUE(strchr(res.err, '\n') == res.err + strlen(res.err) - 1,
				    "one line on stderr");
		ASSERT_EQ(trie_list(&st, "198.51.100.0", 24), SYN_LIST_DENY, "the deny entry kept");
	}
	prefix_state_destroy(&st);
}
