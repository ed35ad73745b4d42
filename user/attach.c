// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard attach / detach / status. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "loader.h"
#include "maps.h"
#include "netdev.h"
#include "parse.h"
#include "pinned.h"
#include "ref/isn_ref.h"
#include "synproxy.h"

#define MAX_FLOWS_LIMIT (1U << 26)

/* One positional interface argument after the options. */
static int take_ifname(struct cli_parser *p, int argc, char **argv, const char **ifname)
{
	if (optind >= argc)
		return cli_usage_error(p, "missing interface name");
	if (optind + 1 < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind + 1]);
	*ifname = argv[optind];
	return 0;
}

static const char *const xdp_modes[] = { "native", "skb", NULL };
static const char *const ingress_hooks[] = { "xdp", "tc", NULL };
/* Long option only (no short letter): a value past any char. */
#define OPT_SYN_HOOK 256

struct attach_params {
	/* choice indexes, -1: not given */
	int hash, xdp_mode, ingress, syn_hook, synproxy_mode, synproxy_path;
	uint32_t max_flows, syn_threshold, invalid_ack_rate;
	bool json, invalid_ack_rate_given;
	struct synproxy_request synproxy;
};

int do_attach(int argc, char **argv)
{
	static struct attach_params prm;
	const struct cli_option options[] = {
		CLI_OPT_CHOICE("hash", 'H', "MODE", &prm.hash, "hash", isn_hash_choices,
			       "siphash (default), md5 or none; kept state keeps its mode unless given"),
		CLI_OPT_CHOICE("xdp-mode", 'm', "MODE", &prm.xdp_mode, "XDP mode", xdp_modes,
			       "native (default) or skb"),
		CLI_OPT_CHOICE("ingress", 'i', "HOOK", &prm.ingress, "ingress hook", ingress_hooks,
			       "xdp (default) or tc: tc keeps partial checksums right when the host forwards"),
		CLI_OPT_CHOICE("syn-hook", OPT_SYN_HOOK, "HOOK", &prm.syn_hook, "--syn-hook",
			       ingress_hooks, "with --ingress tc, where SYN cookies are answered: xdp "
			       "(default, a second program on the device) or tc (no XDP program at all; "
			       "on a veth every packet pays for one)"),
		CLI_OPT_U32("max-flows", 'n', "N", &prm.max_flows, 1, MAX_FLOWS_LIMIT,
			    "flow table size for new state (default 262144); past 60% of it the closed timeout adapts"),
		CLI_OPT_CUSTOM("synproxy", required_argument, 's', "PORTS", &prm.synproxy,
			       synproxy_ports_option,
			       "answer SYNs to PORTS (22,80,8000-8099 or all) with SYN cookies"),
		CLI_OPT_CHOICE("synproxy-mode", 'M', "MODE", &prm.synproxy_mode, "--synproxy-mode",
			       synproxy_modes, "always (default) or auto: cookies only above --syn-threshold"),
		CLI_OPT_U32("syn-threshold", 't', "N", &prm.syn_threshold, 1, SYNPROXY_MAX_THRESHOLD,
			    "auto: SYNs per second to one port that switch cookies on (default 1000)"),
		CLI_OPT_U32("invalid-ack-rate", 'r', "N", &prm.invalid_ack_rate, 0,
			    SYNPROXY_MAX_INVALID_ACK_RATE,
			    "ACKs per second failing the cookie check handed to the host's stack, "
			    "which answers them with a RST as Linux does; the rest are dropped "
			    "(default 10000; 0 drops all)", .given = &prm.invalid_ack_rate_given),
		CLI_OPT_CHOICE("synproxy-path", 'P', "PATH", &prm.synproxy_path, "--synproxy-path",
			       synproxy_paths, "auto (default): the host's listener where the kernel can "
			       "(6.9), else translate; local; or translate: isnguard opens the "
			       "connection to the server (servers behind a gateway) and translates it"),
		CLI_JSON_ROW(&prm.json, "print what was done as one JSON object"),
		CLI_HELP_ROW,
		{ 0 },
	};
	struct cli_parser p = {
		.cmd = "attach",
		.args = "IFACE",
		.summary = "Load the datapath and attach it to IFACE: XDP on ingress (through the\n"
			   "libxdp dispatcher) and tc on egress. The first attach creates the state\n"
			   "(flow table, config, a fresh key from getrandom(2)) under the pin\n"
			   "directory; later attaches, on other interfaces or after\n"
			   "'detach --keep-state', reuse it, so live connections keep working.\n"
			   "With --synproxy it also makes the device " ISN_TICK_DEV " (a bridge with\n"
			   "no ports that queries once a second), whose ticks resend the translating\n"
			   "SYN proxy's SYNs to silent servers; the namespace's last detach removes it.",
		.options = options,
	};
	struct attach_request req = { .ingress = LINK_INGRESS_XDP_NATIVE };
	struct synproxy_request *sp = &prm.synproxy;
	int err;

	prm = (struct attach_params){ .hash = -1, .xdp_mode = -1, .ingress = -1, .syn_hook = -1,
				      .synproxy_mode = -1, .synproxy_path = -1 };
	err = cli_parse(&p, argc, argv);
	if (!err)
		err = take_ifname(&p, argc, argv, &req.ifname);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if ((prm.synproxy_mode >= 0 || prm.syn_threshold || prm.synproxy_path >= 0 ||
	     prm.invalid_ack_rate_given) && !sp->enabled)
		return cli_usage_error(&p, "--synproxy-mode, --synproxy-path, --syn-threshold and "
					   "--invalid-ack-rate go with --synproxy PORTS");
	if (prm.syn_hook == 1 && prm.ingress != 1)
		return cli_usage_error(&p, "--syn-hook tc goes with --ingress tc");
	/* Beside tc ingress, XDP runs only to answer SYNs, and only with --syn-hook xdp. */
	if (prm.xdp_mode >= 0 && prm.ingress == 1 && (prm.syn_hook == 1 || !sp->enabled))
		return cli_usage_error(&p, "--xdp-mode: no XDP program with --ingress tc, unless "
					   "--synproxy PORTS answers SYNs in XDP (--syn-hook xdp)");
	sp->invalid_ack_rate = prm.invalid_ack_rate_given ? prm.invalid_ack_rate
							  : SYNPROXY_DEFAULT_INVALID_ACK_RATE;
	sp->path = prm.synproxy_path >= 0 ? (uint32_t)prm.synproxy_path : SYNPROXY_PATH_AUTO;
	sp->mode = prm.synproxy_mode >= 0 ? synproxy_mode_from_name(synproxy_modes[prm.synproxy_mode])
					  : SYNPROXY_ALWAYS;
	sp->syn_threshold = prm.syn_threshold ? prm.syn_threshold : SYNPROXY_DEFAULT_THRESHOLD;
	req.hash = prm.hash;
	req.xdp_skb = prm.xdp_mode == 1;
	req.ingress = prm.ingress == 1 ? LINK_INGRESS_TC
		      : req.xdp_skb ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;
	req.syn_tc = prm.syn_hook == 1;
	req.max_flows = prm.max_flows;
	req.json = prm.json;
	req.synproxy = sp->enabled ? sp : NULL;
	if (require_root("attach"))
		return EXIT_RUNTIME;
	/*
	 * XDP sees only the bytes of a forwarded skb, not that its checksum
	 * is partial (veth, GRO), and a rewrite then leaves it wrong: say so.
	 */
	if (req.ingress != LINK_INGRESS_TC && netns_forwards())
		fprintf(stderr, "attach %s: note: this network namespace forwards; if it receives "
				"skbs with partial checksums (veth, GRO), use --ingress tc (README: "
				"Servers behind a gateway)\n", req.ifname);
	/* Before anything changes: the kernel and its sysctl must take cookie connections. */
	if (sp->enabled && synproxy_check_host("attach", sp->path))
		return EXIT_RUNTIME;
	return loader_attach(&req) ? EXIT_RUNTIME : 0;
}

