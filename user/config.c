// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The config file and `isnguard config check|example`. The file is INI
 * (libinih): [global] holds the state's settings (hash, key-file, max-flows,
 * timeouts, the SYN proxy's), [interface NAME] one interface's hooks
 * (ingress, xdp-mode, syn-hook; in [global] they are every interface's
 * default). Each key is an attach option's long name, its value parsed by
 * attach's option table, so the file and the command line cannot drift.
 * [exporter] holds `isnguard exporter`'s keys (listen), through its table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ini.h>

#include "cli.h"
#include "config.h"
#include "exporter.h"
#include "json_writer.h"
#include "parse.h"

/* The keys an [interface NAME] section may set; every other option is [global]'s alone. */
static const char *const iface_keys[] = { "ingress", "xdp-mode", "syn-hook", NULL };
/* attach options that are no settings. */
static const char *const not_keys[] = { "json", "help", "replace", NULL };

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

struct config_reader {
	FILE *file;
	int line;
	struct config *cfg;
	struct config_iface *section;	/* NULL in [global] */
	bool in_section;
	char context[PATH_MAX + 16];
};

/* libinih reads a line at a time through this: the line number of each key is ours. */
static struct config_iface *section_for(struct config_reader *r, const char *section,
				       bool create);

/*
 * libinih reads a line at a time through this, so the line number of each
 * key is ours; a section header is taken here too, since libinih calls
 * back only for keys and an [interface NAME] with none is still one.
 */
static char *read_line(char *buf, int size, void *stream)
{
	struct config_reader *r = stream;
	char *line = fgets(buf, size, r->file), header[128], *end;
	const char *start;

	if (!line)
		return NULL;
	r->line++;
	start = line + strspn(line, " \t");
	end = strchr(start, ']');
	if (*start == '[' && end && end - start < (long)sizeof(header)) {
		snprintf(header, sizeof(header), "%.*s", (int)(end - start - 1), start + 1);
		section_for(r, header, true);
	}
	return line;
}

