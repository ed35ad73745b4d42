// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard flows: the connections in the flow table and the translation each one carries. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "maps.h"
#include "parse.h"
#include "pinned.h"
#include "ref/isn_ref.h"

struct flow_entry {
	struct flow_key key;
	struct flow_state state;
};

static const char *const family_choices[] = { "4", "6", NULL };
static const char *const phase_choices[] = { "opening", "established", "closing", "closed", NULL };

/* What flows lists: filters by option (choices -1, port 0, addr NULL: any). */
static struct flows_params {
	bool json, moved;
	int family, phase;
	uint32_t port;
	const char *addr;
	uint8_t addr_bytes[16];
	uint8_t addr_family;
} fp;

static const struct cli_option flows_options[] = {
	CLI_OPT_CHOICE("family", 'f', "4|6", &fp.family, "family", family_choices,
		       "IPv4 or IPv6 connections only"),
	CLI_OPT_STRING("addr", 'a', "ADDR", &fp.addr, "connections with ADDR at either end"),
	CLI_OPT_U32("port", 'p', "PORT", &fp.port, 1, 65535, "connections with PORT at either end"),
	CLI_OPT_CHOICE("phase", 'P', "PHASE", &fp.phase, "phase", phase_choices,
		       "opening, established, closing or closed only"),
	CLI_OPT_FLAG("moved", 'm', &fp.moved, "also the handshake entries already promoted to "
		     "isn_flows, which linger in isn_opening until the sweeper's next look"),
	CLI_JSON_ROW(&fp.json, "print one JSON object {flows: [...], count}"),
	CLI_HELP_ROW,
	{ 0 },
};

/* Whether the options let e through. */
static bool flow_wanted(const struct flow_entry *e)
{
	const struct flow_key *k = &e->key;
	size_t len = fp.addr_family == FLOW_FAMILY_IPV4 ? 4 : 16;

	if (!fp.moved && (e->state.flags & FLOW_F_MOVED))
		return false;
	if (fp.family >= 0 && k->family != (fp.family ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4))
		return false;
	if (fp.phase >= 0 && flow_phase_of(e->state.flags) != (enum flow_phase)fp.phase)
		return false;
	if (fp.port && ntohs(k->local_port) != fp.port && ntohs(k->remote_port) != fp.port)
		return false;
	if (fp.addr && (k->family != fp.addr_family ||
			(memcmp(k->local_addr, fp.addr_bytes, len) &&
			 memcmp(k->remote_addr, fp.addr_bytes, len))))
		return false;
	return true;
}

static const char *const phase_names[] = {
	[FLOW_PHASE_OPENING] = "opening",
	[FLOW_PHASE_ESTABLISHED] = "established",
	[FLOW_PHASE_CLOSING] = "closing",
	[FLOW_PHASE_CLOSED] = "closed",
};

/* Longest "[v6]:port" (INET6_ADDRSTRLEN + brackets, colon, 5 digits) with room to spare. */
#define ENDPOINT_TEXT_LEN 64

struct flow_list {
	struct flow_entry *entries;
	size_t count;
	size_t capacity;
};

static int parse_flows_args(struct cli_parser *p, int argc, char **argv)
{
	int err;

	fp = (struct flows_params){ .family = -1, .phase = -1 };
	err = cli_parse(p, argc, argv);
	if (err)
		return err;
	if (optind < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind]);
	if (fp.addr) {
		if (inet_pton(AF_INET, fp.addr, fp.addr_bytes) == 1)
			fp.addr_family = FLOW_FAMILY_IPV4;
		else if (inet_pton(AF_INET6, fp.addr, fp.addr_bytes) == 1)
			fp.addr_family = FLOW_FAMILY_IPV6;
		else
			return cli_usage_error(p, "bad --addr '%s': not an IPv4 or IPv6 address",
					       fp.addr);
	}
	return 0;
}

