// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard synproxy, and the SYN-proxy part of attach: which ports get SYN
 * cookies, in which mode, and what the host's stack would negotiate (its
 * sysctls), written to the pinned maps isn_synproxy and isn_synproxy_ports.
 * The local path needs bpf_sk_assign_tcp_reqsk (Linux 6.9) and a kernel
 * that accepts cookies at all (net.ipv4.tcp_syncookies 1 or 2); the
 * translate path needs neither (--synproxy-path). Both are checked before
 * anything changes, and no sysctl is ever changed here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "maps.h"
#include "netdev.h"
#include "parse.h"
#include "pinned.h"
#include "policy.h"
#include "synproxy.h"
#include "health.h"
#include "loader.h"
#include "state.h"

#define SYNPROXY_KFUNC "bpf_sk_assign_tcp_reqsk"

static const char *const mode_names[] = {
	[SYNPROXY_OFF] = "off",
	[SYNPROXY_ALWAYS] = "always",
	[SYNPROXY_AUTO] = "auto",
};

const char *synproxy_mode_name(uint32_t mode)
{
	return mode < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[mode] : "unknown";
}

const char *const synproxy_modes[] = { "always", "auto", NULL };

const char *const synproxy_paths[] = { "auto", "local", "translate", NULL };

const char *synproxy_path_name(uint32_t path)
{
	return path <= SYNPROXY_PATH_TRANSLATE ? synproxy_paths[path] : "unknown";
}

int synproxy_ports_option(struct cli_parser *p, const struct cli_option *o,
			  int argc __attribute__((unused)), char **argv __attribute__((unused)),
			  const char *arg)
{
	struct synproxy_request *sp = o->dest;
	const char *why;

	if (synproxy_parse_ports(arg, sp->ports, &why))
		return cli_usage_error(p, "bad --synproxy '%s': %s", arg, why);
	sp->enabled = true;
	return 0;
}

int synproxy_mode_from_name(const char *name)
{
	if (!strcmp(name, "always"))
		return SYNPROXY_ALWAYS;
	if (!strcmp(name, "auto"))
		return SYNPROXY_AUTO;
	return -1;
}

/* --- what the host allows ------------------------------------------------ */

/* Looked up once a process: the kernel's BTF is megabytes to parse, and it does not change. */
bool synproxy_kernel_supported(void)
{
	static int found = -1;
	struct btf *vmlinux;

	if (found >= 0)
		return found;
	vmlinux = btf__load_vmlinux_btf();
	found = vmlinux && btf__find_by_name_kind(vmlinux, SYNPROXY_KFUNC, BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return found;
}

int synproxy_check_host(const char *what, uint32_t path)
{
	bool kfunc = synproxy_kernel_supported();
	unsigned long cookies;

	if (path == SYNPROXY_PATH_TRANSLATE || (path == SYNPROXY_PATH_AUTO && !kfunc))
		return 0;	/* isnguard opens the connections itself: nothing of the host's */
	if (!kfunc) {
		cli_error("%s: this kernel lacks %s (Linux 6.9 or later with BTF), which the local "
			  "path needs; use --synproxy-path translate or auto", what, SYNPROXY_KFUNC);
		return -EOPNOTSUPP;
	}
	if (read_sysctl("ipv4/tcp_syncookies", &cookies, 1) != 1) {
		cli_error("%s: cannot read net.ipv4.tcp_syncookies in this network namespace", what);
		return -EIO;
	}
	if (cookies != 1 && cookies != 2) {
		cli_error("%s: net.ipv4.tcp_syncookies is %lu in this network namespace; the kernel "
			  "takes cookie connections only with 1 or 2 (run 'sysctl -w "
			  "net.ipv4.tcp_syncookies=1', or use --synproxy-path translate)", what, cookies);
		return -EPERM;
	}
	return 0;
}

/*
 * The window scale the host's sockets will use, by the kernel's rule for a
 * new connection (tcp_select_initial_window): the largest of tcp_rmem[2]
 * and rmem_max, as a shift over 64 KiB, at most 14.
 */
static uint32_t host_rcv_wscale(void)
{
	unsigned long rmem[3] = { 0, 0, 6291456 };
	unsigned long space, rmem_max = sysctl_or("core/rmem_max", 212992);
	uint32_t shift = 0;

	read_sysctl("ipv4/tcp_rmem", rmem, 3);
	space = rmem[2] > rmem_max ? rmem[2] : rmem_max;
	while (shift < COOKIE_TCP_WSCALE_MAX && (space >> (shift + 16)) > 0)
		shift++;
	return shift;
}

void synproxy_host_params(struct synproxy_config *cfg)
{
	unsigned long rmem[3] = { 4096, 131072, 6291456 };
	unsigned long window;

	cfg->flags = 0;
	if (sysctl_or("ipv4/tcp_sack", 1))
		cfg->flags |= SYNPROXY_F_SACK;
	if (sysctl_or("ipv4/tcp_timestamps", 1))
		cfg->flags |= SYNPROXY_F_TIMESTAMPS;
	if (sysctl_or("ipv4/tcp_window_scaling", 1))
		cfg->flags |= SYNPROXY_F_WSCALE;
	if (sysctl_or("ipv4/tcp_ecn", 2))
		cfg->flags |= SYNPROXY_F_ECN;
	if (synproxy_kernel_supported())
		cfg->flags |= SYNPROXY_F_LOCAL_PATH;
	cfg->rcv_wscale = host_rcv_wscale();
	/* Half the default receive buffer, as the stack's first window; never 0. */
	read_sysctl("ipv4/tcp_rmem", rmem, 3);
	window = rmem[1] / 2;
	cfg->window = (uint32_t)(window > 65535 ? 65535 : window < 1024 ? 1024 : window);
}

/* --- the pinned maps ------------------------------------------------------ */

const struct map_layout isn_synproxy_layout = {
	ISN_MAP_SYNPROXY, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct synproxy_config), 1,
};
const struct map_layout isn_synproxy_ports_layout = {
	ISN_MAP_SYNPROXY_PORTS, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(__u64),
	SYNPROXY_PORT_WORDS,
};

