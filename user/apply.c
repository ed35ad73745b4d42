// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard apply: makes the live state of this network namespace match the
 * config file. It attaches the interfaces the file names and are not
 * attached (or attached with other hooks), changes the state's live settings
 * in place (hash, timeouts, the SYN proxy's, the key file's key: no
 * re-attach, no link flap), puts a new build's programs in the place of an
 * older one's (attach --replace: one kernel call each, no gap), and detaches,
 * keeping the state, what the file no longer names. A second apply finds
 * nothing to do and says so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "apply.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "health.h"
#include "json_writer.h"
#include "keyfile.h"
#include "maps.h"
#include "pinned.h"
#include "policy.h"
#include "state.h"
#include "ref/isn_ref.h"
#include "synproxy.h"

#define MAX_STEPS (2 * CONFIG_MAX_IFACES + ISN_MAX_LINKS + 8)

struct step {
	char what[200];
};

struct plan {
	int steps;
	struct step step[MAX_STEPS];
	bool dry_run;
};

static void note(struct plan *pl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct plan *pl, const char *fmt, ...)
{
	va_list ap;

	if (pl->steps >= MAX_STEPS)
		return;
	va_start(ap, fmt);
	vsnprintf(pl->step[pl->steps++].what, sizeof(pl->step[0].what), fmt, ap);
	va_end(ap);
}

/* The link of this namespace attached as ifname, or NULL. */
static const struct link_health *link_here(const struct health *h, const char *ifname)
{
	uint64_t here = netns_inode();

	for (int i = 0; i < h->links; i++)
		if (h->link[i].key.netns_ino == here && !strcmp(h->link[i].info.ifname, ifname))
			return &h->link[i];
	return NULL;
}

/*
 * What the file says of the hooks differs from what is attached (unsaid
 * keys match anything), or the file wants SYN cookies the attached hooks
 * cannot answer (attached before the proxy was on: no SYN hook, or native
 * XDP_TX on a veth whose peer has no XDP program). A re-attach picks hooks
 * that can.
 */
static const char *hooks_differ(const struct config_iface *ifc, const struct link_health *l)
{
	const struct attach_request *req = &ifc->req;

	if (req->ingress_given && req->ingress != l->info.ingress)
		return "ingress";
	if (req->syn_hook_given && req->syn_tc != !!(l->info.flags & LINK_F_SYN_TC))
		return "syn-hook";
	if (req->synproxy && l->checked && policy_request_answers(req->policy, req->synproxy->ports) && !l->cookies_served)
		return "hooks, which cannot answer the SYN proxy's cookies";
	if (req->synproxy && l->checked && !l->syns_watched)
		return "hooks, which cannot watch the SYN proxy's ports";
	return NULL;
}

static int read_isn_config(struct isn_config *cfg, int *fd_out)
{
	uint32_t zero = 0;
	int fd = map_open_checked("apply", &isn_config_layout, NULL);

	if (fd < 0)
		return EXIT_RUNTIME;
	if (bpf_map_lookup_elem(fd, &zero, cfg)) {
		cli_error("apply: read %s: %s", ISN_MAP_CONFIG, strerror(errno));
		close(fd);
		return EXIT_RUNTIME;
	}
	*fd_out = fd;
	return 0;
}

static const char *const timeout_names[ISN_TIMEOUTS] = {
	"timeout-opening", "timeout-established", "timeout-closing", "timeout-closed",
};

