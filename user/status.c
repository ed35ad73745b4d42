// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard status: a health check first (user/health.c), then where the
 * datapath is attached and the settings of the pinned state. The exit code
 * is the verdict: 0 everything configured is served, 3 nothing attached,
 * 4 degraded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "commands.h"
#include "health.h"
#include "json_writer.h"
#include "maps.h"
#include "pinned.h"
#include "policy.h"
#include "ref/isn_ref.h"
#include "synproxy.h"

static int read_config(struct isn_config *cfg)
{
	uint32_t zero = 0;
	int fd = map_open_checked("status", &isn_config_layout, NULL);
	int err = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, cfg)) {
		err = -errno;
		cli_error("status: read %s: %s", ISN_MAP_CONFIG, strerror(errno));
	}
	close(fd);
	return err;
}

static int flow_table_info(uint32_t *entries, uint32_t *max_entries)
{
	struct flow_tables tables;
	size_t count = 0;
	int err = flow_tables_open("status", &tables);

	if (err)
		return err;
	err = flow_tables_count(&tables, &count);
	*max_entries = tables.max_entries[0];
	flow_tables_close(&tables);
	if (err) {
		cli_error("status: read the flow tables: %s", strerror(-err));
		return err;
	}
	*entries = (uint32_t)count;
	return 0;
}

/* The SYN proxy's settings, when the state has them. */
struct status_synproxy {
	bool present;
	struct synproxy_config cfg;
	uint64_t ports[SYNPROXY_PORT_WORDS];
	struct syn_policy pol;
	uint64_t monitor[SYNPROXY_PORT_WORDS];
	struct policy_view view;
	const struct policy_view *policy;	/* &view, or NULL: no SYN policy in the state */
};

static void read_synproxy(struct status_synproxy *sp)
{
	size_t held, spending;

	sp->present = !synproxy_read_pinned(&sp->cfg, sp->ports);
	sp->view = (struct policy_view){ .pol = &sp->pol, .monitor = sp->monitor, .buckets = -1 };
	sp->policy = sp->present && !policy_read_pinned(&sp->pol, sp->monitor) ? &sp->view : NULL;
	if (sp->policy && !policy_bucket_fill(&held, &spending, &sp->view.buckets_max)) {
		sp->view.buckets = (long)held;
		sp->view.spending = (long)spending;
	}
}

struct status {
	struct health health;
	struct isn_config cfg;
	uint32_t flows, max_flows;
	struct status_synproxy sp;
};

static void print_health_json(struct json_writer *jw, const struct health *h)
{
	char summary[256];

	health_summary(h, summary, sizeof(summary));
	jw_string_field(jw, "health", health_verdict_name(h->verdict));
	jw_uint_field(jw, "exit_code", h->verdict);
	jw_string_field(jw, "summary", summary);
	jw_name(jw, "problems");
	jw_start_array(jw);
	for (int i = 0; i < h->problems; i++)
		jw_string(jw, h->problem[i]);
	jw_end_array(jw);
}

static void print_link_json(struct json_writer *jw, const struct link_health *l)
{
	jw_start_object(jw);
	jw_string_field(jw, "ifname", l->info.ifname);
	jw_uint_field(jw, "ifindex", l->key.ifindex);
	jw_uint_field(jw, "netns_inode", l->key.netns_ino);
	jw_string_field(jw, "netns", l->netns);
	jw_string_field(jw, "state", l->state);
	jw_string_field(jw, "ingress", link_ingress_name(l->info.ingress));
	jw_uint_field(jw, "ingress_prog_id", l->checked ? l->live.ingress_prog_id
						      : l->info.ingress_prog_id);
	jw_uint_field(jw, "egress_prog_id", l->checked ? l->live.egress_prog_id
						     : l->info.egress_prog_id);
	jw_string_field(jw, "syn_hook", l->syn_hook);
	if (l->checked) {
		jw_uint_field(jw, "synproxy_prog_id", l->live.cookie_prog_id);
		jw_bool_field(jw, "syn_cookies_served", l->cookies_served);
		jw_bool_field(jw, "syns_watched", l->syns_watched);
	}
	if (l->peer_xdp >= 0) {
		jw_string_field(jw, "veth_peer", l->peer);
		jw_bool_field(jw, "veth_peer_xdp", l->peer_xdp);
	}
	jw_uint_field(jw, "attached_at", l->info.attached_at);
	jw_end_object(jw);
}

