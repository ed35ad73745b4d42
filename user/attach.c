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
#include "keyfile.h"
#include "attach.h"
#include "state.h"


/* One positional interface argument after the options. */
static int take_ifname(struct cli_parser *p, int argc, char **argv, const char **ifname)
{
	if (optind >= argc)
		return cli_usage_error(p, "missing interface name");
	if (optind + 1 < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind + 1]);
	if (strlen(argv[optind]) >= IFNAMSIZ)
		return cli_usage_error(p, "interface name '%s' too long (at most %d characters)",
				       argv[optind], IFNAMSIZ - 1);
	*ifname = argv[optind];
	return 0;
}

const char *const attach_xdp_modes[] = { "native", "skb", NULL };
const char *const attach_ingress_hooks[] = { "xdp", "tc", NULL };
/* Long options only (no short letter): values past any char. */
enum {
	OPT_SYN_HOOK = 256,
	OPT_KEY_FILE,
	OPT_TIMEOUT_OPENING,
	OPT_TIMEOUT_ESTABLISHED,
	OPT_TIMEOUT_CLOSING,
	OPT_TIMEOUT_CLOSED,
	OPT_REPLACE,
	OPT_SYNPROXY_MONITOR,
	OPT_DENY,
	OPT_ALLOW,
};

static struct attach_params prm;

#define TIMEOUT_ROW(n, opt, i, what)                                                            \
	CLI_OPT_U32(n, opt, "S", &prm.timeouts.seconds[i], 1, ISN_MAX_TIMEOUT_S,                 \
		    "idle timeout of " what " flows, seconds (live; kept state keeps its own "      \
		    "unless given)", .given = &prm.timeouts.given[i])

/* The option table of attach, which the config file's keys go through too (user/config.c). */
static const struct cli_option attach_options[] = {
	CLI_OPT_CHOICE("hash", 'H', "MODE", &prm.hash, "hash", isn_hash_choices,
		       "siphash (default), md5 or none; kept state keeps its mode unless given"),
	CLI_OPT_STRING("key-file", OPT_KEY_FILE, "FILE", &prm.key_file,
		       "make the key in FILE (32 hex digits, not readable by group or others) "
		       "current, as 'key set' would; else a fresh key from getrandom(2), or the "
		       "kept one"),
	CLI_OPT_CHOICE("xdp-mode", 'm', "MODE", &prm.xdp_mode, "XDP mode", attach_xdp_modes,
		       "native (default) or skb"),
	CLI_OPT_CHOICE("ingress", 'i', "HOOK", &prm.ingress, "ingress hook", attach_ingress_hooks,
		       "xdp (default) or tc: tc keeps partial checksums right when the host forwards"),
	CLI_OPT_CHOICE("syn-hook", OPT_SYN_HOOK, "HOOK", &prm.syn_hook, "--syn-hook",
		       attach_ingress_hooks, "where SYN cookies are answered: xdp (XDP_TX) or tc "
		       "(goes with --ingress tc; no XDP program at all). Default xdp, except on a "
		       "veth whose peer has no XDP program, where XDP_TX reaches nobody: there "
		       "--synproxy picks --ingress tc --syn-hook tc and says so"),
	CLI_OPT_U32("max-flows", 'n', "N", &prm.max_flows, 1, ATTACH_MAX_FLOWS_LIMIT,
		    "flow table size for new state (default 262144); past 60% of it the closed timeout adapts"),
	TIMEOUT_ROW("timeout-opening", OPT_TIMEOUT_OPENING, ISN_TIMEOUT_OPENING, "opening"),
	TIMEOUT_ROW("timeout-established", OPT_TIMEOUT_ESTABLISHED, ISN_TIMEOUT_ESTABLISHED,
		    "established"),
	TIMEOUT_ROW("timeout-closing", OPT_TIMEOUT_CLOSING, ISN_TIMEOUT_CLOSING, "closing"),
	TIMEOUT_ROW("timeout-closed", OPT_TIMEOUT_CLOSED, ISN_TIMEOUT_CLOSED, "closed"),
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
		    "which answers them with a RST as Linux does, beyond the first 4 on each "
		    "closed connection's tuple, which always go; the rest are dropped "
		    "(default 10000; 0 drops all)", .given = &prm.invalid_ack_rate_given),
	CLI_OPT_CHOICE("synproxy-path", 'P', "PATH", &prm.synproxy_path, "--synproxy-path",
		       synproxy_paths, "auto (default): the host's listener where the kernel can "
		       "(6.9), else translate; local; or translate: isnguard opens the "
		       "connection to the server (servers behind a gateway) and translates it"),
	CLI_OPT_CUSTOM("synproxy-monitor", required_argument, OPT_SYNPROXY_MONITOR,
		       "PORTS|all|off", &prm.policy, policy_monitor_option,
		       "monitor mode for these of --synproxy's ports (or all): their SYNs are "
		       "decided and counted (syn_monitor_would_*), and all pass to the host, "
		       "none answered; off (default) answers them"),
	POLICY_ROWS(prm.policy),
	CLI_OPT_CUSTOM("deny", required_argument, OPT_DENY, "PREFIX", &prm.policy,
		       policy_deny_option, "drop SYNs to the SYN proxy's ports from PREFIX "
		       "(198.51.100.0/24, 2001:db8::/32) before any work; repeatable, the list "
		       "becomes the given ones ('isnguard prefix' changes it live)"),
	CLI_OPT_CUSTOM("allow", required_argument, OPT_ALLOW, "PREFIX", &prm.policy,
		       policy_allow_option, "pass SYNs from PREFIX to the host as without the "
		       "SYN proxy, never answered nor limited; repeatable, as --deny"),
	CLI_OPT_FLAG("replace", OPT_REPLACE, &prm.replace,
		     "IFACE is attached: put this build's programs in the place of those "
		     "running, each in one kernel call, on the same maps (an upgrade without a "
		     "gap or a link flap); the hooks stay as attached"),
	CLI_JSON_ROW(&prm.json, "print what was done as one JSON object"),
	CLI_HELP_ROW,
	{ 0 },
};