/* Hash and timeouts: isn_config's fields the file gives, in place. */
static int apply_isn_config(const struct config *file, struct plan *pl)
{
	const struct attach_params *g = &file->global;
	struct isn_config cfg;
	uint32_t zero = 0, *fields[ISN_TIMEOUTS];
	bool changed = false;
	int fd, err = read_isn_config(&cfg, &fd);

	if (err)
		return err;
	fields[ISN_TIMEOUT_OPENING] = &cfg.timeout_opening;
	fields[ISN_TIMEOUT_ESTABLISHED] = &cfg.timeout_established;
	fields[ISN_TIMEOUT_CLOSING] = &cfg.timeout_closing;
	fields[ISN_TIMEOUT_CLOSED] = &cfg.timeout_closed;
	if (g->hash >= 0 && cfg.hash != (uint32_t)g->hash) {
		note(pl, "hash %s -> %s (new flows)", isn_hash_name(cfg.hash),
		     isn_hash_name((uint32_t)g->hash));
		cfg.hash = (uint32_t)g->hash;
		changed = true;
	}
	for (int i = 0; i < ISN_TIMEOUTS; i++) {
		if (!g->timeouts.given[i] || *fields[i] == g->timeouts.seconds[i])
			continue;
		note(pl, "%s %us -> %us", timeout_names[i], *fields[i], g->timeouts.seconds[i]);
		*fields[i] = g->timeouts.seconds[i];
		changed = true;
	}
	if (changed && !pl->dry_run && bpf_map_update_elem(fd, &zero, &cfg, BPF_EXIST)) {
		cli_error("apply: update %s: %s", ISN_MAP_CONFIG, strerror(errno));
		err = EXIT_RUNTIME;
	}
	close(fd);
	return err;
}

/* The SYN proxy's settings as the file gives them (off when it names no ports). */
static int apply_synproxy(const struct config *file, struct plan *pl)
{
	/* The file's [global] as attach would take it: defaults filled in. */
	struct attach_params g = file->global;
	const struct synproxy_request *want = &g.synproxy;
	static uint64_t ports[SYNPROXY_PORT_WORDS];
	struct synproxy_config cfg, next;
	struct attach_request req = { 0 };
	struct cli_parser p;
	char list[256];
	int config_fd, ports_fd, err;

	attach_parser(&p);
	if (attach_request_from(&p, &g, &req))
		return EXIT_USAGE;
	config_fd = map_open_checked("apply", &isn_synproxy_layout, NULL);
	ports_fd = config_fd < 0 ? -1 : map_open_checked("apply", &isn_synproxy_ports_layout, NULL);
	if (ports_fd < 0) {
		if (config_fd >= 0)
			close(config_fd);
		return EXIT_RUNTIME;
	}
	err = synproxy_read(config_fd, ports_fd, &cfg, ports) ? EXIT_RUNTIME : 0;
	next = cfg;
	if (!err && !want->enabled && cfg.mode != SYNPROXY_OFF) {
		note(pl, "synproxy off");
		next.mode = SYNPROXY_OFF;
		memset(ports, 0, sizeof(ports));
	} else if (!err && want->enabled &&
		   (cfg.mode != want->mode || memcmp(ports, want->ports, sizeof(ports)) ||
		    cfg.syn_threshold != want->syn_threshold ||
		    cfg.invalid_ack_rate != want->invalid_ack_rate || cfg.path != want->path)) {
		synproxy_format_ports(want->ports, list, sizeof(list));
		note(pl, "synproxy %s, ports %s, path %s, syn-threshold %u, invalid-ack-rate %u",
		     synproxy_mode_name(want->mode), list, synproxy_path_name(want->path),
		     want->syn_threshold, want->invalid_ack_rate);
		next.mode = want->mode;
		next.syn_threshold = want->syn_threshold;
		next.invalid_ack_rate = want->invalid_ack_rate;
		next.path = want->path;
		memcpy(ports, want->ports, sizeof(ports));
		if (synproxy_check_host("apply", next.path))
			err = EXIT_RUNTIME;
		else
			synproxy_host_params(&next);
	}
	if (!err && memcmp(&next, &cfg, sizeof(cfg)) && !pl->dry_run &&
	    synproxy_write(config_fd, ports_fd, &next, ports)) {
		cli_error("apply: update %s: %s", ISN_MAP_SYNPROXY, strerror(errno));
		err = EXIT_RUNTIME;
	}
	close(config_fd);
	close(ports_fd);
	return err;
}

static const char *monitor_words(const struct syn_policy *pol, const uint64_t *monitor,
				 char *buf, size_t len)
{
	if (pol->monitor == SYN_MONITOR_ALL)
		return "all";
	if (pol->monitor != SYN_MONITOR_PORTS)
		return "off";
	synproxy_format_ports(monitor, buf, len);
	return buf;
}

/*
 * The SYN policy as the file gives it, defaults for what it leaves out
 * (monitor mode off, no list entries): limits, monitor mode, and the deny
 * and allow lists, each made exactly the file's.
 */