int synproxy_read(int config_fd, int ports_fd, struct synproxy_config *cfg, uint64_t *ports)
{
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(config_fd, &zero, cfg))
		return -errno;
	for (uint32_t i = 0; i < SYNPROXY_PORT_WORDS; i++)
		if (bpf_map_lookup_elem(ports_fd, &i, &ports[i]))
			return -errno;
	return 0;
}

/*
 * Ports first when switching on, so no SYN meets a half-written set; the
 * mode first when switching off.
 */
int synproxy_read_pinned(struct synproxy_config *cfg, uint64_t *ports)
{
	int config_fd = pinned_map_open(ISN_MAP_SYNPROXY);
	int ports_fd = pinned_map_open(ISN_MAP_SYNPROXY_PORTS);
	int err = config_fd < 0 ? config_fd : ports_fd < 0 ? ports_fd
		  : synproxy_read(config_fd, ports_fd, cfg, ports);

	if (config_fd >= 0)
		close(config_fd);
	if (ports_fd >= 0)
		close(ports_fd);
	return err;
}

int synproxy_write(int config_fd, int ports_fd, const struct synproxy_config *cfg_in,
		   const uint64_t *ports)
{
	struct synproxy_config cfg = *cfg_in, cur = { 0 };
	uint32_t zero = 0;
	int err = 0;

	/* Once on, always SYNPROXY_F_WAS_ON: its connections may outlive it. */
	if (bpf_map_lookup_elem(config_fd, &zero, &cur))
		memset(&cur, 0, sizeof(cur));
	cfg.flags = synproxy_flags_over(&cfg, &cur);
	if (cfg.mode == SYNPROXY_OFF &&
	    bpf_map_update_elem(config_fd, &zero, &cfg, BPF_ANY))
		return -errno;
	for (uint32_t i = 0; i < SYNPROXY_PORT_WORDS && !err; i++)
		if (bpf_map_update_elem(ports_fd, &i, &ports[i], BPF_ANY))
			err = -errno;
	if (!err && cfg.mode != SYNPROXY_OFF &&
	    bpf_map_update_elem(config_fd, &zero, &cfg, BPF_ANY))
		err = -errno;
	return err;
}