static int append_chunk(const struct flow_key *keys, const struct flow_state *states,
			size_t count, void *ctx)
{
	struct flow_list *list = ctx;

	if (list->count + count > list->capacity) {
		size_t capacity = list->capacity ? list->capacity : count;
		struct flow_entry *grown;

		while (capacity < list->count + count)
			capacity *= 2;
		grown = realloc(list->entries, capacity * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		list->entries = grown;
		list->capacity = capacity;
	}
	for (size_t i = 0; i < count; i++) {
		list->entries[list->count] = (struct flow_entry){ keys[i], states[i] };
		list->count += flow_wanted(&list->entries[list->count]);
	}
	return 0;
}

/* Orders by family, then remote, then local, so repeated listings line up. */
static int compare_flows(const void *a, const void *b)
{
	const struct flow_key *x = &((const struct flow_entry *)a)->key;
	const struct flow_key *y = &((const struct flow_entry *)b)->key;
	int diff;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	diff = memcmp(x->remote_addr, y->remote_addr, sizeof(x->remote_addr));
	if (diff)
		return diff;
	if (x->remote_port != y->remote_port)
		return ntohs(x->remote_port) < ntohs(y->remote_port) ? -1 : 1;
	diff = memcmp(x->local_addr, y->local_addr, sizeof(x->local_addr));
	if (diff)
		return diff;
	if (x->local_port != y->local_port)
		return ntohs(x->local_port) < ntohs(y->local_port) ? -1 : 1;
	return 0;
}

static void format_flow_end(const struct flow_key *key, bool local, char *buf, size_t len)
{
	struct endpoint ep = { .family = key->family };

	memcpy(ep.addr, local ? key->local_addr : key->remote_addr, sizeof(ep.addr));
	ep.port = ntohs(local ? key->local_port : key->remote_port);
	format_endpoint(&ep, buf, len);
}

/* enum flow_flag, by bit: what `flows --json` prints for a flow's flags. */
static const char *const flag_names[] = {
	"active_open", "passive_open", "established", "fin_local", "fin_remote",
	"rst_local", "rst_remote", "rst_remote_accepted", "host_acked", "moved", "timer",
	"proxied", "proxy_opening", "proxy_own_ack_pending", "proxy_timestamps",
	"proxy_window_scaling", "syn_cookie_local", "proxy_silent", "host_socket",
};

static void print_flag_names(struct json_writer *jw, __u32 flags)
{
	jw_name(jw, "flags");
	jw_start_array(jw);
	for (__u32 bit = 0; bit < sizeof(flag_names) / sizeof(flag_names[0]); bit++)
		if (flags & (1u << bit))
			jw_string(jw, flag_names[bit]);
	jw_end_array(jw);
}

/* A translated SYN-proxy connection's timestamp delta and window shifts (bpf/proxy.h). */
static void print_proxy_fields(struct json_writer *jw, const struct flow_state *st)
{
	jw_name(jw, "proxy");
	jw_start_object(jw);
	jw_uint_field(jw, "ts_delta", st->ts_delta);
	jw_uint_field(jw, "wscale_host", st->wscale_host);
	jw_uint_field(jw, "wscale_wire", st->wscale_wire);
	jw_uint_field(jw, "peer_wscale_wire", st->peer_wscale_wire);
	jw_uint_field(jw, "peer_wscale_host", st->peer_wscale_host);
	jw_end_object(jw);
}

static const char *open_name(__u32 flags)
{
	if (flags & FLOW_F_ACTIVE_OPEN)
		return "active";
	if (flags & FLOW_F_PASSIVE_OPEN)
		return "passive";
	return "unknown";
}

/* Datapath times are bpf_ktime_get_coarse_ns(), the kernel's CLOCK_MONOTONIC_COARSE. */
static __u64 coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* A time stamped just after we read the clock would look like the future: call it 0. */
static double seconds_since(__u64 then_ns, __u64 now_ns)
{
	return now_ns > then_ns ? (double)(now_ns - then_ns) / 1e9 : 0.0;
}

static void print_flows_json(const struct flow_list *list, __u64 now_ns)
{
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_name(&jw, "flows");
	jw_start_array(&jw);
	for (size_t i = 0; i < list->count; i++) {
		const struct flow_entry *e = &list->entries[i];
		char local[ENDPOINT_TEXT_LEN], remote[ENDPOINT_TEXT_LEN];

		format_flow_end(&e->key, true, local, sizeof(local));
		format_flow_end(&e->key, false, remote, sizeof(remote));
		jw_start_object(&jw);
		jw_uint_field(&jw, "family", e->key.family);
		jw_string_field(&jw, "local", local);
		jw_string_field(&jw, "remote", remote);
		jw_string_field(&jw, "phase", phase_names[flow_phase_of(e->state.flags)]);
		jw_string_field(&jw, "open", open_name(e->state.flags));
		jw_string_field(&jw, "hash", isn_hash_name(e->state.hash));
		jw_uint_field(&jw, "host_isn", e->state.host_isn);
		jw_uint_field(&jw, "wire_isn", e->state.wire_isn);
		jw_uint_field(&jw, "seq_delta", e->state.seq_delta);
		print_flag_names(&jw, e->state.flags);
		if (e->state.flags & FLOW_F_PROXIED)
			print_proxy_fields(&jw, &e->state);
		jw_double_field(&jw, "age_s", seconds_since(e->state.created_ns, now_ns), 3);
		jw_double_field(&jw, "idle_s", seconds_since(e->state.last_seen_ns, now_ns), 3);
		jw_end_object(&jw);
	}
	jw_end_array(&jw);
	jw_uint_field(&jw, "count", list->count);
	jw_end_object(&jw);
	jw_finish(&jw);
}

struct column_widths {
	int local;
	int remote;
};

/* Endpoints vary from "1.2.3.4:5" to a full IPv6 address; size their columns to the table. */
static struct column_widths measure_columns(const struct flow_list *list)
{
	struct column_widths w = { (int)strlen("LOCAL"), (int)strlen("REMOTE") };
	char text[ENDPOINT_TEXT_LEN];

	for (size_t i = 0; i < list->count; i++) {
		format_flow_end(&list->entries[i].key, true, text, sizeof(text));
		if ((int)strlen(text) > w.local)
			w.local = (int)strlen(text);
		format_flow_end(&list->entries[i].key, false, text, sizeof(text));
		if ((int)strlen(text) > w.remote)
			w.remote = (int)strlen(text);
	}
	return w;
}

static void print_flows_text(const struct flow_list *list, __u64 now_ns)
{
	struct column_widths w = measure_columns(list);

	printf("%-*s  %-*s  %-11s  %-7s  %-7s  %10s  %10s  %-10s  %9s  %9s\n",
	       w.local, "LOCAL", w.remote, "REMOTE", "PHASE", "OPEN", "HASH",
	       "HOST_ISN", "WIRE_ISN", "SEQ_DELTA", "AGE_S", "IDLE_S");
	for (size_t i = 0; i < list->count; i++) {
		const struct flow_entry *e = &list->entries[i];
		char local[ENDPOINT_TEXT_LEN], remote[ENDPOINT_TEXT_LEN];

		format_flow_end(&e->key, true, local, sizeof(local));
		format_flow_end(&e->key, false, remote, sizeof(remote));
		printf("%-*s  %-*s  %-11s  %-7s  %-7s  %10u  %10u  0x%08x  %9.1f  %9.1f\n",
		       w.local, local, w.remote, remote,
		       phase_names[flow_phase_of(e->state.flags)], open_name(e->state.flags),
		       isn_hash_name(e->state.hash), e->state.host_isn, e->state.wire_isn,
		       e->state.seq_delta, seconds_since(e->state.created_ns, now_ns),
		       seconds_since(e->state.last_seen_ns, now_ns));
	}
}

static int read_flows(const struct flow_tables *tables, struct flow_list *list)
{
	int err = flow_tables_walk(tables, append_chunk, list);

	if (err) {
		cli_error("flows: read the flow tables: %s", strerror(-err));
		return err;
	}
	qsort(list->entries, list->count, sizeof(*list->entries), compare_flows);
	return 0;
}

int do_flows(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "flows",
		.args = "",
		.summary = "List the connections in the flow tables: their ends (local is the protected\n"
			   "host), phase, who opened them, the hash and ISNs, and the seq_delta that\n"
			   "translates them. Sorted by remote, then local end; each connection once\n"
			   "(a promoted handshake's lingering copy only with --moved).",
		.options = flows_options,
	};
	struct flow_list list = { 0 };
	struct flow_tables tables;
	bool json;
	int err;

	err = parse_flows_args(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	json = fp.json;
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	if (flow_tables_open(p.cmd, &tables))
		return EXIT_RUNTIME;
	err = read_flows(&tables, &list);
	flow_tables_close(&tables);
	if (!err) {
		if (json)
			print_flows_json(&list, coarse_now_ns());
		else
			print_flows_text(&list, coarse_now_ns());
	}
	free(list.entries);
	return err ? EXIT_RUNTIME : 0;
}