static int apply_policy(const struct config *file, struct plan *pl)
{
	struct attach_params g = file->global;
	const struct policy_request *want = &g.policy;
	static uint64_t monitor[SYNPROXY_PORT_WORDS], next_monitor[SYNPROXY_PORT_WORDS];
	static const uint64_t no_ports[SYNPROXY_PORT_WORDS];
	struct attach_request req = { 0 };
	struct syn_policy cur, next;
	size_t added, removed;
	struct cli_parser p;
	char list[256];
	int fd, monitor_fd, err;

	attach_parser(&p);
	if (attach_request_from(&p, &g, &req))
		return EXIT_USAGE;
	if (policy_open("apply", &fd, &monitor_fd))
		return EXIT_RUNTIME;
	err = policy_read(fd, monitor_fd, &cur, monitor) ? EXIT_RUNTIME : 0;
	next = cur;
	policy_defaults(&next);
	memset(next_monitor, 0, sizeof(next_monitor));
	policy_apply_request(&next, next_monitor, want);
	policy_follow_ports(&next, next_monitor, g.synproxy.enabled ? g.synproxy.ports : no_ports);
	if (!err && (!(cur.flags & SYN_POLICY_SET) ||
		     policy_differs(&cur, monitor, &next, next_monitor))) {
		note(pl, "SYN policy: source-rate %u, source-burst %u, source-prefix4 %u, "
		     "source-prefix6 %u, total-rate %u, monitor %s", next.source_rate,
		     next.source_burst, next.source_prefix4, next.source_prefix6, next.total_rate,
		     monitor_words(&next, next_monitor, list, sizeof(list)));
		if (!pl->dry_run && policy_write(fd, monitor_fd, &next, next_monitor)) {
			cli_error("apply: update %s: %s", ISN_MAP_SYN_POLICY, strerror(errno));
			err = EXIT_RUNTIME;
		}
	}
	close(fd);
	close(monitor_fd);
	if (!err && prefix_lists_set("apply", &want->prefixes, true, true, pl->dry_run, &added,
				     &removed))
		err = EXIT_RUNTIME;
	if (!err && (added || removed))
		note(pl, "prefix lists: %zu prefix%s added, %zu removed (deny and allow as the file "
		     "gives them)", added, added == 1 ? "" : "es", removed);
	return err;
}

static int apply_key(const struct config *file, struct plan *pl)
{
	bool changed = false;
	int err;

	if (!file->global.key_file)
		return 0;
	err = key_apply_file("apply", file->global.key_file, pl->dry_run, &changed);
	if (!err && changed)
		note(pl, "key from %s (new flows; cookies in flight stay valid)",
		     file->global.key_file);
	return err;
}

static void print_plan(const struct plan *pl, const char *path, bool json)
{
	struct json_writer jw;

	if (json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "config", path);
		jw_bool_field(&jw, "dry_run", pl->dry_run);
		jw_bool_field(&jw, "changed", pl->steps > 0);
		jw_name(&jw, "steps");
		jw_start_array(&jw);
		for (int i = 0; i < pl->steps; i++)
			jw_string(&jw, pl->step[i].what);
		jw_end_array(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
		return;
	}
	if (!pl->steps) {
		printf("%s: nothing to change: the live state matches it\n", path);
		return;
	}
	printf("%s: %s\n", path, pl->dry_run ? "would change (dry run, nothing done):"
					      : "changed:");
	for (int i = 0; i < pl->steps; i++)
		printf("  %s\n", pl->step[i].what);
}

