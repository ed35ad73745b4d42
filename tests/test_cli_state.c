// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * build/isnguard stats, flows, mode and key against maps the test creates and
 * pins itself, shaped as include/isnguard.h says, in a bpffs directory of its
 * own (ISNGUARD_PIN_DIR): no datapath needed. Expected values are computed
 * here from what was planted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli_run.h"
#include "harness.h"
#include "isnguard.h"
#include "statslots.h"

#define TEST_FLOWS_MAX 1024
#define KEY_HEX "000102030405060708090a0b0c0d0e0f"
#define OLD_KEY_BYTE 0xaa

#define STAT_NAME(name, text) [name] = text,
static const char *const stat_names[STAT_COUNT] = { ISNGUARD_STATS(STAT_NAME) };
#undef STAT_NAME

struct pinned_state {
	char dir[96];
	int flows_fd, opening_fd, config_fd, key_fd, stats_fd;
	int ncpus;
};

static const char *const map_names[] = { ISN_MAP_FLOWS, ISN_MAP_OPENING, ISN_MAP_CONFIG,
					 ISN_MAP_KEY, ISN_MAP_STATS };

static int create_pinned(const struct pinned_state *st, enum bpf_map_type type,
			 const char *name, __u32 key_size, __u32 value_size,
			 __u32 entries, __u32 flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
	char path[160];
	int fd = bpf_map_create(type, name, key_size, value_size, entries, &opts);

	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	if (bpf_obj_pin(fd, path)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A directory of one's own, so a crashed run cannot break the next one. */
static void make_state_dir(struct pinned_state *st)
{
	static int serial;

	snprintf(st->dir, sizeof(st->dir), "/sys/fs/bpf/isnguard-unit-%d-%d", (int)getpid(), serial++);
	mkdir(st->dir, 0700);
	setenv("ISNGUARD_PIN_DIR", st->dir, 1);
}

static void state_destroy(struct pinned_state *st)
{
	char path[160];
	int *fds[] = { &st->flows_fd, &st->opening_fd, &st->config_fd, &st->key_fd, &st->stats_fd };

	for (size_t i = 0; i < sizeof(map_names) / sizeof(map_names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", st->dir, map_names[i]);
		unlink(path);
		if (*fds[i] >= 0)
			close(*fds[i]);
	}
	rmdir(st->dir);
	unsetenv("ISNGUARD_PIN_DIR");
}

/*
 * The maps as the datapath pins them (but its bookkeeping isn_links). The flow map has no BTF here, so
 * its bpf_timer is plain bytes, which is all the CLI sees of it anyway. The
 * key map is write-only like the real one; the kernel ties that flag to the
 * creating fd, so the test can still read the key back through the pin.
 */
static bool state_create(struct pinned_state *st)
{
	*st = (struct pinned_state){ .flows_fd = -1, .opening_fd = -1, .config_fd = -1, .key_fd = -1,
				     .stats_fd = -1 };
	make_state_dir(st);
	st->ncpus = libbpf_num_possible_cpus();
	st->flows_fd = create_pinned(st, BPF_MAP_TYPE_HASH, ISN_MAP_FLOWS, sizeof(struct flow_key),
				     sizeof(struct flow_state), TEST_FLOWS_MAX, 0);
	st->opening_fd = create_pinned(st, BPF_MAP_TYPE_LRU_HASH, ISN_MAP_OPENING,
				       sizeof(struct flow_key), sizeof(struct flow_state),
				       TEST_FLOWS_MAX, 0);
	st->config_fd = create_pinned(st, BPF_MAP_TYPE_ARRAY, ISN_MAP_CONFIG, sizeof(__u32),
				      sizeof(struct isn_config), 1, 0);
	st->key_fd = create_pinned(st, BPF_MAP_TYPE_ARRAY, ISN_MAP_KEY, sizeof(__u32),
				   sizeof(struct isn_key), ISN_KEY_SLOTS, BPF_F_WRONLY);
	st->stats_fd = create_pinned(st, BPF_MAP_TYPE_PERCPU_ARRAY, ISN_MAP_STATS, sizeof(__u32),
				     sizeof(__u64), STAT_COUNT, 0);
	if (st->ncpus > 0 && st->flows_fd >= 0 && st->opening_fd >= 0 && st->config_fd >= 0 &&
	    st->key_fd >= 0 && st->stats_fd >= 0)
		return true;
	FAIL("create pinned maps in %s: %s", st->dir, strerror(errno));
	state_destroy(st);
	return false;
}

static bool set_counter(const struct pinned_state *st, enum isn_stat stat, const __u64 *per_cpu)
{
	__u32 index = stat;

	return ASSERT_OK(bpf_map_update_elem(st->stats_fd, &index, per_cpu, BPF_ANY), "set counter");
}

/* One CPU's share of a counter, the rest zero: totals are then that value. */
static bool set_counter_on_cpu(const struct pinned_state *st, enum isn_stat stat, int cpu, __u64 value)
{
	__u64 per_cpu[st->ncpus];

	memset(per_cpu, 0, sizeof(per_cpu));
	per_cpu[cpu] = value;
	return set_counter(st, stat, per_cpu);
}

static __u64 coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* A flow key built by hand (inet_pton, htons), not by the CLI's parser. */
static struct flow_key make_key(int family, const char *local, __u16 local_port,
				const char *remote, __u16 remote_port)
{
	struct flow_key key = { .family = (__u8)family };
	int af = family == FLOW_FAMILY_IPV6 ? AF_INET6 : AF_INET;

	inet_pton(af, local, key.local_addr);
	inet_pton(af, remote, key.remote_addr);
	key.local_port = htons(local_port);
	key.remote_port = htons(remote_port);
	return key;
}

static bool plant_flow(const struct pinned_state *st, const struct flow_key *key,
		       const struct flow_state *state)
{
	return ASSERT_OK(bpf_map_update_elem(st->flows_fd, key, state, BPF_NOEXIST), "plant flow");
}

/* The key in slot (the current one is isn_key[key_gen % ISN_KEY_SLOTS]). */
static void read_key_slot(const struct pinned_state *st, __u32 slot, struct isn_key *key)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", st->dir, ISN_MAP_KEY);
	fd = bpf_obj_get(path);
	memset(key, 0, sizeof(*key));
	ASSERT_OK(bpf_map_lookup_elem(fd, &slot, key), "read key back");
	close(fd);
}

static __u32 current_key_gen(const struct pinned_state *st)
{
	struct isn_config config = { 0 };
	__u32 zero = 0;

	ASSERT_OK(bpf_map_lookup_elem(st->config_fd, &zero, &config), "read config");
	return config.key_gen;
}

static void read_key(const struct pinned_state *st, struct isn_key *key)
{
	read_key_slot(st, current_key_gen(st) % ISN_KEY_SLOTS, key);
}

static void write_key(const struct pinned_state *st, __u8 byte)
{
	struct isn_key key;
	__u32 zero = 0;

	memset(key.bytes, byte, sizeof(key.bytes));
	ASSERT_OK(bpf_map_update_elem(st->key_fd, &zero, &key, BPF_ANY), "write old key");
}

static bool is_one_error_line(const char *err, const char *prefix)
{
	const char *nl = strchr(err, '\n');

	return nl && nl[1] == '\0' && !strncmp(err, prefix, strlen(prefix));
}

/* A file under /tmp with the given bytes; path receives its name. */
static bool write_temp_file(char *path, size_t len, const void *content, size_t content_len)
{
	int fd;

	snprintf(path, len, "/tmp/isnguard-unit-key-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return false;
	if (write(fd, content, content_len) != (ssize_t)content_len) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* --- stats ---------------------------------------------------------------- */

/* Counter i on CPU c holds (i + 1) * 1000 + c, so every total differs and needs every CPU. */
static __u64 planted_total(int ncpus, int stat)
{
	return (__u64)ncpus * (__u64)(stat + 1) * 1000 + (__u64)ncpus * (__u64)(ncpus - 1) / 2;
}

static bool plant_distinct_counters(const struct pinned_state *st)
{
	__u64 per_cpu[st->ncpus];

	for (int i = 0; i < STAT_COUNT; i++) {
		for (int cpu = 0; cpu < st->ncpus; cpu++)
			per_cpu[cpu] = (__u64)(i + 1) * 1000 + (__u64)cpu;
		if (!set_counter(st, i, per_cpu))
			return false;
	}
	return true;
}

/* Counters nothing counts any more: kept in the map (kept state copies index for index), never shown. */
static bool retired_stat(int stat)
{
	return stat == STAT_COOKIE_EXPIRED || stat == STAT_COOKIE_UNKNOWN_KEY;
}

/* The number after "NAME": in a JSON text; false when the key is not there. */
static bool json_value_of(const char *out, const char *name, unsigned long long *value)
{
	char key[80];
	const char *at;

	snprintf(key, sizeof(key), "\"%s\":", name);
	at = strstr(out, key);
	return at && sscanf(at + strlen(key), "%llu", value) == 1;
}

TEST(test_stats_json_sums_each_counter_over_cpus)
{
	const char *args[] = { "stats", "--json", NULL };
	struct pinned_state st;
	struct cli_result res;
	unsigned long long value;
	char want[128];

	if (!state_create(&st))
		return;
	if (plant_distinct_counters(&st) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.err, "", "stderr");
		ASSERT_TRUE(!strncmp(res.out, "{\"time\":\"", 9), "starts with its time");
		for (int i = 0; i < STAT_COUNT; i++) {
			bool found = json_value_of(res.out, stat_names[i], &value);

			if (retired_stat(i)) {
				ASSERT_TRUE(!found, stat_names[i]);
				continue;
			}
			if (!found)
				FAIL("no \"%s\" in %s", stat_names[i], res.out);
			else
				ASSERT_EQ(value, planted_total(st.ncpus, i), stat_names[i]);
		}
		/* flow_expired > flow_created here: the eviction estimate clamps at 0. */
		snprintf(want, sizeof(want), "},\"flows_present\":0,\"flows_max\":%d,\"flow_evicted\":0}\n",
			 TEST_FLOWS_MAX);
		if (!strstr(res.out, want))
			FAIL("stdout \"%s\" lacks \"%s\"", res.out, want);
	}
	state_destroy(&st);
}

static bool text_value_of(const char *out, const char *name, unsigned long long *value)
{
	char line_name[64];
	const char *line = out;

	while (line && *line) {
		if (sscanf(line, "%63s %llu", line_name, value) == 2 && !strcmp(line_name, name))
			return true;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

static bool has_line(const char *out, const char *text)
{
	size_t len = strlen(text);

	for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, text, len) && (line[len] == '\n' || line[len] == '\0'))
			return true;
	return false;
}

TEST(test_stats_text_has_a_line_per_counter_and_derived_value)
{
	const char *args[] = { "stats", NULL };
	const char *const derived[] = { "flows_present", "flows_max", "flow_evicted" };
	const char *const sections[] = { "passed untouched", "rewriting", "flow table", "SYN proxy",
					 "SYN proxy, local path", "SYN proxy, translate path",
					 "sweeper" };
	struct pinned_state st;
	struct cli_result res;
	unsigned long long value;

	if (!state_create(&st))
		return;
	if (plant_distinct_counters(&st) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		for (int i = 0; i < STAT_COUNT; i++) {
			bool found = text_value_of(res.out, stat_names[i], &value);

			if (retired_stat(i))
				ASSERT_TRUE(!found, stat_names[i]);
			else if (!found)
				FAIL("no line for %s in:\n%s", stat_names[i], res.out);
			else
				ASSERT_EQ(value, planted_total(st.ncpus, i), stat_names[i]);
		}
		for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
			if (!text_value_of(res.out, derived[i], &value))
				FAIL("no line for %s in:\n%s", derived[i], res.out);
		for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
			ASSERT_TRUE(has_line(res.out, sections[i]), sections[i]);
		ASSERT_TRUE(!strstr(res.out, "not shown"), "nothing hidden: no counter is 0");
	}
	state_destroy(&st);
}

/* Counters at 0 are left out, and their section with them, unless --all. */
TEST(test_stats_text_hides_zeros_unless_all)
{
	const char *plain[] = { "stats", NULL };
	const char *all[] = { "stats", "--all", NULL };
	struct pinned_state st;
	struct cli_result res;
	unsigned long long value;
	char want[64];

	if (!state_create(&st))
		return;
	if (set_counter_on_cpu(&st, STAT_COOKIE_SENT, 0, 9) && run_cli(&res, plain)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_TRUE(text_value_of(res.out, "cookie_sent", &value) && value == 9, "cookie_sent 9");
		ASSERT_TRUE(has_line(res.out, "SYN proxy"), "its section's title");
		ASSERT_TRUE(!text_value_of(res.out, "syn_seen", &value), "syn_seen at 0 left out");
		ASSERT_TRUE(!has_line(res.out, "rewriting"), "a section of zeros left out");
		ASSERT_TRUE(text_value_of(res.out, "flows_max", &value), "flows_max always shown");
		snprintf(want, sizeof(want), "(%d counters at 0 not shown: --all shows them)",
			 STAT_COUNT - 3);
		ASSERT_TRUE(has_line(res.out, want), want);
	}
	if (run_cli(&res, all)) {
		ASSERT_EQ(res.status, 0, "--all: exit status");
		ASSERT_TRUE(text_value_of(res.out, "syn_seen", &value) && value == 0, "--all: syn_seen 0");
		ASSERT_TRUE(has_line(res.out, "rewriting"), "--all: every section");
		ASSERT_TRUE(!text_value_of(res.out, "cookie_ack_invalid_expired", &value),
			    "--all: no retired counter");
		ASSERT_TRUE(!strstr(res.out, "not shown"), "--all: nothing hidden");
	}
	state_destroy(&st);
}

/* Every block of --watch starts with its time: "== 2026-06-05T10:11:12.345Z". */
TEST(test_stats_watch_text_blocks_start_with_their_time)
{
	const char *args[] = { "stats", "--watch", "0.1", NULL };
	struct pinned_state st;
	struct cli_result res;
	int blocks = 0, stamped = 0;

	if (!state_create(&st))
		return;
	if (run_cli_stopped_after(&res, args, 450)) {
		ASSERT_EQ(res.status, 0, "exit status after SIGTERM");
		for (const char *line = res.out; line && *line;
		     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			int y, mo, d, h, mi, sec, ms, n = 0;

			blocks += !strncmp(line, "flow table\n", 11);
			if (sscanf(line, "== %4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &sec,
				   &ms, &n) == 7 && n == 27)
				stamped++;
		}
		ASSERT_TRUE(blocks >= 2, "at least two blocks");
		ASSERT_EQ(stamped, blocks, "blocks with a timestamp line");
	}
	state_destroy(&st);
}

TEST(test_stats_flow_evicted_is_created_minus_expired_minus_present)
{
	const char *args[] = { "stats", "--json", NULL };
	struct flow_key first = make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 80, "10.0.0.2", 1000);
	struct flow_key second = make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 80, "10.0.0.3", 1000);
	struct flow_state state = { .flags = FLOW_F_PASSIVE_OPEN };
	struct pinned_state st;
	struct cli_result res;
	char want[128];

	if (!state_create(&st))
		return;
	if (set_counter_on_cpu(&st, STAT_FLOW_CREATED, st.ncpus - 1, 10) &&
	    set_counter_on_cpu(&st, STAT_FLOW_EXPIRED, 0, 3) &&
	    plant_flow(&st, &first, &state) && plant_flow(&st, &second, &state) &&
	    run_cli(&res, args)) {
		snprintf(want, sizeof(want), "\"flows_present\":2,\"flows_max\":%d,\"flow_evicted\":5}\n",
			 TEST_FLOWS_MAX);
		ASSERT_EQ(res.status, 0, "exit status");
		if (!strstr(res.out, want))
			FAIL("stdout \"%s\" lacks \"%s\"", res.out, want);
	}
	state_destroy(&st);
}

TEST(test_stats_watch_prints_samples_with_deltas_until_sigterm)
{
	const char *args[] = { "stats", "--json", "--watch", "0.1", NULL };
	const char *second_counters = "\"counters\":{\"pass_not_ip\":7,";
	struct pinned_state st;
	struct cli_result res;
	const char *second, *interval;
	double interval_s = 0;

	if (!state_create(&st))
		return;
	if (set_counter_on_cpu(&st, STAT_PASS_NOT_IP, 0, 7) && run_cli_stopped_after(&res, args, 450)) {
		ASSERT_EQ(res.status, 0, "exit status after SIGTERM");
		ASSERT_STREQ(res.err, "", "stderr");
		second = strchr(res.out, '\n');
		if (!ASSERT_TRUE(second && second[1], "at least two samples"))
			goto out;
		second++;
		ASSERT_TRUE(strstr(res.out, "\"deltas\"") > second, "first sample has no deltas");
		ASSERT_TRUE(!strncmp(second, "{\"time\":\"", 9), "second sample starts with its time");
		ASSERT_TRUE(strstr(second, second_counters) != NULL, "second sample's counters");
		interval = strstr(second, "\"interval_s\":");
		if (ASSERT_TRUE(interval, "interval_s in the second sample"))
			sscanf(interval, "\"interval_s\":%lf", &interval_s);
		/* Loose upper bound: a loaded machine may wake late. */
		ASSERT_TRUE(interval_s >= 0.09 && interval_s < 0.35, "interval_s about 0.1 s");
		ASSERT_TRUE(strstr(second, "\"deltas\":{\"pass_not_ip\":0,"), "unchanged counter: delta 0");
	}
out:
	state_destroy(&st);
}

/* --- exporter ------------------------------------------------------------- */

/*
 * A counter series' value as the count it exports: the integer, or for a
 * family in seconds (_seconds_total) the nanoseconds "S.NNNNNNNNN" stands for.
 */
static bool series_count(const char *line, unsigned long long *count)
{
	const char *value = strrchr(line, ' ');
	unsigned long long whole, nanos;
	int n = 0;

	if (!value)
		return false;
	if (strstr(line, "_seconds_total"))
		return sscanf(value, " %llu.%9llu%n", &whole, &nanos, &n) == 2 &&
		       (*count = whole * 1000000000ULL + nanos, true);
	return sscanf(value, " %llu", count) == 1;
}

/*
 * Every counter stats --json shows is in /metrics once, with its value: each
 * planted total differs, so each must be one _total series' value, and no
 * series may hold another (a retired counter's, a sum of two).
 */
TEST(test_exporter_once_exports_every_counter_once_with_its_value)
{
	const char *args[] = { "exporter", "--once", NULL };
	unsigned long long values[STAT_COUNT * 2], count;
	bool matched[STAT_COUNT] = { false };
	struct pinned_state st;
	struct cli_result res;
	int series = 0;

	if (!state_create(&st))
		return;
	if (!plant_distinct_counters(&st) || !run_cli(&res, args))
		goto out;
	ASSERT_EQ(res.status, 0, "exit status");
	ASSERT_STREQ(res.err, "", "stderr");
	ASSERT_TRUE(strstr(res.out, "\nisnguard_up 1\n") != NULL, "isnguard_up 1");
	ASSERT_TRUE(strstr(res.out, "# TYPE isnguard_build_info gauge\n") != NULL, "build_info");
	for (const char *line = res.out; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char text[256];

		snprintf(text, sizeof(text), "%.*s", (int)strcspn(line, "\n"), line);
		if (text[0] == '#' || !strstr(text, "_total"))
			continue;
		if (!ASSERT_TRUE(series_count(text, &count), text) || series >= STAT_COUNT * 2)
			break;
		values[series++] = count;
		for (int i = 0; i < STAT_COUNT; i++)
			if (count == planted_total(st.ncpus, i)) {
				if (matched[i])
					FAIL("%s's value is in two series (the second: %s)", stat_names[i], text);
				matched[i] = true;
			}
	}
	ASSERT_EQ(series, STAT_COUNT - 2, "counter series: every counter but the two retired");
	for (int i = 0; i < STAT_COUNT; i++)
		if (matched[i] == retired_stat(i))
			FAIL("%s (%llu): %s", stat_names[i], planted_total(st.ncpus, i),
			     retired_stat(i) ? "retired, yet exported" : "no series has its value");
	(void)values;
out:
	state_destroy(&st);
}

/*
 * isn_stats as attach makes it, a slot per interface, and isn_stat_slots
 * naming slots 1 (a0 in netns 11) and 2 (b0 in netns 22); cookie_sent
 * counted 5 in slot 1, 7 in slot 2 and 1 in slot 0, on one CPU each.
 */
static bool plant_interface_slots(struct pinned_state *st)
{
	struct stat_slot a0 = { .owner = { .netns_ino = 11, .ifindex = 3 }, .ifname = "a0" };
	struct stat_slot b0 = { .owner = { .netns_ino = 22, .ifindex = 4 }, .ifname = "b0" };
	__u64 per_cpu[st->ncpus];
	const __u64 counts[3] = { 1, 5, 7 };
	char path[160];
	__u32 one = 1, two = 2;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", st->dir, ISN_MAP_STATS);
	unlink(path);
	close(st->stats_fd);
	st->stats_fd = create_pinned(st, BPF_MAP_TYPE_PERCPU_ARRAY, ISN_MAP_STATS, sizeof(__u32),
				     sizeof(__u64), ISN_STATS_ENTRIES, 0);
	fd = create_pinned(st, BPF_MAP_TYPE_ARRAY, ISN_MAP_STAT_SLOTS, sizeof(__u32),
			   sizeof(struct stat_slot), ISN_STATS_SLOTS, 0);
	if (!ASSERT_TRUE(st->stats_fd >= 0 && fd >= 0, "the maps of slots"))
		return false;
	bpf_map_update_elem(fd, &one, &a0, BPF_ANY);
	bpf_map_update_elem(fd, &two, &b0, BPF_ANY);
	close(fd);
	for (__u32 slot = 0; slot < 3; slot++) {
		__u32 index = slot * STAT_COUNT + STAT_COOKIE_SENT;

		memset(per_cpu, 0, sizeof(per_cpu));
		per_cpu[(int)slot % st->ncpus] = counts[slot];
		if (!ASSERT_OK(bpf_map_update_elem(st->stats_fd, &index, per_cpu, BPF_ANY), "plant"))
			return false;
	}
	return true;
}

static void unpin_slots(const struct pinned_state *st)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", st->dir, ISN_MAP_STAT_SLOTS);
	unlink(path);
}