int do_detach(int argc, char **argv)
{
	static bool keep_state, json;
	const struct cli_option options[] = {
		CLI_OPT_FLAG("keep-state", 'k', &keep_state,
			     "keep the pinned flow table, key and mode (for an upgrade or restart)"),
		CLI_JSON_ROW(&json, "print what was done as one JSON object"),
		CLI_HELP_ROW,
		{ 0 },
	};
	struct cli_parser p = {
		.cmd = "detach",
		.args = "IFACE",
		.summary = "Detach the datapath from IFACE. When no interface is left, the pinned\n"
			   "state is removed too, unless --keep-state.",
		.options = options,
	};
	const char *ifname;
	int err;

	keep_state = json = false;
	err = cli_parse(&p, argc, argv);
	if (!err)
		err = take_ifname(&p, argc, argv, &ifname);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (require_root("detach"))
		return EXIT_RUNTIME;
	return loader_detach(ifname, keep_state, json) ? EXIT_RUNTIME : 0;
}

/* --- status ------------------------------------------------------------- */

struct status_link {
	struct link_key key;
	struct link_info info;
	bool here;		/* in this network namespace, so it can be checked live */
	struct attachment live;
};

static int read_links(struct status_link *links, int max)
{
	struct link_key cur, next;
	void *prev = NULL;
	int fd = pinned_map_open(ISN_MAP_LINKS), n = 0;
	uint64_t here = netns_inode();

	if (fd < 0)
		return fd;
	while (n < max && !bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if (bpf_map_lookup_elem(fd, &cur, &links[n].info))
			continue;
		links[n].key = cur;
		links[n].here = cur.netns_ino == here;
		if (links[n].here)
			loader_query((int)cur.ifindex, &links[n].live);
		n++;
	}
	close(fd);
	return n;
}

