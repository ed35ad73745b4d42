// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard prefix: the SYN proxy's deny and allow lists, live. One LPM trie
 * per family (isn_prefix4, isn_prefix6) holds both lists, each prefix's
 * value its list, so the longest prefix wins: allow 10.1.0.0/16 inside
 * deny 10.0.0.0/8 lets 10.1/16 through. The datapath looks a family up
 * only while its trie has entries (SYN_POLICY_LIST4, SYN_POLICY_LIST6 in
 * isn_syn_policy): set before the first entry goes in, cleared after the
 * last goes out, under the state lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "json_writer.h"
#include "commands.h"
#include "pinned.h"
#include "policy.h"
#include "state.h"

const char *prefix_list_name(uint32_t list)
{
	return list == SYN_LIST_DENY ? "deny" : list == SYN_LIST_ALLOW ? "allow" : "none";
}

static int list_from_name(const char *name)
{
	if (!strcmp(name, "deny"))
		return SYN_LIST_DENY;
	if (!strcmp(name, "allow"))
		return SYN_LIST_ALLOW;
	return -1;
}

int prefix_parse(const char *text, uint32_t list, struct prefix_entry *e, const char **why)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(text, '/');
	size_t alen = slash ? (size_t)(slash - text) : strlen(text);
	unsigned long len;
	char *end;
	int bits;

	memset(e, 0, sizeof(*e));
	e->list = list;
	if (alen >= sizeof(addr)) {
		*why = "not an address";
		return -1;
	}
	memcpy(addr, text, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, e->addr) == 1) {
		e->family = 4;
	} else if (inet_pton(AF_INET6, addr, e->addr) == 1) {
		e->family = 6;
	} else {
		*why = "not an IPv4 or IPv6 address (ADDR or ADDR/LEN)";
		return -1;
	}
	bits = e->family == 4 ? 32 : 128;
	len = (unsigned long)bits;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9') {
			*why = "the prefix length is a number";
			return -1;
		}
		len = strtoul(slash + 1, &end, 10);
		if (*end || len > (unsigned long)bits) {
			*why = e->family == 4 ? "an IPv4 prefix length is 0-32"
					      : "an IPv6 prefix length is 0-128";
			return -1;
		}
	}
	e->len = (uint8_t)len;
	for (int b = (int)len; b < bits; b++)
		if (e->addr[b / 8] & (0x80 >> (b % 8))) {
			*why = "bits set past the prefix length (name the network: its host "
			       "bits zero)";
			return -1;
		}
	return 0;
}

void prefix_format(const struct prefix_entry *e, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, addr, sizeof(addr));
	snprintf(buf, len, "%s/%u", addr, e->len);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct prefix_entry *x = a, *y = b;
	int c;

	if (x->list != y->list)
		return x->list < y->list ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/* Both tries opened, layout-checked. */
static int tries_open(const char *cmd, int fd[2])
{
	fd[0] = map_open_checked(cmd, &isn_prefix4_layout, NULL);
	if (fd[0] < 0)
		return fd[0];
	fd[1] = map_open_checked(cmd, &isn_prefix6_layout, NULL);
	if (fd[1] < 0) {
		close(fd[0]);
		return fd[1];
	}
	return 0;
}

static void tries_close(int fd[2])
{
	close(fd[0]);
	close(fd[1]);
}

/* The key of e in its family's trie, and its size. */
static size_t trie_key(const struct prefix_entry *e, void *key)
{
	if (e->family == 4) {
		struct prefix4_key *k = key;

		k->prefixlen = e->len;
		memcpy(k->addr, e->addr, 4);
		return sizeof(*k);
	}
	struct prefix6_key *k = key;

	k->prefixlen = e->len;
	memcpy(k->addr, e->addr, 16);
	return sizeof(*k);
}