/* Where valid cookie ACKs go with this path, on the kernel the settings were written for. */
static const char *synproxy_path_says(const struct synproxy_config *cfg)
{
	if (cfg->path == SYNPROXY_PATH_TRANSLATE)
		return "isnguard opens every connection itself and translates it";
	if (cfg->path == SYNPROXY_PATH_LOCAL)
		return "local listeners only, through bpf_sk_assign_tcp_reqsk";
	if (!(cfg->flags & SYNPROXY_F_LOCAL_PATH))
		return "translated (this kernel lacks " SYNPROXY_KFUNC ")";
	return "local listeners through " SYNPROXY_KFUNC ", forwarded servers translated";
}

void synproxy_print(const struct synproxy_config *cfg, const uint64_t *ports,
		    const struct policy_view *view, struct json_writer *jw)
{
	static const struct { uint32_t flag; const char *name; } offers[] = {
		{ SYNPROXY_F_SACK, "sack" }, { SYNPROXY_F_TIMESTAMPS, "timestamps" },
		{ SYNPROXY_F_WSCALE, "wscale" }, { SYNPROXY_F_ECN, "ecn" },
	};
	char list[512];
	size_t count = synproxy_format_ports(ports, list, sizeof(list));

	if (cfg->mode == SYNPROXY_OFF)
		count = 0, list[0] = '\0';
	if (jw) {
		jw_start_object(jw);
		jw_string_field(jw, "mode", synproxy_mode_name(cfg->mode));
		jw_string_field(jw, "ports", list);
		jw_uint_field(jw, "port_count", count);
		jw_uint_field(jw, "syn_threshold", cfg->syn_threshold);
		jw_uint_field(jw, "invalid_ack_rate", cfg->invalid_ack_rate);
		jw_string_field(jw, "path", synproxy_path_name(cfg->path));
		jw_bool_field(jw, "local_path_available", synproxy_kernel_supported());
		jw_uint_field(jw, "rcv_wscale", cfg->rcv_wscale);
		jw_uint_field(jw, "window", cfg->window);
		jw_name(jw, "offers");
		jw_start_array(jw);
		for (size_t i = 0; i < sizeof(offers) / sizeof(offers[0]); i++)
			if (cfg->flags & offers[i].flag)
				jw_string(jw, offers[i].name);
		jw_end_array(jw);
		if (view)
			policy_print(view->pol, ports, view->monitor, view->buckets,
				     view->spending, view->buckets_max, jw);
		jw_end_object(jw);
		return;
	}
	if (cfg->mode == SYNPROXY_OFF) {
		printf("synproxy  off\n");
		return;
	}
	printf("synproxy  %s, ports %s", synproxy_mode_name(cfg->mode), list);
	if (cfg->mode == SYNPROXY_AUTO)
		printf(", on above %u SYN/s per port, off below %u", cfg->syn_threshold,
		       cfg->syn_threshold / 2);
	printf("\n          path %s: %s", synproxy_path_name(cfg->path), synproxy_path_says(cfg));
	if (cfg->invalid_ack_rate)
		printf("\n          ACKs failing the cookie check on a closed connection's tuple: "
		       "%u each, then up to %u/s, to the stack (its RST), the rest dropped",
		       SYNPROXY_LATE_ACKS, cfg->invalid_ack_rate);
	else
		printf("\n          ACKs failing the cookie check: all dropped");
	printf("\n          SYN-ACK: window %u (the translate path's: 0, until the server's), "
	       "wscale %u, offers", cfg->window, cfg->rcv_wscale);
	for (size_t i = 0; i < sizeof(offers) / sizeof(offers[0]); i++)
		if (cfg->flags & offers[i].flag)
			printf(" %s", offers[i].name);
	printf("\n");
	if (view)
		policy_print(view->pol, ports, view->monitor, view->buckets, view->spending,
			     view->buckets_max, NULL);
}

/* --- isnguard synproxy ---------------------------------------------------- */

static int open_synproxy_maps(int *config_fd, int *ports_fd)
{
	*config_fd = map_open_checked("synproxy", &isn_synproxy_layout, NULL);
	if (*config_fd < 0)
		return *config_fd;
	*ports_fd = map_open_checked("synproxy", &isn_synproxy_ports_layout, NULL);
	if (*ports_fd < 0) {
		close(*config_fd);
		return *ports_fd;
	}
	return 0;
}