/* Totals sum the slots; each interface's counters are its own, and what no interface counted apart. */
TEST(test_stats_and_exporter_show_each_interfaces_counters)
{
	const char *json[] = { "stats", "--json", NULL };
	const char *once[] = { "exporter", "--once", NULL };
	const char *const want_series[] = {
		"isnguard_synproxy_cookies_sent_total 1\n",
		"isnguard_synproxy_cookies_sent_total{interface=\"a0\",netns=\"11\"} 5\n",
		"isnguard_synproxy_cookies_sent_total{interface=\"b0\",netns=\"22\"} 7\n",
		"isnguard_packets_passed_total{interface=\"b0\",netns=\"22\",reason=\"not_ip\"} 0\n",
	};
	struct pinned_state st;
	struct cli_result res;
	unsigned long long value;
	const char *a0, *b0;

	if (!state_create(&st))
		return;
	if (plant_interface_slots(&st) && run_cli(&res, json)) {
		ASSERT_EQ(res.status, 0, "stats: exit status");
		ASSERT_TRUE(json_value_of(res.out, "cookie_sent", &value) && value == 13,
			    "cookie_sent: the sum of the slots");
		a0 = strstr(res.out, "{\"interface\":\"a0\",\"netns_inode\":11,\"counters\":{");
		b0 = strstr(res.out, "{\"interface\":\"b0\",\"netns_inode\":22,\"counters\":{");
		ASSERT_TRUE(strstr(res.out, "\"interfaces\":[{\"interface\":\"\",\"netns_inode\":0,") != NULL,
			    "slot 0 first, as it counted");
		ASSERT_TRUE(a0 && json_value_of(a0, "cookie_sent", &value) && value == 5, "a0's cookie_sent");
		ASSERT_TRUE(b0 && json_value_of(b0, "cookie_sent", &value) && value == 7, "b0's cookie_sent");
	}
	if (run_cli(&res, once)) {
		ASSERT_EQ(res.status, 0, "exporter: exit status");
		for (size_t i = 0; i < sizeof(want_series) / sizeof(want_series[0]); i++)
			if (!strstr(res.out, want_series[i]))
				FAIL("no \"%.*s\" in /metrics", (int)strlen(want_series[i]) - 1, want_series[i]);
	}
	unpin_slots(&st);
	state_destroy(&st);
}

