/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Conventions every subcommand shares: the command table, options with their help, errors. */
#ifndef ISNGUARD_CLI_H
#define ISNGUARD_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#define PROG_NAME "isnguard"

/* Exit codes (xdp-tools style): runtime failure 1, bad usage 2. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

/* An option together with its help line; usage text is generated from these. */
struct cli_option {
	const char *name;
	int has_arg;		/* no_argument or required_argument */
	int short_name;
	const char *metavar;	/* shown for options with an argument */
	const char *help;
};

#define CLI_MAX_OPTIONS 32

struct cli_parser {
	const char *cmd;	/* subcommand name for messages */
	const char *args;	/* positional synopsis, "" if none */
	const char *summary;
	const struct cli_option *options;	/* ends with a zeroed entry */
	struct option long_options[CLI_MAX_OPTIONS + 1];
	char short_options[3 * CLI_MAX_OPTIONS + 2];
};

/* Short names every command uses for these two. */
#define CLI_OPT_JSON 'j'
#define CLI_OPT_HELP 'h'

void cli_parser_init(struct cli_parser *p);
/* getopt_long over the parser's table; returns the option's short_name, -1 at the end, '?' on error. */
int cli_next_option(struct cli_parser *p, int argc, char **argv);
void cli_usage(const struct cli_parser *p, FILE *out);
/*
 * The whole options loop of a command whose only options are --json and
 * --help. Returns 0, CLI_HELP_SHOWN after printing --help, or EXIT_USAGE.
 * Positional arguments are left at argv[optind].
 */
#define CLI_HELP_SHOWN (-1)
int cli_parse_json_only(struct cli_parser *p, int argc, char **argv, bool *json);

/*
 * Set when the command line holds --json (main.c looks before any parsing):
 * errors are then {"error": "<message>"} on stdout, with the same exit codes.
 */
extern bool cli_json_errors;

/* "isnguard: <cmd>: <message>" on stderr, then a pointer to --help. Returns EXIT_USAGE. */
int cli_usage_error(const struct cli_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "isnguard: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* ISNGUARD_CLI_H */