/* "attached", "partly attached", "detached", or "other netns" (cannot be checked from here). */
static const char *link_state(const struct status_link *l)
{
	if (!l->here)
		return "other-netns";
	if (l->live.ingress && l->live.egress)
		return "attached";
	if (l->live.ingress || l->live.egress)
		return "partly-attached";
	return "detached";
}

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
};

static void read_synproxy(struct status_synproxy *sp)
{
	int config_fd = pinned_map_open(ISN_MAP_SYNPROXY);
	int ports_fd = pinned_map_open(ISN_MAP_SYNPROXY_PORTS);

	sp->present = config_fd >= 0 && ports_fd >= 0 &&
		      !synproxy_read(config_fd, ports_fd, &sp->cfg, sp->ports);
	if (config_fd >= 0)
		close(config_fd);
	if (ports_fd >= 0)
		close(ports_fd);
}

static void print_status_json(const struct status_link *links, int n,
			      const struct isn_config *cfg, uint32_t entries, uint32_t max_entries,
			      const struct status_synproxy *sp)
{
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "pin_dir", pin_dir());
	jw_string_field(&jw, "hash", isn_hash_name(cfg->hash));
	jw_name(&jw, "timeouts_s");
	jw_start_object(&jw);
	jw_uint_field(&jw, "opening", cfg->timeout_opening);
	jw_uint_field(&jw, "established", cfg->timeout_established);
	jw_uint_field(&jw, "closing", cfg->timeout_closing);
	jw_uint_field(&jw, "closed", cfg->timeout_closed);
	jw_end_object(&jw);
	jw_uint_field(&jw, "sweep_interval_ms", cfg->sweep_interval_ms);
	jw_uint_field(&jw, "flows", entries);
	jw_uint_field(&jw, "max_flows", cfg->max_flows ? cfg->max_flows : max_entries);
	jw_uint_field(&jw, "key_generation", cfg->key_gen);
	if (sp->present) {
		jw_name(&jw, "synproxy");
		synproxy_print(&sp->cfg, sp->ports, &jw);
	}
	jw_name(&jw, "interfaces");
	jw_start_array(&jw);
	for (int i = 0; i < n; i++) {
		jw_start_object(&jw);
		jw_string_field(&jw, "ifname", links[i].info.ifname);
		jw_uint_field(&jw, "ifindex", links[i].key.ifindex);
		jw_uint_field(&jw, "netns_inode", links[i].key.netns_ino);
		jw_string_field(&jw, "state", link_state(&links[i]));
		jw_string_field(&jw, "ingress", link_ingress_name(links[i].info.ingress));
		jw_uint_field(&jw, "ingress_prog_id", links[i].here ? links[i].live.ingress_prog_id
								   : links[i].info.ingress_prog_id);
		jw_uint_field(&jw, "egress_prog_id", links[i].here ? links[i].live.egress_prog_id
								  : links[i].info.egress_prog_id);
		jw_string_field(&jw, "syn_hook",
				link_syn_hook(&links[i].info, !links[i].here ||
							       links[i].live.cookie_prog_id));
		if (links[i].here)
			jw_uint_field(&jw, "synproxy_prog_id", links[i].live.cookie_prog_id);
		jw_uint_field(&jw, "attached_at", links[i].info.attached_at);
		jw_end_object(&jw);
	}
	jw_end_array(&jw);
	jw_end_object(&jw);
	jw_finish(&jw);
}