int apply_config(const struct config *file, bool dry_run, bool json)
{
	static struct health h;
	static struct plan pl;
	uint64_t here = netns_inode();
	unsigned char build[ISN_BUILD_ID_LEN];
	int err = 0, failed = 0;

	memset(&pl, 0, sizeof(pl));
	loader_build_id(build);
	pl.dry_run = dry_run;
	/* A key file that cannot be used stops the apply before anything changes. */
	if (file->global.key_file) {
		struct isn_key key;

		err = key_file_read("apply", file->global.key_file, true, &key);
		explicit_bzero(&key, sizeof(key));
		if (err)
			return err;
	}
	health_read(&h);
	/*
	 * Attach what the file names and is not attached here, or with other
	 * hooks. One interface that fails (gone, refused) does not keep the
	 * others unprotected: the rest go on, and apply exits 1 at the end.
	 */
	for (int i = 0; i < file->ifaces; i++) {
		const struct config_iface *ifc = &file->iface[i];
		const struct link_health *l = link_here(&h, ifc->name);
		const char *differs = l ? hooks_differ(ifc, l) : NULL;
		struct attach_request req = ifc->req;

		req.quiet = true;
		if (l && !strcmp(l->state, "attached") && !differs) {
			/* Another build's programs (an upgrade): this one's, in place, no gap. */
			if (link_build_is((int)l->key.ifindex, build))
				continue;
			note(&pl, "replace %s: this build's programs, in place", ifc->name);
			req.replace = true;
			if (!dry_run && loader_attach(&req)) {
				failed++;
				note(&pl, "  %s failed (its error is above)", ifc->name);
			}
			continue;
		}
		note(&pl, "%s %s%s%s", l && differs ? "re-attach" : "attach", ifc->name,
		     differs ? ": its " : "", differs ? differs : "");
		if (dry_run)
			continue;
		if (l && strcmp(l->state, "gone") && loader_detach(ifc->name, true, DETACH_QUIET))
			failed++;
		else if (req.synproxy && synproxy_check_host("apply", req.synproxy->path))
			failed++;
		else if (loader_attach(&req))
			failed++;
		else
			continue;
		note(&pl, "  %s failed (its error is above)", ifc->name);
	}
	health_read(&h);	/* the state the attaches may have made */
	/* The state's live settings, where there is state (a dry run before any attach has none). */
	if (h.state) {
		err = apply_isn_config(file, &pl);
		/* The policy first: ports switched on in monitor mode never get an answer. */
		if (!err)
			err = apply_policy(file, &pl);
		if (!err)
			err = apply_synproxy(file, &pl);
		if (!err)
			err = apply_key(file, &pl);
	}
	/* Detach, keeping the state, what the file no longer names. */
	for (int i = 0; i < h.links && !err; i++) {
		const struct link_health *l = &h.link[i];
		bool named = false;

		if (l->key.netns_ino != here)
			continue;
		for (int j = 0; j < file->ifaces; j++)
			named |= !strcmp(file->iface[j].name, l->info.ifname);
		if (named)
			continue;
		note(&pl, "detach %s (not in the file; the state is kept)", l->info.ifname);
		if (!dry_run && loader_detach(l->info.ifname, true, DETACH_QUIET))
			err = EXIT_RUNTIME;
	}
	if (!err && !dry_run && loader_tick_sync())
		note(&pl, "resend tick (%s) made", ISN_TICK_DEV);
	if (!err)
		print_plan(&pl, file->path, json);
	return err ? err : failed ? EXIT_RUNTIME : 0;
}

int do_apply(int argc, char **argv)
{
	static const char *path;
	static bool dry_run, json;
	const struct cli_option options[] = {
		CLI_OPT_STRING("config", 'c', "FILE", &path,
			       "the config file (default $ISNGUARD_CONFIG, else " CONFIG_DEFAULT_PATH ")"),
		CLI_OPT_FLAG("dry-run", 'n', &dry_run, "print what would change; change nothing"),
		CLI_JSON_ROW(&json, "print the steps as one JSON object"),
		CLI_HELP_ROW,
		{ 0 },
	};
	struct cli_parser p = {
		.cmd = "apply",
		.args = "",
		.summary = "Make the live state of this network namespace match the config file:\n"
			   "attach the interfaces it names that are not attached (or are, with\n"
			   "other hooks), change live settings in place (hash, timeouts, the SYN\n"
			   "proxy's and its limits, monitor mode and prefix lists, the key file's\n"
			   "key; no re-attach), and detach, keeping the\n"
			   "state, the interfaces it no longer names. The key file is read every\n"
			   "time, so a fleet key survives a reboot. A second apply changes nothing\n"
			   "and says so. 'isnguard config example' prints a file to start from.",
		.options = options,
	};
	static struct config file;
	int err;

	path = config_default_path();
	dry_run = json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	err = config_load(path, &file);
	if (err)
		return err;
	if (require_root("apply"))
		return EXIT_RUNTIME;
	return apply_config(&file, dry_run, json);
}