static void print_status_json(const struct status *st)
{
	const struct health *h = &st->health;
	const struct isn_config *cfg = &st->cfg;
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	print_health_json(&jw, h);
	jw_string_field(&jw, "pin_dir", pin_dir());
	jw_bool_field(&jw, "state_present", h->state);
	if (h->state) {
		jw_string_field(&jw, "hash", isn_hash_name(cfg->hash));
		jw_name(&jw, "timeouts_s");
		jw_start_object(&jw);
		jw_uint_field(&jw, "opening", cfg->timeout_opening);
		jw_uint_field(&jw, "established", cfg->timeout_established);
		jw_uint_field(&jw, "closing", cfg->timeout_closing);
		jw_uint_field(&jw, "closed", cfg->timeout_closed);
		jw_end_object(&jw);
		jw_uint_field(&jw, "sweep_interval_ms", cfg->sweep_interval_ms);
		jw_uint_field(&jw, "flows", st->flows);
		jw_uint_field(&jw, "max_flows", cfg->max_flows ? cfg->max_flows : st->max_flows);
		jw_uint_field(&jw, "key_generation", cfg->key_gen);
	}
	if (st->sp.present) {
		jw_name(&jw, "synproxy");
		synproxy_print(&st->sp.cfg, st->sp.ports, st->sp.policy, &jw);
		jw_bool_field(&jw, "resend_tick", h->tick_ok);
	}
	jw_name(&jw, "interfaces");
	jw_start_array(&jw);
	for (int i = 0; i < h->links; i++)
		print_link_json(&jw, &h->link[i]);
	jw_end_array(&jw);
	jw_end_object(&jw);
	jw_finish(&jw);
}

/* Where the link's SYN cookies are answered, as the iface line ends. */
static const char *cookie_words(const struct health *h, const struct link_health *l)
{
	if (!l->checked)
		return "";
	/* Every port only watched: nothing is answered, so no peer needs to take a SYN-ACK. */
	if (h->synproxy_watches && !h->synproxy_answers)
		return !l->syns_watched ? ", SYNs (monitor mode) watched by nobody here"
		       : l->info.flags & LINK_F_SYN_TC ? ", SYNs watched (monitor mode): tc"
						       : ", SYNs watched (monitor mode): xdp";
	if (l->info.flags & LINK_F_SYN_TC)
		return ", SYN cookies: tc";
	if (!l->live.cookie_prog_id)
		return ", SYN cookies not served here";
	if (l->live.xdp_native && l->peer_xdp == 0)
		return ", SYN cookies: xdp, whose SYN-ACKs the veth peer without XDP drops";
	return l->info.ingress == LINK_INGRESS_TC ? ", SYN cookies: xdp + tc"
						  : ", SYN cookies: xdp + tc ACKs";
}

static void print_link_text(const struct health *h, const struct link_health *l)
{
	char when[32], where[80] = "";
	time_t t = (time_t)l->info.attached_at;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	if (l->netns[0])
		snprintf(where, sizeof(where), " (netns %s)", l->netns);
	else if (!l->checked)
		snprintf(where, sizeof(where), " (netns inode %llu, not under /run/netns: unchecked)",
			 (unsigned long long)l->key.netns_ino);
	printf("iface     %-15s %-15s ingress %-10s since %s%s%s\n", l->info.ifname, l->state,
	       link_ingress_name(l->info.ingress), when, cookie_words(h, l), where);
}

static void print_status_text(const struct status *st)
{
	const struct health *h = &st->health;
	const struct isn_config *cfg = &st->cfg;
	char summary[256];

	health_summary(h, summary, sizeof(summary));
	printf("%s\n", summary);
	for (int i = 0; i < h->problems; i++)
		printf("  problem: %s\n", h->problem[i]);
	if (!h->state)
		return;
	printf("state     %s\n", pin_dir());
	printf("hash      %s (new flows)\n", isn_hash_name(cfg->hash));
	printf("key       generation %u (never shown: isnguard opens it write-only)\n", cfg->key_gen);
	printf("flows     %u of %u (new connections past that go unprotected; none is evicted)\n",
	       st->flows, cfg->max_flows ? cfg->max_flows : st->max_flows);
	printf("timeouts  opening %us, established %us, closing %us, closed %us (each flow "
	       "looked at every %u ms)\n", cfg->timeout_opening, cfg->timeout_established,
	       cfg->timeout_closing, cfg->timeout_closed, cfg->sweep_interval_ms);
	if (st->sp.present)
		synproxy_print(&st->sp.cfg, st->sp.ports, st->sp.policy, NULL);
	for (int i = 0; i < h->links; i++)
		print_link_text(h, &h->link[i]);
}

int do_status(int argc, char **argv)
{
	static bool json;
	const struct cli_option options[] = CLI_JSON_HELP_TABLE(&json, "print one JSON object");
	struct cli_parser p = {
		.cmd = "status",
		.args = "",
		.summary = "A health check, then where the datapath is attached, the mode of new\n"
			   "flows, the timeouts and how full the flow table is. The first line (and\n"
			   "JSON's \"health\") says whether everything the configuration asks for is\n"
			   "served, with a 'problem:' line for each thing that is not.\n"
			   "\n"
			   "Exit status:\n"
			   "  0  ok: attached, everything configured is served\n"
			   "  1  the state cannot be read (not root, a map of another build)\n"
			   "  3  not attached: no interface (the state kept, or none)\n"
			   "  4  degraded: an interface gone, cookies nobody answers, no tick",
		.options = options,
	};
	static struct status st;

	json = false;
	int err = cli_parse(&p, argc, argv);

	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	if (require_root("status"))
		return EXIT_RUNTIME;
	memset(&st, 0, sizeof(st));
	health_read(&st.health);
	if (st.health.state) {
		if (read_config(&st.cfg) || flow_table_info(&st.flows, &st.max_flows))
			return EXIT_RUNTIME;
		read_synproxy(&st.sp);
	}
	if (json)
		print_status_json(&st);
	else
		print_status_text(&st);
	return (int)st.health.verdict;
}