void attach_parser(struct cli_parser *p)
{
	*p = (struct cli_parser){
		.cmd = "attach",
		.args = "IFACE",
		.summary = "Load the datapath and attach it to IFACE: XDP on ingress (through the\n"
			   "libxdp dispatcher) and tc on egress. The first attach creates the state\n"
			   "(flow table, config, a fresh key from getrandom(2)) under the pin\n"
			   "directory; later attaches, on other interfaces or after\n"
			   "'detach --keep-state', reuse it, so live connections keep working.\n"
			   "With --synproxy, or when the kept state has the SYN proxy on, it also\n"
			   "makes the device " ISN_TICK_DEV " (a bridge with no ports that queries\n"
			   "once a second), whose ticks resend the translating SYN proxy's SYNs to\n"
			   "silent servers; the namespace's last detach removes it.",
		.options = attach_options,
	};
}

void attach_params_reset(void)
{
	prm = (struct attach_params){ .hash = -1, .xdp_mode = -1, .ingress = -1, .syn_hook = -1,
				      .synproxy_mode = -1, .synproxy_path = -1,
				      .policy = { .monitor = -1 } };
}

struct attach_params *attach_params_current(void)
{
	return &prm;
}

int attach_request_from(struct cli_parser *p, struct attach_params *in,
			struct attach_request *req)
{
	struct synproxy_request *sp = &in->synproxy;

	if ((in->synproxy_mode >= 0 || in->syn_threshold || in->synproxy_path >= 0 ||
	     in->invalid_ack_rate_given) && !sp->enabled)
		return cli_usage_error(p, "--synproxy-mode, --synproxy-path, --syn-threshold and "
					  "--invalid-ack-rate go with --synproxy PORTS");
	if (in->policy.monitor >= 0 && !sp->enabled)
		return cli_usage_error(p, "--synproxy-monitor goes with --synproxy PORTS");
	if (policy_monitor_check(&in->policy, sp->ports))
		return cli_usage_error(p, "--synproxy-monitor: %s",
				       policy_monitor_check(&in->policy, sp->ports));
	if (in->syn_hook == 1 && in->ingress != 1)
		return cli_usage_error(p, "--syn-hook tc goes with --ingress tc");
	/* Beside tc ingress, XDP runs only to answer SYNs, and only with --syn-hook xdp. */
	if (in->xdp_mode >= 0 && in->ingress == 1 && (in->syn_hook == 1 || !sp->enabled))
		return cli_usage_error(p, "--xdp-mode: no XDP program with --ingress tc, unless "
					  "--synproxy PORTS answers SYNs in XDP (--syn-hook xdp)");
	sp->invalid_ack_rate = in->invalid_ack_rate_given ? in->invalid_ack_rate
							  : SYNPROXY_DEFAULT_INVALID_ACK_RATE;
	sp->path = in->synproxy_path >= 0 ? (uint32_t)in->synproxy_path : SYNPROXY_PATH_AUTO;
	sp->mode = in->synproxy_mode >= 0 ? synproxy_mode_from_name(synproxy_modes[in->synproxy_mode])
					  : SYNPROXY_ALWAYS;
	sp->syn_threshold = in->syn_threshold ? in->syn_threshold : SYNPROXY_DEFAULT_THRESHOLD;
	req->hash = in->hash;
	req->xdp_skb = in->xdp_mode == 1;
	req->ingress = in->ingress == 1 ? LINK_INGRESS_TC
		       : req->xdp_skb ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;
	req->ingress_given = in->ingress >= 0 || in->xdp_mode >= 0;
	req->syn_tc = in->syn_hook == 1;
	req->syn_hook_given = in->syn_hook >= 0;
	req->max_flows = in->max_flows;
	req->json = in->json;
	req->synproxy = sp->enabled ? sp : NULL;
	req->policy = &in->policy;
	req->timeouts = in->timeouts;
	req->replace = in->replace;
	return 0;
}