/* With nothing pinned the exporter still answers: isnguard_up 0 and its build. */
TEST(test_exporter_once_without_state_says_up_0)
{
	const char *args[] = { "exporter", "--once", NULL };
	struct pinned_state st = { .flows_fd = -1, .opening_fd = -1, .config_fd = -1, .key_fd = -1,
				   .stats_fd = -1 };
	struct cli_result res;

	make_state_dir(&st);
	if (run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.err, "", "stderr: no state is no error");
		ASSERT_TRUE(strstr(res.out, "\nisnguard_up 0\n") != NULL, "isnguard_up 0");
		ASSERT_TRUE(strstr(res.out, "isnguard_build_info{version=\"") != NULL, "build_info");
		ASSERT_TRUE(!strstr(res.out, "_total"), "no counter");
	}
	state_destroy(&st);
}

/* --- flows ---------------------------------------------------------------- */

TEST(test_flows_json_lists_a_planted_flow_with_its_fields)
{
	const char *args[] = { "flows", "--json", NULL };
	struct flow_key key = make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 80, "10.0.0.2", 40000);
	__u64 now_ns = coarse_now_ns();
	struct flow_state state = {
		.host_isn = 1000, .wire_isn = 0x80000000u, .seq_delta = 0x80000000u - 1000,
		.flags = FLOW_F_PASSIVE_OPEN | FLOW_F_ESTABLISHED, .hash = ISN_HASH_MD5,
		.created_ns = now_ns - 5000000000ULL, .last_seen_ns = now_ns - 2000000000ULL,
	};
	const char *want = "{\"flows\":[{\"family\":4,\"local\":\"10.0.0.1:80\",\"remote\":\"10.0.0.2:40000\","
			   "\"phase\":\"established\",\"open\":\"passive\",\"hash\":\"md5\","
			   "\"host_isn\":1000,\"wire_isn\":2147483648,\"seq_delta\":2147482648,"
			   "\"flags\":[\"passive_open\",\"established\"],\"age_s\":";
	struct pinned_state st;
	struct cli_result res;
	double age_s = 0, idle_s = 0;

	if (!state_create(&st))
		return;
	if (plant_flow(&st, &key, &state) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		if (!ASSERT_TRUE(!strncmp(res.out, want, strlen(want)), "fields before age_s"))
			test_log("stdout: %s", res.out);
		ASSERT_EQ(sscanf(res.out + strlen(want), "%lf,\"idle_s\":%lf}]", &age_s, &idle_s), 2,
			  "age_s and idle_s");
		ASSERT_TRUE(age_s >= 5.0 && age_s < 6.0, "age_s is 5 s and a bit");
		ASSERT_TRUE(idle_s >= 2.0 && idle_s < 3.0, "idle_s is 2 s and a bit");
		ASSERT_TRUE(strstr(res.out, "}],\"count\":1}\n"), "count 1");
	}
	state_destroy(&st);
}