/* What `isnguard synproxy` was asked: nothing (show), or a change. */
struct synproxy_params {
	int mode;		/* -1: keep (or always, when switching on) */
	int path;		/* -1: keep (auto when switching on) */
	uint32_t threshold;	/* 0: keep (or the default) */
	uint32_t invalid_ack_rate;
	bool invalid_ack_rate_given;	/* else keep (or the default) */
	const char *spec;	/* PORTS, "off", or NULL */
	uint64_t wanted[SYNPROXY_PORT_WORDS];
	struct policy_request policy;	/* the SYN-ACK limits and --monitor, where given */
	bool json;
};

static struct synproxy_params synproxy_prm;
static int synproxy_mode_choice;	/* index in synproxy_modes */
static bool synproxy_mode_given;
static int synproxy_path_choice;	/* index in synproxy_paths: enum synproxy_path */
static bool synproxy_path_given;

static const struct cli_option synproxy_options[] = {
	CLI_OPT_CHOICE("mode", 'm', "MODE", &synproxy_mode_choice, "mode", synproxy_modes,
		       "always (default): every SYN to the ports; auto: only above the threshold",
		       .given = &synproxy_mode_given),
	CLI_OPT_U32("syn-threshold", 't', "N", &synproxy_prm.threshold, 1, SYNPROXY_MAX_THRESHOLD,
		    "auto: SYNs per second to one port that switch cookies on (default 1000)"),
	CLI_OPT_U32("invalid-ack-rate", 'r', "N", &synproxy_prm.invalid_ack_rate, 0,
		    SYNPROXY_MAX_INVALID_ACK_RATE,
		    "ACKs per second failing the cookie check handed to the host's stack for its "
		    "RST, beyond the first 4 on each closed connection's tuple, which always go; "
		    "the rest are dropped (default 10000; 0 drops all)",
		    .given = &synproxy_prm.invalid_ack_rate_given),
	CLI_OPT_CHOICE("path", 'p', "PATH", &synproxy_path_choice, "path", synproxy_paths,
		       "auto (default), local or translate: where valid cookie ACKs go",
		       .given = &synproxy_path_given),
	CLI_OPT_CUSTOM("monitor", required_argument, POLICY_OPT_MONITOR, "PORTS|all|off", &synproxy_prm.policy,
		       policy_monitor_option,
		       "monitor mode for these of the ports (or all): their SYNs are decided and "
		       "counted (syn_monitor_would_*), and all pass to the host, none answered; "
		       "off answers them again. Switching the proxy on sets off unless given"),
	POLICY_ROWS(synproxy_prm.policy),
	CLI_JSON_ROW(&synproxy_prm.json, "print one JSON object"),
	CLI_HELP_ROW,
	{ 0 },
};

static int parse_synproxy_args(struct cli_parser *p, int argc, char **argv,
			       struct synproxy_params *prm)
{
	const char *why;
	int err;

	synproxy_prm = (struct synproxy_params){ .mode = -1, .path = -1, .policy = { .monitor = -1 } };
	synproxy_mode_given = false;
	synproxy_path_given = false;
	err = cli_parse(p, argc, argv);
	if (err)
		return err;
	*prm = synproxy_prm;
	if (synproxy_mode_given)
		prm->mode = synproxy_mode_from_name(synproxy_modes[synproxy_mode_choice]);
	if (synproxy_path_given)
		prm->path = synproxy_path_choice;
	if (optind + 1 < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind + 1]);
	if (optind < argc)
		prm->spec = argv[optind];
	if (prm->spec && strcmp(prm->spec, "off") &&
	    synproxy_parse_ports(prm->spec, prm->wanted, &why))
		return cli_usage_error(p, "bad port list '%s': %s", prm->spec, why);
	return 0;
}

/*
 * The settings after the change asked for, from those before: "off" clears
 * the ports; ports, a mode or a threshold switch it on or adjust it, with
 * the host's stack read again. Returns 0, EXIT_USAGE or EXIT_RUNTIME.
 */
static int synproxy_change(const struct cli_parser *p, const struct synproxy_params *prm,
			   struct synproxy_config *cfg, uint64_t *ports)
{
	const struct synproxy_config before = *cfg;