static void config_error(struct config_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void config_error(struct config_reader *r, const char *fmt, ...)
{
	char message[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	cli_error("%s:%d: %s", r->cfg->path, r->line, message);
	r->cfg->errors++;
}

static struct config_iface *section_for(struct config_reader *r, const char *section,
				       bool create)
{
	struct config *cfg = r->cfg;
	const char *name;

	if (!strcmp(section, "global") || !strcmp(section, CONFIG_EXPORTER_SECTION))
		return NULL;
	if (strncmp(section, "interface ", 10)) {
		if (!create)
			return NULL;
		config_error(r, "unknown section [%s]: use [global], [interface NAME] or [exporter]",
			     section);
		return NULL;
	}
	name = section + 10;
	while (*name == ' ')
		name++;
	if (!*name || strlen(name) >= IFNAMSIZ || strchr(name, '/') || strchr(name, ' ')) {
		if (!create)
			return NULL;
		config_error(r, "bad interface name '%s' in [%s]", name, section);
		return NULL;
	}
	for (int i = 0; i < cfg->ifaces; i++)
		if (!strcmp(cfg->iface[i].name, name)) {
			if (create)
				config_error(r, "[interface %s] again (first at line %d)", name,
					     cfg->iface[i].line);
			return &cfg->iface[i];
		}
	if (!create)
		return NULL;
	if (cfg->ifaces >= CONFIG_MAX_IFACES) {
		config_error(r, "more than %d interfaces", CONFIG_MAX_IFACES);
		return NULL;
	}
	struct config_iface *ifc = &cfg->iface[cfg->ifaces++];

	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	ifc->line = r->line;
	ifc->prm = (struct attach_params){ .hash = -1, .xdp_mode = -1, .ingress = -1,
					   .syn_hook = -1, .synproxy_mode = -1,
					   .synproxy_path = -1, .policy = { .monitor = -1 } };
	return ifc;
}

/* One key through attach's option table, into the section's params. */
static int parse_key(struct config_reader *r, const char *name, const char *value,
		     struct attach_params *into)
{
	struct attach_params *prm = attach_params_current();
	char option[128];
	char *argv[] = { "attach", option, NULL };
	struct cli_parser p;
	int err;

	if (snprintf(option, sizeof(option), "--%s=%s", name, value) >= (int)sizeof(option)) {
		config_error(r, "value of %s too long", name);
		return -1;
	}
	attach_parser(&p);
	*prm = *into;
	snprintf(r->context, sizeof(r->context), "%s:%d", r->cfg->path, r->line);
	cli_error_context = r->context;
	err = cli_parse(&p, 2, argv);
	cli_error_context = NULL;
	if (err) {
		r->cfg->errors++;
		return -1;
	}
	/* A string option points into option[]: keep a copy of its own. */
	if (prm->key_file && prm->key_file != into->key_file)
		prm->key_file = strdup(prm->key_file);
	*into = *prm;
	return 0;
}

/* An [exporter] key: one of the exporter's options (not --once), through its table. */
static void exporter_key(struct config_reader *r, const char *name, const char *value)
{
	struct exporter_params *prm = exporter_params_current(), saved = *prm;
	char option[128];
	char *argv[] = { "exporter", option, NULL };
	struct endpoint ep;
	struct cli_parser p;
	const char *why = NULL;
	int err;

	if (strcmp(name, "listen")) {
		config_error(r, "unknown key '%s' in [%s] (its one key is listen)", name,
			     CONFIG_EXPORTER_SECTION);
		return;
	}
	if (snprintf(option, sizeof(option), "--%s=%s", name, value) >= (int)sizeof(option)) {
		config_error(r, "value of %s too long", name);
		return;
	}
	exporter_parser(&p);
	*prm = (struct exporter_params){ 0 };
	snprintf(r->context, sizeof(r->context), "%s:%d", r->cfg->path, r->line);
	cli_error_context = r->context;
	err = cli_parse(&p, 2, argv);
	cli_error_context = NULL;
	/* The command line's own options stay as they were: the key is the file's. */
	*prm = saved;
	if (err) {
		r->cfg->errors++;
		return;
	}
	if (parse_endpoint(value, &ep, &why) || !ep.port) {
		config_error(r, "bad listen '%s': %s", value,
			     why ? why : "expected ADDR:PORT with a port from 1");
		return;
	}
	snprintf(r->cfg->exporter_listen, sizeof(r->cfg->exporter_listen), "%s", value);
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct config_reader *r = user;
	struct cli_parser p;
	struct config_iface *ifc;
	bool known = false;

	if (!strcmp(section, CONFIG_EXPORTER_SECTION)) {
		if (!*value)
			config_error(r, "%s has no value", name);
		else
			exporter_key(r, name, value);
		return 1;
	}
	attach_parser(&p);
	for (const struct cli_option *opt = p.options; opt->name; opt++)
		known |= !strcmp(opt->name, name) && !in_list(not_keys, name);
	ifc = section_for(r, section, false);
	if (!known) {
		config_error(r, "unknown key '%s' (the keys are attach's long options: see "
				"'isnguard attach --help' and 'isnguard config example')", name);
		return 1;
	}
	if (!*value) {
		config_error(r, "%s has no value", name);
		return 1;
	}
	if (strcmp(section, "global") && !ifc)
		return 1;	/* the section's error is said */
	if (ifc && !in_list(iface_keys, name)) {
		config_error(r, "%s is a [global] setting: the state, its key and the SYN proxy's "
				"ports are one for every interface", name);
		return 1;
	}
	parse_key(r, name, value, ifc ? &ifc->prm : &r->cfg->global);
	return 1;
}

static void finish(struct config *cfg)
{
	struct cli_parser p;
	char context[PATH_MAX + 32];

	attach_parser(&p);
	for (int i = 0; i < cfg->ifaces; i++) {
		struct config_iface *ifc = &cfg->iface[i];
		struct attach_params merged = cfg->global;

		if (ifc->prm.ingress >= 0)
			merged.ingress = ifc->prm.ingress;
		if (ifc->prm.xdp_mode >= 0)
			merged.xdp_mode = ifc->prm.xdp_mode;
		if (ifc->prm.syn_hook >= 0)
			merged.syn_hook = ifc->prm.syn_hook;
		ifc->prm = merged;
		ifc->req = (struct attach_request){ .ifname = ifc->name };
		snprintf(context, sizeof(context), "%s:%d", cfg->path, ifc->line);
		cli_error_context = context;
		if (attach_request_from(&p, &ifc->prm, &ifc->req))
			cfg->errors++;
		cli_error_context = NULL;
	}
}

int config_load(const char *path, struct config *cfg)
{
	struct config_reader r = { .cfg = cfg };
	int err;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	cfg->global = (struct attach_params){ .hash = -1, .xdp_mode = -1, .ingress = -1,
					      .syn_hook = -1, .synproxy_mode = -1,
					      .synproxy_path = -1, .policy = { .monitor = -1 } };
	r.file = fopen(path, "re");
	if (!r.file) {
		cli_error("config %s: %s", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	err = ini_parse_stream(read_line, &r, on_key, &r);
	fclose(r.file);
	/* A line libinih could not read at all (no '=', an unclosed '['). */
	if (err > 0 && !cfg->errors) {
		cli_error("%s:%d: not a 'key = value' line nor a [section]", path, err);
		cfg->errors++;
	}
	if (!cfg->errors)
		finish(cfg);
	return cfg->errors ? EXIT_USAGE : 0;
}

const char *config_default_path(void)
{
	const char *path = getenv("ISNGUARD_CONFIG");

	return path && *path ? path : CONFIG_DEFAULT_PATH;
}

/* --- isnguard config check|example ----------------------------------------- */

static const char example[] =
	"# isnguard configuration: 'isnguard apply' makes the live state match it.\n"
	"# Keys are attach's long options without '--' ('isnguard attach --help').\n"
	"# [global] is the state every interface shares; [interface NAME] one\n"
	"# interface's hooks (ingress, xdp-mode, syn-hook; in [global], every\n"
	"# interface's default).\n"
	"\n"
	"[global]\n"
	"# siphash (default), md5 or none: the ISN of new connections.\n"
	"hash = siphash\n"
	"# A fleet's shared key: 32 hex digits, mode 0600 (a file that group or\n"
	"# others can read is refused). Read at every apply. Without it the key is\n"
	"# a fresh one from getrandom(2), gone with the state at a reboot.\n"
	"#key-file = /etc/isnguard/key\n"
	"# Flow table size, when the state is made.\n"
	"max-flows = 262144\n"
	"# Idle timeouts by phase, seconds (live).\n"
	"timeout-opening = 120\n"
	"timeout-established = 86400\n"
	"timeout-closing = 900\n"
	"timeout-closed = 90\n"
	"# SYN cookies for these ports (22,80,8000-8099 or all); leave out for none.\n"
	"#synproxy = 80,443\n"
	"#synproxy-mode = always\n"
	"#syn-threshold = 1000\n"
	"#invalid-ack-rate = 10000\n"
	"#synproxy-path = auto\n"
	"# SYN-ACKs one source prefix (/32, /64) draws a second past its burst,\n"
	"# and the host in all (0: no limit); monitor mode (PORTS, all or off)\n"
	"# counts what would be answered and passes every SYN.\n"
	"#source-rate = 10000\n"
	"#source-burst = 20000\n"
	"#source-prefix4 = 32\n"
	"#source-prefix6 = 64\n"
	"#total-rate = 0\n"
	"#synproxy-monitor = off\n"
	"# Sources whose SYNs are dropped (deny) or go to the host unproxied\n"
	"# (allow); one prefix a line, repeated; apply makes each list the file's.\n"
	"#deny = 198.51.100.0/24\n"
	"#allow = 192.0.2.0/24\n"
	"\n"
	"# One section for each interface to attach; apply detaches, keeping the\n"
	"# state, an interface attached here that no section names.\n"
	"#[interface eth0]\n"
	"# xdp (default) or tc; on a veth whose peer has no XDP program the SYN\n"
	"# proxy's default is tc, with syn-hook tc.\n"
	"#ingress = xdp\n"
	"#xdp-mode = native\n"
	"#syn-hook = xdp\n"
	"\n"
	"# 'isnguard exporter' (isnguard-exporter.service): /metrics for Prometheus.\n"
	"#[exporter]\n"
	"#listen = " EXPORTER_DEFAULT_LISTEN "\n";

static bool config_json;

static const struct cli_option config_options[] = {
	CLI_JSON_ROW(&config_json, "print the result as one JSON object"),
	CLI_HELP_ROW,
	{ 0 },
};

static int config_check(const char *path)
{
	static struct config cfg;
	struct json_writer jw;
	int err = config_load(path, &cfg);

	if (err)
		return err;
	if (config_json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "config", path);
		jw_bool_field(&jw, "ok", true);
		jw_name(&jw, "interfaces");
		jw_start_array(&jw);
		for (int i = 0; i < cfg.ifaces; i++)
			jw_string(&jw, cfg.iface[i].name);
		jw_end_array(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		printf("%s: ok, %d interface%s\n", path, cfg.ifaces, cfg.ifaces == 1 ? "" : "s");
	}
	return 0;
}

int do_config(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "config",
		.args = "check [FILE] | example",
		.summary = "check: read FILE (default $ISNGUARD_CONFIG, else " CONFIG_DEFAULT_PATH ")\n"
			   "as 'apply' would and"
			   "report each error with its line number; changes nothing. example: print\n"
			   "a commented config file that 'config check' accepts.",
		.options = config_options,
	};
	int err;

	config_json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind >= argc)
		return cli_usage_error(&p, "missing subcommand: check or example");
	if (!strcmp(argv[optind], "example")) {
		if (optind + 1 < argc)
			return cli_usage_error(&p, "unexpected argument '%s'", argv[optind + 1]);
		fputs(example, stdout);
		return 0;
	}
	if (strcmp(argv[optind], "check"))
		return cli_usage_error(&p, "unknown subcommand '%s': use check or example",
				       argv[optind]);
	if (optind + 2 < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind + 2]);
	return config_check(optind + 1 < argc ? argv[optind + 1] : config_default_path());
}