/* A translated SYN-proxy connection: its flags by name and its proxy fields. */
TEST(test_flows_json_shows_a_proxied_flow)
{
	const char *args[] = { "flows", "--json", NULL };
	struct flow_key key = make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 443, "10.0.0.2", 40001);
	__u64 now_ns = coarse_now_ns();
	struct flow_state state = {
		.host_isn = 7, .wire_isn = 9, .seq_delta = 2,
		.flags = FLOW_F_PROXIED | FLOW_F_PASSIVE_OPEN | FLOW_F_ESTABLISHED | FLOW_F_PROXY_TS,
		.ts_delta = 12345, .wscale_host = 2, .wscale_wire = 7, .peer_wscale_wire = 8,
		.peer_wscale_host = 8, .created_ns = now_ns, .last_seen_ns = now_ns,
	};
	const char *want = "\"flags\":[\"passive_open\",\"established\",\"proxied\","
			   "\"proxy_timestamps\"],\"proxy\":{\"ts_delta\":12345,\"wscale_host\":2,"
			   "\"wscale_wire\":7,\"peer_wscale_wire\":8,\"peer_wscale_host\":8},\"age_s\":";
	struct pinned_state st;
	struct cli_result res;

	if (!state_create(&st))
		return;
	if (plant_flow(&st, &key, &state) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		if (!ASSERT_TRUE(strstr(res.out, want) != NULL, "proxied flags and fields"))
			test_log("stdout: %s", res.out);
	}
	state_destroy(&st);
}