int do_attach(int argc, char **argv)
{
	struct attach_request req = { .ingress = LINK_INGRESS_XDP_NATIVE };
	struct cli_parser p;
	bool key_changed;
	int err;

	attach_parser(&p);
	attach_params_reset();
	err = cli_parse(&p, argc, argv);
	if (!err)
		err = take_ifname(&p, argc, argv, &req.ifname);
	if (!err)
		err = attach_request_from(&p, &prm, &req);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
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
	if (req.synproxy && synproxy_check_host("attach", req.synproxy->path))
		return EXIT_RUNTIME;
	/* A key file that cannot be used stops the attach before anything is made. */
	if (prm.key_file) {
		struct isn_key key;

		err = key_file_read("attach", prm.key_file, true, &key);
		explicit_bzero(&key, sizeof(key));
		if (err)
			return err;
	}
	if (loader_attach(&req))
		return EXIT_RUNTIME;
	if (prm.key_file && key_apply_file("attach", prm.key_file, false, &key_changed)) {
		/* Nothing half-done: the datapath goes with the key it could not take. */
		loader_detach(req.ifname, true, DETACH_QUIET);
		return EXIT_RUNTIME;
	}
	return 0;
}

/* detach --all: every interface of this namespace, in the order of their records. */
static int detach_all(bool keep_state, bool json)
{
	static char names[ISN_MAX_LINKS][IFNAMSIZ];
	int n = links_here_names(names, ISN_MAX_LINKS), failed = 0;
	struct json_writer jw;

	if (n < 0)
		n = 0;
	for (int i = 0; i < n; i++)
		failed += loader_detach(names[i], keep_state, json ? DETACH_QUIET : DETACH_TEXT) != 0;
	if (json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_name(&jw, "detached");
		jw_start_array(&jw);
		for (int i = 0; i < n; i++)
			jw_string(&jw, names[i]);
		jw_end_array(&jw);
		jw_uint_field(&jw, "failed", (unsigned)failed);
		jw_string_field(&jw, "state", keep_state ? "kept" : "removed");
		jw_end_object(&jw);
		jw_finish(&jw);
	} else if (!n) {
		printf("nothing attached in this network namespace\n");
	}
	return failed ? EXIT_RUNTIME : 0;
}

int do_detach(int argc, char **argv)
{
	static bool keep_state, json, all;
	const struct cli_option options[] = {
		CLI_OPT_FLAG("keep-state", 'k', &keep_state,
			     "keep the pinned flow table, key and mode (for an upgrade or restart)"),
		CLI_OPT_FLAG("all", 'a', &all, "every interface of this network namespace (what "
			     "isnguard.service's stop runs, with --keep-state)"),
		CLI_JSON_ROW(&json, "print what was done as one JSON object"),
		CLI_HELP_ROW,
		{ 0 },
	};
	struct cli_parser p = {
		.cmd = "detach",
		.args = "IFACE | --all",
		.summary = "Detach the datapath from IFACE (or, with --all, from every interface of\n"
			   "this network namespace). When no interface is left, the pinned state is\n"
			   "removed too, unless --keep-state ('isnguard purge' removes it later).\n"
			   "An interface that is gone has its record forgotten.",
		.options = options,
	};
	const char *ifname;
	int err;

	keep_state = json = all = false;
	err = cli_parse(&p, argc, argv);
	if (!err && all && optind < argc)
		return cli_usage_error(&p, "--all takes no interface ('%s')", argv[optind]);
	if (!err && !all)
		err = take_ifname(&p, argc, argv, &ifname);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (require_root("detach"))
		return EXIT_RUNTIME;
	if (all)
		return detach_all(keep_state, json);
	return loader_detach(ifname, keep_state, json ? DETACH_JSON : DETACH_TEXT) ? EXIT_RUNTIME : 0;
}
