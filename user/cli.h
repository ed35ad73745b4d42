/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Conventions every subcommand shares: the command table, options with their help, errors. */
#ifndef ISNGUARD_CLI_H
#define ISNGUARD_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
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

struct cli_parser;

/* How cli_parse() stores an option's value in its destination. */
enum cli_type {
	CLI_HELP_OPT,		/* --help: print the usage, stop */
	CLI_FLAG,		/* bool: true when given */
	CLI_STRING,		/* const char *: the argument */
	CLI_U32,		/* uint32_t from min to max */
	CLI_CHOICE,		/* int: the argument's index in choices */
	CLI_CUSTOM,		/* parse(): anything else; returns 0 or an exit code */
};

/*
 * One option: its names and help line, from which getopt's tables and the
 * usage text are generated, and how its value is stored. Adding an option is
 * adding one row (the CLI_* macros below).
 */
struct cli_option {
	const char *name;
	int has_arg;		/* no_argument, required_argument or optional_argument */
	int short_name;
	const char *metavar;	/* shown for options with an argument */
	const char *help;
	enum cli_type type;
	void *dest;
	uint32_t min, max;			/* CLI_U32 */
	const char *what;			/* CLI_CHOICE: what errors call it ("XDP mode") */
	const char *const *choices;		/* CLI_CHOICE: NULL-terminated */
	/* CLI_CUSTOM: stores arg (NULL for an absent optional one) through o->dest */
	int (*parse)(struct cli_parser *p, const struct cli_option *o, int argc, char **argv,
		     const char *arg);
	bool *given;		/* set true once the option is stored, when not NULL */
};

/* Extra designators may follow a row's arguments: CLI_OPT_U32(..., .given = &seen). */

#define CLI_OPT_FLAG(n, s, d, h, ...) \
	{ .name = n, .has_arg = no_argument, .short_name = s, .help = h, .type = CLI_FLAG, .dest = d, ##__VA_ARGS__ }
#define CLI_OPT_STRING(n, s, m, d, h, ...) \
	{ .name = n, .has_arg = required_argument, .short_name = s, .metavar = m, .help = h, \
	  .type = CLI_STRING, .dest = d, ##__VA_ARGS__ }
#define CLI_OPT_U32(n, s, m, d, lo, hi, h, ...) \
	{ .name = n, .has_arg = required_argument, .short_name = s, .metavar = m, .help = h, \
	  .type = CLI_U32, .dest = d, .min = lo, .max = hi, ##__VA_ARGS__ }
#define CLI_OPT_CHOICE(n, s, m, d, w, c, h, ...) \
	{ .name = n, .has_arg = required_argument, .short_name = s, .metavar = m, .help = h, \
	  .type = CLI_CHOICE, .dest = d, .what = w, .choices = c, ##__VA_ARGS__ }
#define CLI_OPT_CUSTOM(n, a, s, m, d, fn, h, ...) \
	{ .name = n, .has_arg = a, .short_name = s, .metavar = m, .help = h, .type = CLI_CUSTOM, \
	  .dest = d, .parse = fn, ##__VA_ARGS__ }
#define CLI_JSON_ROW(d, h) CLI_OPT_FLAG("json", 'j', d, h)
#define CLI_HELP_ROW \
	{ .name = "help", .has_arg = no_argument, .short_name = 'h', .help = "show this help", \
	  .type = CLI_HELP_OPT }

/* The whole table of a command whose only options are --json and --help. */
#define CLI_JSON_HELP_TABLE(d, h) { CLI_JSON_ROW(d, h), CLI_HELP_ROW, { 0 } }

#define CLI_MAX_OPTIONS 32

struct cli_parser {
	const char *cmd;	/* subcommand name for messages */
	const char *args;	/* positional synopsis, "" if none */
	const char *summary;
	const struct cli_option *options;	/* ends with a zeroed entry */
	struct option long_options[CLI_MAX_OPTIONS + 1];
	char short_options[3 * CLI_MAX_OPTIONS + 2];
};

/*
 * Parses every option by its row. Returns 0 (positional arguments left at
 * argv[optind]), CLI_HELP_SHOWN after --help, or EXIT_USAGE after the
 * one-line error.
 */
int cli_parse(struct cli_parser *p, int argc, char **argv);
void cli_usage(const struct cli_parser *p, FILE *out);
/* What cli_parse() returns after printing --help. */
#define CLI_HELP_SHOWN (-1)

/*
 * Set when the command line holds --json (main.c looks before any parsing):
 * errors are then {"error": "<message>"} on stdout, with the same exit codes.
 */
extern bool cli_json_errors;
/*
 * When set ("isnguard.conf:12"), usage errors name it instead of the
 * command and point to no --help: the config file's options go through the
 * same option tables as the command line's.
 */
extern const char *cli_error_context;
/*
 * When set, cli_parse() writes the parser's table there instead of parsing
 * and returns CLI_HELP_SHOWN: how `isnguard completion` reads every
 * command's options from the tables --help is made from.
 */
extern FILE *cli_table_out;

/* "isnguard: <cmd>: <message>" on stderr, then a pointer to --help. Returns EXIT_USAGE. */
int cli_usage_error(const struct cli_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "isnguard: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* ISNGUARD_CLI_H */