/* The first word of each line after the header, in order, joined by spaces. */
static void first_words(const char *out, char *words, size_t len)
{
	const char *line = strchr(out, '\n');
	size_t n = 0;

	words[0] = '\0';
	while (line && line[1]) {
		int w = 0;

		line++;
		sscanf(line, "%*s%n", &w);
		n += (size_t)snprintf(words + n, len - n, "%s%.*s", n ? " " : "", w, line);
		line = strchr(line, '\n');
	}
}

TEST(test_flows_text_sorted_by_remote_then_local)
{
	const char *args[] = { "flows", NULL };
	struct flow_key keys[] = {
		make_key(FLOW_FAMILY_IPV6, "2001:db8::1", 443, "2001:db8::2", 5555),
		make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 80, "10.0.0.9", 1),
		make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 443, "10.0.0.2", 5),
		make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 22, "10.0.0.2", 5),
	};
	struct flow_state state = { .flags = FLOW_F_ACTIVE_OPEN, .seq_delta = 0xdeadbeef };
	struct pinned_state st;
	struct cli_result res;
	char words[256];
	bool planted = true;

	if (!state_create(&st))
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		planted = planted && plant_flow(&st, &keys[i], &state);
	if (planted && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_TRUE(!strncmp(res.out, "LOCAL ", 6), "header line first");
		first_words(res.out, words, sizeof(words));
		ASSERT_STREQ(words, "10.0.0.1:22 10.0.0.1:443 10.0.0.1:80 [2001:db8::1]:443",
			     "local ends in order");
		ASSERT_TRUE(strstr(res.out, " [2001:db8::2]:5555 "), "IPv6 remote in brackets");
		ASSERT_TRUE(strstr(res.out, " 0xdeadbeef "), "seq_delta as u32 hex");
	}
	state_destroy(&st);
}