static void print_status_text(const struct status_link *links, int n,
			      const struct isn_config *cfg, uint32_t entries, uint32_t max_entries,
			      const struct status_synproxy *sp)
{
	printf("state     %s\n", pin_dir());
	printf("hash      %s (new flows)\n", isn_hash_name(cfg->hash));
	printf("key       set (never shown: isnguard opens it write-only)\n");
	printf("flows     %u of %u (new connections past that go unprotected; none is evicted)\n",
	       entries, cfg->max_flows ? cfg->max_flows : max_entries);
	printf("timeouts  opening %us, established %us, closing %us, closed %us (each flow "
	       "looked at every %u ms)\n", cfg->timeout_opening, cfg->timeout_established,
	       cfg->timeout_closing, cfg->timeout_closed, cfg->sweep_interval_ms);
	if (sp->present)
		synproxy_print(&sp->cfg, sp->ports, NULL);
	for (int i = 0; i < n; i++) {
		char when[32];
		time_t t = (time_t)links[i].info.attached_at;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("iface     %-15s %-15s ingress %-10s since %s%s\n", links[i].info.ifname,
		       link_state(&links[i]), link_ingress_name(links[i].info.ingress), when,
		       !links[i].here ? ""
		       : links[i].info.flags & LINK_F_SYN_TC ? ", SYN cookies: tc"
		       : !links[i].live.cookie_prog_id ? ", SYN cookies not served here"
		       : links[i].info.ingress == LINK_INGRESS_TC ? ", SYN cookies: xdp + tc"
								 : ", SYN cookies: xdp + tc ACKs");
	}
}

int do_status(int argc, char **argv)
{
	static bool json;
	const struct cli_option options[] = {
		CLI_JSON_ROW(&json, "print one JSON object"),
		CLI_HELP_ROW,
		{ 0 },
	};
	struct cli_parser p = {
		.cmd = "status",
		.args = "",
		.summary = "Show where the datapath is attached, the mode of new flows, the\n"
			   "timeouts and how full the flow table is.",
		.options = options,
	};
	static struct status_synproxy sp;
	struct status_link links[ISN_MAX_LINKS];
	uint32_t entries = 0, max_entries = 0;
	struct isn_config cfg;
	int n, err;

	json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	if (require_root("status"))
		return EXIT_RUNTIME;
	if (read_config(&cfg) || flow_table_info(&entries, &max_entries))
		return EXIT_RUNTIME;
	n = read_links(links, ISN_MAX_LINKS);
	if (n < 0)
		n = 0;
	read_synproxy(&sp);
	if (json)
		print_status_json(links, n, &cfg, entries, max_entries, &sp);
	else
		print_status_text(links, n, &cfg, entries, max_entries, &sp);
	return 0;
}