	if (!prm->spec && before.mode == SYNPROXY_OFF)
		return cli_usage_error(p, "the SYN proxy is off: name the ports to switch it on");
	if (prm->spec && !strcmp(prm->spec, "off")) {
		cfg->mode = SYNPROXY_OFF;
		memset(ports, 0, SYNPROXY_PORT_WORDS * sizeof(*ports));
		return 0;
	}
	if (prm->spec)
		memcpy(ports, prm->wanted, SYNPROXY_PORT_WORDS * sizeof(*ports));
	cfg->mode = prm->mode >= 0 ? (uint32_t)prm->mode
				   : before.mode != SYNPROXY_OFF ? before.mode : SYNPROXY_ALWAYS;
	if (prm->threshold)
		cfg->syn_threshold = prm->threshold;
	else if (!cfg->syn_threshold)
		cfg->syn_threshold = SYNPROXY_DEFAULT_THRESHOLD;
	if (prm->invalid_ack_rate_given)
		cfg->invalid_ack_rate = prm->invalid_ack_rate;
	else if (before.mode == SYNPROXY_OFF)
		cfg->invalid_ack_rate = SYNPROXY_DEFAULT_INVALID_ACK_RATE;
	if (prm->path >= 0)
		cfg->path = (uint32_t)prm->path;
	else if (before.mode == SYNPROXY_OFF)
		cfg->path = SYNPROXY_PATH_AUTO;
	if (synproxy_check_host(p->cmd, cfg->path))
		return EXIT_RUNTIME;
	synproxy_host_params(cfg);
	return 0;
}

/* Whether prm changes the SYN policy (limits, monitor mode). */
static bool policy_given(const struct policy_request *r)
{
	return r->source_rate_given || r->source_burst_given || r->total_rate_given ||
	       r->prefix4_given || r->prefix6_given || r->monitor >= 0;
}

/*
 * The SYN policy after the change: the options given over the live one;
 * monitor mode off when the proxy goes on from off, unless given (as the
 * mode goes back to always); monitored ports among the protected ones.
 */
static int synproxy_policy_change(const struct cli_parser *p, const struct synproxy_params *prm,
				  bool switched_on, const uint64_t *ports, struct syn_policy *pol,
				  uint64_t *monitor)
{
	const char *why = policy_monitor_check(&prm->policy, ports);

	if (why)
		return cli_usage_error(p, "--monitor: %s (%s)", why,
				       prm->spec ? "PORTS here" : "'isnguard synproxy' shows them");
	if (!(pol->flags & SYN_POLICY_SET))
		policy_defaults(pol);
	if (switched_on && prm->policy.monitor < 0)
		pol->monitor = SYN_MONITOR_OFF;
	policy_apply_request(pol, monitor, &prm->policy);
	policy_follow_ports(pol, monitor, ports);
	return 0;
}

/* Whether any of the ports is answered, not only watched. */
static bool synproxy_answers(const struct synproxy_config *cfg, const uint64_t *ports,
			     const struct syn_policy *pol, const uint64_t *monitor)
{
	static uint64_t watched[SYNPROXY_PORT_WORDS];
	size_t count = 0;

	if (cfg->mode == SYNPROXY_OFF)
		return false;
	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++)
		count += (size_t)__builtin_popcountll(ports[i]);
	return policy_monitored_ports(pol, ports, monitor, watched) < count;
}