/* --- mode ----------------------------------------------------------------- */

static const struct isn_config planted_config = {
	.hash = ISN_HASH_SIPHASH, .timeout_opening = 11, .timeout_established = 22,
	.timeout_closing = 33, .timeout_closed = 44,
};

static bool plant_config(const struct pinned_state *st)
{
	__u32 zero = 0;

	return ASSERT_OK(bpf_map_update_elem(st->config_fd, &zero, &planted_config, BPF_ANY),
			 "plant config");
}

static void read_config(const struct pinned_state *st, struct isn_config *config)
{
	__u32 zero = 0;

	memset(config, 0, sizeof(*config));
	ASSERT_OK(bpf_map_lookup_elem(st->config_fd, &zero, config), "read config");
}

TEST(test_mode_changes_only_the_hash)
{
	const char *args[] = { "mode", "md5", "--json", NULL };
	struct isn_config want = planted_config, got;
	struct pinned_state st;
	struct cli_result res;

	if (!state_create(&st))
		return;
	if (plant_config(&st) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.out, "{\"hash\":\"md5\",\"previous\":\"siphash\"}\n", "stdout");
		want.hash = ISN_HASH_MD5;
		read_config(&st, &got);
		ASSERT_MEMEQ(&got, &want, sizeof(want), "config after mode md5");
	}
	state_destroy(&st);
}

TEST(test_mode_text_names_new_and_previous_hash)
{
	const char *args[] = { "mode", "none", NULL };
	struct pinned_state st;
	struct cli_result res;

	if (!state_create(&st))
		return;
	if (plant_config(&st) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.out, "hash for new flows: none (was siphash)\n", "stdout");
	}
	state_destroy(&st);
}

