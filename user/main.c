// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard: keyed TCP initial sequence numbers and SYN cookies on the wire. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "cli.h"
#include "loader.h"
#include "pinned.h"
#include "commands.h"

#ifndef ISNGUARD_VERSION
#define ISNGUARD_VERSION "0.1"
#endif

static int do_help(int argc, char **argv);
static int do_version(int argc, char **argv);

static const struct cmd commands[] = {
	{ "attach", do_attach, "load the datapath and attach it to an interface" },
	{ "detach", do_detach, "detach the datapath from an interface" },
	{ "status", do_status, "show where the datapath is attached and its settings" },
	{ "stats", do_stats, "show the datapath counters" },
	{ "flows", do_flows, "list the tracked connections" },
	{ "mode", do_mode, "switch the hash of new flows (siphash, md5, none)" },
	{ "key", do_key, "rotate or set the secret key (new flows only)" },
	{ "synproxy", do_synproxy, "show or set the ports that get SYN cookies" },
	{ "isn", do_isn, "print the keyed ISN of a connection (reference implementation)" },
	{ "version", do_version, "print the version" },
	{ "help", do_help, "show this help" },
	{ 0 },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: %s COMMAND [options]\n\nCommands:\n", PROG_NAME);
	for (const struct cmd *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->help);
	fprintf(out, "\nRun '%s COMMAND --help' for the options of a command.\n", PROG_NAME);
}

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return 0;
}

static int do_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("%s %s\n", PROG_NAME, ISNGUARD_VERSION);
	return 0;
}

/*
 * isnguard reports its own one-line errors; library chatter (libbpf's
 * verifier logs, libxdp's fallbacks) shows only with ISNGUARD_DEBUG=1.
 */
static bool library_debug;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	va_list note;

	(void)level;
	va_copy(note, ap);
	loader_libbpf_note(fmt, note);
	va_end(note);
	if (!library_debug)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int libxdp_log(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!library_debug)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	const char *debug = getenv("ISNGUARD_DEBUG");

	library_debug = debug && *debug && strcmp(debug, "0");
	libbpf_set_print(libbpf_log);
	libxdp_set_print(libxdp_log);
	bpffs_root();	/* before libxdp looks for its bpffs (ip netns exec) */
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return do_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version"))
		return do_version(argc - 1, argv + 1);
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			cli_json_errors = true;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			cli_json_errors = true;
	for (const struct cmd *c = commands; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see '%s --help')", argv[1], PROG_NAME);
	return EXIT_USAGE;
}