int do_synproxy(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "synproxy",
		.args = "[PORTS|off]",
		.summary = "Show or change, live, which ports get SYN cookies. PORTS is a comma list\n"
			   "of ports and ranges (22,80,443,8000-8099) or 'all'. A SYN to such a port\n"
			   "is answered by XDP with a cookie SYN-ACK; only a valid ACK reaches the\n"
			   "server. Local path: the host's listener gets it (Linux 6.9,\n"
			   "bpf_sk_assign_tcp_reqsk, and net.ipv4.tcp_syncookies 1 or 2). Translate\n"
			   "path: isnguard opens the connection to the server itself (servers behind\n"
			   "a gateway, older kernels) and translates it. Auto: local where it can.\n"
			   "Each source prefix draws at most --source-rate SYN-ACKs a second past\n"
			   "--source-burst; --monitor only counts what would be answered, limited\n"
			   "or dropped, and passes every SYN. 'isnguard prefix' holds the deny and\n"
			   "allow lists.",
		.options = synproxy_options,
	};
	static struct synproxy_params prm;
	static uint64_t ports[SYNPROXY_PORT_WORDS], monitor[SYNPROXY_PORT_WORDS];
	struct synproxy_config cfg;
	struct syn_policy pol;
	struct policy_view view = { .pol = &pol, .monitor = monitor, .buckets = -1 };
	int err, config_fd, ports_fd, policy_fd, monitor_fd, lock = -1;
	bool change_proxy, change_policy;
	size_t held, spending;
	struct json_writer jw;

	err = parse_synproxy_args(&p, argc, argv, &prm);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	change_proxy = prm.spec || prm.mode >= 0 || prm.threshold || prm.path >= 0 ||
		       prm.invalid_ack_rate_given;
	change_policy = change_proxy || policy_given(&prm.policy);
	/* The policy's list flags are the prefix command's: one writer at a time. */
	if (change_policy && (lock = state_lock(p.cmd)) < 0)
		return EXIT_RUNTIME;
	if (open_synproxy_maps(&config_fd, &ports_fd)) {
		if (lock >= 0)
			close(lock);
		return EXIT_RUNTIME;
	}
	if (policy_open(p.cmd, &policy_fd, &monitor_fd)) {
		close(config_fd);
		close(ports_fd);
		if (lock >= 0)
			close(lock);
		return EXIT_RUNTIME;
	}
	err = synproxy_read(config_fd, ports_fd, &cfg, ports);
	if (!err)
		err = policy_read(policy_fd, monitor_fd, &pol, monitor);
	if (err) {
		cli_error("synproxy: read %s: %s", ISN_MAP_SYNPROXY, strerror(-err));
		err = EXIT_RUNTIME;
	} else if (change_policy) {
		bool was_off = cfg.mode == SYNPROXY_OFF;
		bool answered = synproxy_answers(&cfg, ports, &pol, monitor);

		if (change_proxy)
			err = synproxy_change(&p, &prm, &cfg, ports);
		if (!err)
			err = synproxy_policy_change(&p, &prm, was_off && cfg.mode != SYNPROXY_OFF,
						     ports, &pol, monitor);
		/* Cookies switched on, or ports out of monitor mode: someone must answer them. */
		if (!err && synproxy_answers(&cfg, ports, &pol, monitor) && (change_proxy || !answered))
			err = health_check_cookie_hooks();
		/* The policy first: ports switched on in monitor mode never get an answer. */
		if (!err && (err = policy_write(policy_fd, monitor_fd, &pol, monitor))) {
			cli_error("synproxy: update %s: %s", ISN_MAP_SYN_POLICY, strerror(-err));
			err = EXIT_RUNTIME;
		}
		if (!err && change_proxy &&
		    (err = synproxy_write(config_fd, ports_fd, &cfg, ports))) {
			cli_error("synproxy: update %s: %s", ISN_MAP_SYNPROXY, strerror(-err));
			err = EXIT_RUNTIME;
		}
		if (!err)
			err = policy_read(policy_fd, monitor_fd, &pol, monitor) ? EXIT_RUNTIME : 0;
	}
	close(config_fd);
	close(ports_fd);
	close(policy_fd);
	close(monitor_fd);
	if (lock >= 0)
		close(lock);
	if (err)
		return err;
	/* The translate path's resends need the tick, which no attach made while the proxy was off. */
	if (cfg.mode != SYNPROXY_OFF && loader_tick_sync())
		fprintf(stderr, "%s: synproxy: made the resend tick device %s\n", PROG_NAME,
			ISN_TICK_DEV);
	if (!policy_bucket_fill(&held, &spending, &view.buckets_max)) {
		view.buckets = (long)held;
		view.spending = (long)spending;
	}
	if (prm.json) {
		jw_init(&jw, stdout);
		synproxy_print(&cfg, ports, &view, &jw);
		jw_finish(&jw);
	} else {
		synproxy_print(&cfg, ports, &view, NULL);
	}
	return 0;
}