TEST(test_mode_unknown_hash_exits_2_and_keeps_config)
{
	const char *args[] = { "mode", "sha1", NULL };
	struct pinned_state st;
	struct cli_result res;
	struct isn_config got;

	if (!state_create(&st))
		return;
	if (plant_config(&st) && run_cli(&res, args)) {
		ASSERT_EQ(res.status, 2, "exit status");
		ASSERT_STREQ(res.out, "", "stdout");
		ASSERT_TRUE(is_one_error_line(res.err, "isnguard: mode: unknown hash 'sha1'"), "stderr");
		read_config(&st, &got);
		ASSERT_MEMEQ(&got, &planted_config, sizeof(got), "config unchanged");
	}
	state_destroy(&st);
}

/* --- key ------------------------------------------------------------------ */

TEST(test_key_set_from_file_writes_it_and_never_prints_it)
{
	static const char content[] = "  " KEY_HEX "\n\n";
	static const struct isn_key want = { { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
					       0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f } };
	const char *args[] = { "key", "set", "--from-file", NULL, NULL };
	struct pinned_state st;
	struct cli_result res;
	struct isn_key got;
	char path[64], want_out[128];

	if (!state_create(&st))
		return;
	write_key(&st, OLD_KEY_BYTE);
	if (ASSERT_TRUE(write_temp_file(path, sizeof(path), content, strlen(content)), "key file")) {
		args[3] = path;
		if (run_cli(&res, args)) {
			snprintf(want_out, sizeof(want_out), "key set from %s (new flows only)\n", path);
			ASSERT_EQ(res.status, 0, "exit status");
			ASSERT_STREQ(res.out, want_out, "stdout");
			ASSERT_STREQ(res.err, "", "stderr");
			read_key(&st, &got);
			ASSERT_MEMEQ(&got, &want, sizeof(want), "key in the map");
		}
		unlink(path);
	}
	state_destroy(&st);
}

static const struct {
	const char *desc;
	const char *content;
	size_t len;
} bad_key_files[] = {
	{ "empty", "", 0 },
	{ "too short", "0011\n", 5 },
	{ "one digit too many", KEY_HEX "0\n", 34 },
	{ "not hex", "000102030405060708090a0b0c0d0e0g\n", 33 },
	{ "space inside", "00010203 0405060708090a0b0c0d0e0f\n", 34 },
	{ "two keys", KEY_HEX "\n" KEY_HEX "\n", 66 },
	{ "NUL after the key", KEY_HEX "\0" "ff", 35 },
};

/* A bad key exits 2 (bad usage); a file that cannot be read 1 (runtime), as every command's. */
static void expect_bad_key_file(const struct pinned_state *st, const char *desc, const char *path,
				int status)
{
	const char *args[] = { "key", "set", "--from-file", path, NULL };
	struct isn_key old, got;
	struct cli_result res;

	memset(old.bytes, OLD_KEY_BYTE, sizeof(old.bytes));
	if (!ASSERT_TRUE(run_cli(&res, args), desc))
		return;
	ASSERT_EQ(res.status, status, desc);
	ASSERT_STREQ(res.out, "", desc);
	if (!is_one_error_line(res.err, "isnguard: key: "))
		FAIL("%s: stderr is not one 'isnguard: key: ...' line: \"%s\"", desc, res.err);
	read_key(st, &got);
	ASSERT_MEMEQ(&got, &old, sizeof(old), desc);
}

TEST(test_key_set_bad_file_exits_2_missing_file_1_and_keeps_key)
{
	struct pinned_state st;
	char path[64];

	if (!state_create(&st))
		return;
	write_key(&st, OLD_KEY_BYTE);
	for (size_t i = 0; i < sizeof(bad_key_files) / sizeof(bad_key_files[0]); i++) {
		if (!ASSERT_TRUE(write_temp_file(path, sizeof(path), bad_key_files[i].content,
						 bad_key_files[i].len), bad_key_files[i].desc))
			break;
		expect_bad_key_file(&st, bad_key_files[i].desc, path, 2);
		unlink(path);
	}
	expect_bad_key_file(&st, "missing file", "/nonexistent/isnguard.key", 1);
	state_destroy(&st);
}

TEST(test_key_rotate_writes_a_fresh_key_each_time)
{
	const char *text_args[] = { "key", "rotate", NULL };
	const char *json_args[] = { "key", "rotate", "--json", NULL };
	struct isn_key old, first, second;
	struct pinned_state st;
	struct cli_result res;

	if (!state_create(&st))
		return;
	write_key(&st, OLD_KEY_BYTE);
	memset(old.bytes, OLD_KEY_BYTE, sizeof(old.bytes));
	if (run_cli(&res, text_args)) {
		struct isn_key previous;

		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.out, "key rotated (new flows only)\n", "stdout");
		ASSERT_EQ(current_key_gen(&st), 1, "key generation");
		read_key(&st, &first);
		ASSERT_TRUE(memcmp(&first, &old, sizeof(old)), "key changed");
		/* The previous key stays, for SYN cookies in flight. */
		read_key_slot(&st, 0, &previous);
		ASSERT_MEMEQ(&previous, &old, sizeof(old), "previous key kept");
	}
	if (run_cli(&res, json_args)) {
		ASSERT_EQ(res.status, 0, "exit status");
		ASSERT_STREQ(res.out, "{\"key\":\"rotated\"}\n", "stdout");
		ASSERT_EQ(current_key_gen(&st), 2, "key generation");
		read_key(&st, &second);
		ASSERT_TRUE(memcmp(&second, &first, sizeof(first)), "key changed again");
	}
	state_destroy(&st);
}