/* Every entry of both tries, appended to *out. */
static int tries_read(int fd[2], struct prefix_entry **out, size_t *count)
{
	*out = NULL;
	*count = 0;
	for (int f = 0; f < 2; f++) {
		struct prefix6_key cur, next;	/* the larger of the two keys */
		void *prev = NULL;

		while (!bpf_map_get_next_key(fd[f], prev, &next)) {
			struct prefix_entry e = { .family = f ? 6 : 4 }, *grown;
			uint32_t list;

			cur = next;
			prev = &cur;
			if (bpf_map_lookup_elem(fd[f], &cur, &list))
				continue;	/* deleted meanwhile */
			if (f) {
				e.len = (uint8_t)cur.prefixlen;
				memcpy(e.addr, cur.addr, 16);
			} else {
				const struct prefix4_key *k4 = (const void *)&cur;

				e.len = (uint8_t)k4->prefixlen;
				memcpy(e.addr, k4->addr, 4);
			}
			e.list = list;
			grown = realloc(*out, (*count + 1) * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			grown[(*count)++] = e;
			*out = grown;
		}
	}
	qsort(*out, *count, sizeof(**out), entry_cmp);
	return 0;
}

int prefix_lists_read(struct prefix_entry **out, size_t *count)
{
	int fd[2], err = tries_open("prefix", fd);

	if (err)
		return err;
	err = tries_read(fd, out, count);
	tries_close(fd);
	return err;
}

/* The policy's flags for the families with entries, as the tries hold them now. */
static int lists_flags_write(int fd[2], uint32_t add)
{
	struct prefix6_key key;
	struct syn_policy pol;
	uint32_t zero = 0, flags = add;
	int pfd = pinned_map_open(ISN_MAP_SYN_POLICY), err = 0;

	if (pfd < 0)
		return pfd;
	if (!bpf_map_get_next_key(fd[0], NULL, &key))
		flags |= SYN_POLICY_LIST4;
	if (!bpf_map_get_next_key(fd[1], NULL, &key))
		flags |= SYN_POLICY_LIST6;
	if (bpf_map_lookup_elem(pfd, &zero, &pol)) {
		err = -errno;
	} else if ((pol.flags & (SYN_POLICY_LIST4 | SYN_POLICY_LIST6)) != flags) {
		pol.flags = (pol.flags & ~(uint32_t)(SYN_POLICY_LIST4 | SYN_POLICY_LIST6)) | flags;
		if (bpf_map_update_elem(pfd, &zero, &pol, BPF_EXIST))
			err = -errno;
	}
	close(pfd);
	return err;
}

static uint32_t family_flag(const struct prefix_entry *e)
{
	return e->family == 4 ? SYN_POLICY_LIST4 : SYN_POLICY_LIST6;
}

static int entry_put(int fd[2], const struct prefix_entry *e)
{
	struct prefix6_key key;
	int err;

	trie_key(e, &key);
	err = lists_flags_write(fd, family_flag(e));	/* before: the datapath looks it up at once */
	if (!err && bpf_map_update_elem(fd[e->family == 6], &key, &e->list, BPF_ANY))
		err = -errno;
	return err;
}

static int entry_del(int fd[2], const struct prefix_entry *e)
{
	struct prefix6_key key;

	trie_key(e, &key);
	if (bpf_map_delete_elem(fd[e->family == 6], &key))
		return -errno;
	return 0;
}

static bool same_prefix(const struct prefix_entry *a, const struct prefix_entry *b)
{
	return a->family == b->family && a->len == b->len && !memcmp(a->addr, b->addr, 16);
}

static const struct prefix_entry *find_prefix(const struct prefix_entry *set, size_t count,
					      const struct prefix_entry *e)
{
	for (size_t i = 0; i < count; i++)
		if (same_prefix(&set[i], e))
			return &set[i];
	return NULL;
}

int prefix_lists_set(const char *cmd, const struct prefix_set *want, bool deny, bool allow,
		     bool dry_run, size_t *added, size_t *removed)
{
	struct prefix_entry *have = NULL;
	size_t count = 0;
	int fd[2], err = tries_open(cmd, fd);

	*added = *removed = 0;
	if (err)
		return err;
	err = tries_read(fd, &have, &count);
	/* Out first: an entry of the list being replaced that the new one lacks. */
	for (size_t i = 0; i < count && !err; i++) {
		const struct prefix_entry *w = find_prefix(want->entry, want->count, &have[i]);
		bool managed = (have[i].list == SYN_LIST_DENY && deny) ||
			       (have[i].list == SYN_LIST_ALLOW && allow);

		if (!managed || (w && w->list == have[i].list))
			continue;
		/* Moved to the other list, which is not being replaced: that one keeps it. */
		if (w && !((w->list == SYN_LIST_DENY && deny) || (w->list == SYN_LIST_ALLOW && allow)))
			continue;
		if (!w)
			++*removed;
		if (!w && !dry_run)
			err = entry_del(fd, &have[i]);
	}
	for (size_t i = 0; i < want->count && !err; i++) {
		const struct prefix_entry *w = &want->entry[i];
		const struct prefix_entry *h = find_prefix(have, count, w);

		if (!((w->list == SYN_LIST_DENY && deny) || (w->list == SYN_LIST_ALLOW && allow)))
			continue;
		if (h && h->list == w->list)
			continue;
		++*added;
		if (!dry_run)
			err = entry_put(fd, w);
	}
	if (!err && !dry_run)
		err = lists_flags_write(fd, 0);
	free(have);
	tries_close(fd);
	if (err)
		cli_error("%s: update the prefix lists: %s", cmd, strerror(-err));
	return err;
}

/* --- isnguard prefix ------------------------------------------------------- */

static bool prefix_json;

static const struct cli_option prefix_options[] = {
	CLI_JSON_ROW(&prefix_json, "print the lists, or what was done, as one JSON object"),
	CLI_HELP_ROW,
	{ 0 },
};

/*
 * A counter summed over CPUs and over every interface's set of counters
 * (isn_stats' slots, user/statslots.c; a kept map of one set has only
 * slot 0's), 0 when it cannot be read.
 */
static uint64_t stat_total(uint32_t stat)
{
	int ncpus = libbpf_num_possible_cpus(), fd;
	uint64_t *values, sum = 0;

	if (ncpus <= 0 || !(values = calloc((size_t)ncpus, sizeof(*values))))
		return 0;
	fd = pinned_map_open(ISN_MAP_STATS);
	for (uint32_t slot = 0; fd >= 0 && slot < ISN_STATS_SLOTS; slot++) {
		uint32_t key = slot * STAT_COUNT + stat;

		if (bpf_map_lookup_elem(fd, &key, values))
			break;	/* past the map's last set */
		for (int i = 0; i < ncpus; i++)
			sum += values[i];
	}
	if (fd >= 0)
		close(fd);
	free(values);
	return sum;
}

static int prefix_list_show(int only)
{
	static const uint32_t lists[] = { SYN_LIST_DENY, SYN_LIST_ALLOW };
	static const uint32_t counters[] = { STAT_SYN_PREFIX_DENIED, STAT_SYN_PREFIX_ALLOWED };
	static const char *const counted[] = { "SYNs dropped", "SYNs passed to the host" };
	struct prefix_entry *all;
	struct json_writer jw;
	char text[64];
	size_t count;
	int err = prefix_lists_read(&all, &count);

	if (err) {
		if (err != -ENOENT && err != -EPROTO)
			cli_error("prefix list: %s", strerror(-err));
		return EXIT_RUNTIME;
	}
	if (prefix_json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
	}
	for (int l = 0; l < 2; l++) {
		size_t n = 0;

		if (only >= 0 && (uint32_t)only != lists[l])
			continue;
		for (size_t i = 0; i < count; i++)
			n += all[i].list == lists[l];
		if (prefix_json) {
			jw_name(&jw, prefix_list_name(lists[l]));
			jw_start_array(&jw);
		} else {
			printf("%s: %zu prefix%s, %llu %s (%s)\n", prefix_list_name(lists[l]), n,
			       n == 1 ? "" : "es", (unsigned long long)stat_total(counters[l]),
			       counted[l], l ? "syn_prefix_allowed" : "syn_prefix_denied");
		}
		for (size_t i = 0; i < count; i++) {
			if (all[i].list != lists[l])
				continue;
			prefix_format(&all[i], text, sizeof(text));
			if (prefix_json)
				jw_string(&jw, text);
			else
				printf("  %s\n", text);
		}
		if (prefix_json) {
			jw_end_array(&jw);
			jw_uint_field(&jw, l ? "allowed_syns" : "denied_syns",
				      stat_total(counters[l]));
		}
	}
	if (prefix_json) {
		jw_end_object(&jw);
		jw_finish(&jw);
	}
	free(all);
	return 0;
}

/* add, del, flush: the change under the state lock, then what was done. */
static int prefix_change(struct cli_parser *p, const char *verb, int list, char **args, int nargs)
{
	struct prefix_entry *have = NULL, *parsed;
	struct json_writer jw;
	size_t count = 0, done = 0;
	int fd[2], lock, err, rc = 0;
	char text[64];

	parsed = calloc((size_t)(nargs ? nargs : 1), sizeof(*parsed));
	if (!parsed)
		return EXIT_RUNTIME;
	for (int i = 0; i < nargs; i++) {
		const char *why;

		if (prefix_parse(args[i], list < 0 ? SYN_LIST_NONE : (uint32_t)list, &parsed[i], &why)) {
			free(parsed);
			return cli_usage_error(p, "bad prefix '%s': %s", args[i], why);
		}
	}
	if (require_root(p->cmd)) {
		free(parsed);
		return EXIT_RUNTIME;
	}
	lock = state_lock(p->cmd);
	if (lock < 0) {
		free(parsed);
		return EXIT_RUNTIME;
	}
	err = tries_open(p->cmd, fd);
	if (err) {
		close(lock);
		free(parsed);
		return EXIT_RUNTIME;
	}
	err = tries_read(fd, &have, &count);
	if (prefix_json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "action", verb);
		if (list >= 0)
			jw_string_field(&jw, "list", prefix_list_name((uint32_t)list));
		jw_name(&jw, "prefixes");
		jw_start_array(&jw);
	}
	if (!strcmp(verb, "flush")) {
		for (size_t i = 0; i < count && !err; i++) {
			if (list >= 0 && have[i].list != (uint32_t)list)
				continue;
			err = entry_del(fd, &have[i]);
			if (!err && prefix_json) {
				prefix_format(&have[i], text, sizeof(text));
				jw_string(&jw, text);
			}
			done += !err;
		}
	}
	for (int i = 0; i < nargs && !err; i++) {
		const struct prefix_entry *h = find_prefix(have, count, &parsed[i]);
		bool add = !strcmp(verb, "add");

		prefix_format(&parsed[i], text, sizeof(text));
		if (add && h && h->list != parsed[i].list) {
			cli_error("prefix add %s %s: on the %s list ('isnguard prefix del %s' first)",
				  prefix_list_name(parsed[i].list), text, prefix_list_name(h->list),
				  text);
			rc = EXIT_RUNTIME;
			continue;
		}
		if (!add && (!h || (list >= 0 && h->list != (uint32_t)list))) {
			cli_error("prefix del %s: not on %s list", text,
				  list >= 0 ? prefix_list_name((uint32_t)list) : "either");
			rc = EXIT_RUNTIME;
			continue;
		}
		if (add && h) {		/* there already: nothing to do, and no error */
			if (!prefix_json)
				printf("%s %s: there already\n", prefix_list_name(h->list), text);
			continue;
		}
		err = add ? entry_put(fd, &parsed[i]) : entry_del(fd, h);
		if (err)
			break;
		done++;
		if (prefix_json)
			jw_string(&jw, text);
		else
			printf("%s %s %s\n", add ? "added to" : "removed from",
			       prefix_list_name(add ? parsed[i].list : h->list), text);
	}
	if (!err)
		err = lists_flags_write(fd, 0);
	if (err) {
		cli_error("prefix %s: %s", verb, strerror(-err));
		rc = EXIT_RUNTIME;
	}
	if (prefix_json) {
		jw_end_array(&jw);
		jw_uint_field(&jw, "changed", done);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else if (!strcmp(verb, "flush")) {
		printf("flushed %zu prefix%s%s%s\n", done, done == 1 ? "" : "es",
		       list >= 0 ? " from " : "", list >= 0 ? prefix_list_name((uint32_t)list) : "");
	}
	tries_close(fd);
	close(lock);
	free(have);
	free(parsed);
	return rc;
}

int do_prefix(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "prefix",
		.args = "add|del|list|flush [deny|allow] [PREFIX...]",
		.summary = "add deny|allow PREFIX...: to a list; del [deny|allow] PREFIX...: from\n"
			   "it; list [deny|allow]; flush [deny|allow]: empty one list or both.\n"
			   "The SYN proxy's prefix lists, live. A SYN to a protected port from a\n"
			   "source on the deny list is dropped before any other work\n"
			   "(syn_prefix_denied); one from the allow list goes to the host as\n"
			   "without isnguard, never answered nor limited (syn_prefix_allowed).\n"
			   "The longest prefix of either list wins. PREFIX: 198.51.100.0/24,\n"
			   "2001:db8::/32, or an address alone. A family whose lists are empty\n"
			   "costs the datapath no lookup. The config file's deny and allow keys\n"
			   "set whole lists ('isnguard apply').",
		.options = prefix_options,
	};
	const char *verb;
	int err, list = -1, first;

	prefix_json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind >= argc)
		return cli_usage_error(&p, "missing subcommand: add, del, list or flush");
	verb = argv[optind];
	first = optind + 1;
	if (first < argc && list_from_name(argv[first]) >= 0)
		list = list_from_name(argv[first++]);
	if (!strcmp(verb, "list")) {
		if (first < argc)
			return cli_usage_error(&p, "unexpected argument '%s'", argv[first]);
		if (require_root(p.cmd))
			return EXIT_RUNTIME;
		return prefix_list_show(list);
	}
	if (!strcmp(verb, "flush")) {
		if (first < argc)
			return cli_usage_error(&p, "unexpected argument '%s'", argv[first]);
		return prefix_change(&p, verb, list, NULL, 0);
	}
	if (strcmp(verb, "add") && strcmp(verb, "del"))
		return cli_usage_error(&p, "unknown subcommand '%s': use add, del, list or flush",
				       verb);
	if (!strcmp(verb, "add") && list < 0)
		return cli_usage_error(&p, "add: name the list, deny or allow");
	if (first >= argc)
		return cli_usage_error(&p, "%s: name at least one PREFIX", verb);
	return prefix_change(&p, verb, list, argv + first, argc - first);
}