TEST(test_key_without_a_known_subcommand_exits_2)
{
	const char *const cases[][5] = { { "key" }, { "key", "frobnicate" }, { "key", "set" },
					 { "key", "rotate", "--from-file", "/dev/null" } };
	struct cli_result res;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!ASSERT_TRUE(run_cli(&res, cases[i]), "run isnguard"))
			return;
		ASSERT_EQ(res.status, 2, cases[i][1] ? cases[i][1] : "no subcommand");
		ASSERT_TRUE(is_one_error_line(res.err, "isnguard: key: "), "one error line");
	}
}

/* --- all four ------------------------------------------------------------- */

TEST(test_state_commands_fail_not_attached_on_empty_pin_dir)
{
	static const struct {
		const char *args[4];
		const char *map;
	} cases[] = {
		{ { "stats" }, ISN_MAP_STATS },
		{ { "flows", "--json" }, ISN_MAP_FLOWS },
		{ { "mode", "md5" }, ISN_MAP_CONFIG },
		{ { "key", "rotate" }, ISN_MAP_KEY },
	};
	struct pinned_state st = { .flows_fd = -1, .opening_fd = -1, .config_fd = -1, .key_fd = -1,
				   .stats_fd = -1 };
	struct cli_result res;
	char want[256];

	make_state_dir(&st);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!ASSERT_TRUE(run_cli(&res, cases[i].args), "run isnguard"))
			break;
		ASSERT_EQ(res.status, 1, cases[i].args[0]);
		if (cases[i].args[1] && !strcmp(cases[i].args[1], "--json")) {
			/* Under --json the error is a JSON object on stdout. */
			snprintf(want, sizeof(want),
				 "{\"error\":\"%s: not attached (no %s/%s)\"}\n",
				 cases[i].args[0], st.dir, cases[i].map);
			ASSERT_STREQ(res.out, want, cases[i].args[0]);
			ASSERT_STREQ(res.err, "", cases[i].args[0]);
			continue;
		}
		snprintf(want, sizeof(want), "isnguard: %s: not attached (no %s/%s)\n",
			 cases[i].args[0], st.dir, cases[i].map);
		ASSERT_STREQ(res.out, "", cases[i].args[0]);
		ASSERT_STREQ(res.err, want, cases[i].args[0]);
	}
	state_destroy(&st);
}

TEST(test_state_commands_have_help)
{
	const char *const cmds[] = { "stats", "flows", "mode", "key" };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[] = { cmds[i], "--help", NULL };
		struct cli_result res;
		char want[64];

		if (!ASSERT_TRUE(run_cli(&res, args), "run isnguard"))
			return;
		snprintf(want, sizeof(want), "Usage: isnguard %s ", cmds[i]);
		ASSERT_EQ(res.status, 0, cmds[i]);
		ASSERT_TRUE(!strncmp(res.out, want, strlen(want)), cmds[i]);
	}
}

/*
 * A promoted handshake's entry lingers in isn_opening (FLOW_F_MOVED) beside
 * its live copy in isn_flows: flows lists the connection once, the copy
 * only with --moved; the filters keep what they name.
 */
TEST(test_flows_lists_each_connection_once_and_filters)
{
	const char *plain[] = { "flows", "--json", NULL };
	const char *moved[] = { "flows", "--json", "--moved", NULL };
	const char *by_port[] = { "flows", "--json", "--port", "443", NULL };
	const char *by_addr[] = { "flows", "--json", "--addr", "fd00::2", NULL };
	const char *by_phase[] = { "flows", "--json", "--phase", "opening", NULL };
	const char *by_family[] = { "flows", "--json", "--family", "4", NULL };
	struct flow_key web = make_key(FLOW_FAMILY_IPV4, "10.0.0.1", 443, "10.0.0.2", 40000);
	struct flow_key ssh = make_key(FLOW_FAMILY_IPV6, "fd00::1", 22, "fd00::2", 40001);
	__u64 now_ns = coarse_now_ns();
	struct flow_state live = {
		.flags = FLOW_F_PASSIVE_OPEN | FLOW_F_ESTABLISHED, .hash = ISN_HASH_SIPHASH,
		.created_ns = now_ns, .last_seen_ns = now_ns,
	};
	struct flow_state copy = live, opening = live;
	const struct { const char *const *args; const char *count; const char *what; } cases[] = {
		{ plain, "\"count\":2}", "each connection once" },
		{ moved, "\"count\":3}", "--moved: the lingering copy too" },
		{ by_port, "\"count\":1}", "--port 443" },
		{ by_addr, "\"count\":1}", "--addr fd00::2" },
		{ by_phase, "\"count\":1}", "--phase opening" },
		{ by_family, "\"count\":1}", "--family 4" },
	};
	struct pinned_state st;
	struct cli_result res;

	copy.flags |= FLOW_F_MOVED;
	opening.flags = FLOW_F_PASSIVE_OPEN;
	if (!state_create(&st))
		return;
	if (plant_flow(&st, &web, &live) &&
	    ASSERT_OK(bpf_map_update_elem(st.opening_fd, &web, &copy, BPF_NOEXIST), "plant copy") &&
	    ASSERT_OK(bpf_map_update_elem(st.opening_fd, &ssh, &opening, BPF_NOEXIST), "plant ssh"))
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (!ASSERT_TRUE(run_cli(&res, cases[i].args), cases[i].what))
				break;
			ASSERT_EQ(res.status, 0, cases[i].what);
			if (!ASSERT_TRUE(strstr(res.out, cases[i].count) != NULL, cases[i].what))
				test_log("stdout: %s", res.out);
		}
	state_destroy(&st);
}
