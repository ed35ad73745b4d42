// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "json_writer.h"
#include "parse.h"

static void cli_parser_init(struct cli_parser *p)
{
	size_t n = 0, s = 0;

	/* Leading ':' lets us tell a missing argument from an unknown option. */
	p->short_options[s++] = ':';
	for (const struct cli_option *o = p->options; o->name && n < CLI_MAX_OPTIONS; o++, n++) {
		p->long_options[n] = (struct option){
			.name = o->name, .has_arg = o->has_arg, .val = o->short_name,
		};
		if (o->short_name < 256) {
			p->short_options[s++] = (char)o->short_name;
			if (o->has_arg != no_argument)
				p->short_options[s++] = ':';
			if (o->has_arg == optional_argument)
				p->short_options[s++] = ':';
		}
	}
	p->long_options[n] = (struct option){ 0 };
	p->short_options[s] = '\0';
	optind = 1;
	opterr = 0;
}

static const struct cli_option *cli_find(const struct cli_parser *p, int val)
{
	for (const struct cli_option *o = p->options; o->name; o++)
		if (o->short_name == val)
			return o;
	return NULL;
}

/* getopt_long over the parser's table; returns the option's short_name, -1 at the end, '?' on error. */
static int cli_next_option(struct cli_parser *p, int argc, char **argv)
{
	int c = getopt_long(argc, argv, p->short_options, p->long_options, NULL);

	if (c == ':') {
		const struct cli_option *o = cli_find(p, optopt);

		cli_usage_error(p, "option --%s needs an argument",
				o ? o->name : "?");
		return '?';
	}
	if (c == '?') {
		if (optopt && optopt < 256)
			cli_usage_error(p, "unknown option -%c", optopt);
		else
			cli_usage_error(p, "unknown option %s", argv[optind - 1]);
	}
	return c;
}

void cli_usage(const struct cli_parser *p, FILE *out)
{
	fprintf(out, "Usage: %s %s [options]%s%s\n\n%s\n\nOptions:\n", PROG_NAME,
		p->cmd, *p->args ? " " : "", p->args, p->summary);
	for (const struct cli_option *o = p->options; o->name; o++) {
		char left[64];

		if (o->short_name < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name,
				 o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 o->metavar ? " " : "", o->metavar ? o->metavar : "");
		fprintf(out, "  %-30s %s\n", left, o->help);
	}
}

/* "a, b or c" */
static void choice_list(const char *const *choices, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; choices[i] && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static int store_option(struct cli_parser *p, const struct cli_option *o, int argc, char **argv)
{
	const char *why;
	char list[128];
	uint32_t value;
	int i;

	switch (o->type) {
	case CLI_HELP_OPT:
		cli_usage(p, stdout);
		return CLI_HELP_SHOWN;
	case CLI_FLAG:
		*(bool *)o->dest = true;
		return 0;
	case CLI_STRING:
		*(const char **)o->dest = optarg;
		return 0;
	case CLI_U32:
		if (parse_u32(optarg, &value, &why))
			return cli_usage_error(p, "bad --%s '%s': %s", o->name, optarg, why);
		if (value < o->min || value > o->max)
			return cli_usage_error(p, "bad --%s '%s': must be %u-%u", o->name, optarg,
					       o->min, o->max);
		*(uint32_t *)o->dest = value;
		return 0;
	case CLI_CHOICE:
		for (i = 0; o->choices[i]; i++)
			if (!strcmp(optarg, o->choices[i])) {
				*(int *)o->dest = i;
				return 0;
			}
		choice_list(o->choices, list, sizeof(list));
		return cli_usage_error(p, "unknown %s '%s': use %s", o->what, optarg, list);
	case CLI_CUSTOM:
		return o->parse(p, o, argc, argv, optarg);
	}
	return EXIT_USAGE;
}

FILE *cli_table_out;

/* The parser's table for the completion script (user/completion.c): a line per option. */
static void dump_table(const struct cli_parser *p)
{
	fprintf(cli_table_out, "args\t%s\n", p->args);
	for (const struct cli_option *o = p->options; o->name; o++) {
		fprintf(cli_table_out, "option\t--%s\t%s\t", o->name,
			o->has_arg == no_argument ? "" : o->metavar ? o->metavar : "VALUE");
		for (int i = 0; o->type == CLI_CHOICE && o->choices[i]; i++)
			fprintf(cli_table_out, "%s%s", i ? " " : "", o->choices[i]);
		fprintf(cli_table_out, "\n");
	}
}

int cli_parse(struct cli_parser *p, int argc, char **argv)
{
	int c, err;

	if (cli_table_out) {
		dump_table(p);
		return CLI_HELP_SHOWN;
	}
	cli_parser_init(p);
	while ((c = cli_next_option(p, argc, argv)) != -1) {
		const struct cli_option *o = cli_find(p, c);

		if (!o)
			return EXIT_USAGE;
		err = store_option(p, o, argc, argv);
		if (err)
			return err;
		if (o->given)
			*o->given = true;
	}
	return 0;
}


bool cli_json_errors;
const char *cli_error_context;

/* Under --json an error is one JSON object on stdout, as bpftool's p_err does. */
static void json_error(const char *message)
{
	struct json_writer jw;

	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "error", message);
	jw_end_object(&jw);
	jw_finish(&jw);
}

int cli_usage_error(const struct cli_parser *p, const char *fmt, ...)
{
	char message[512];
	va_list ap;
	int n;

	n = snprintf(message, sizeof(message), "%s: ", cli_error_context ? cli_error_context : p->cmd);
	va_start(ap, fmt);
	vsnprintf(message + n, sizeof(message) - (size_t)n, fmt, ap);
	va_end(ap);
	if (cli_json_errors)
		json_error(message);
	else if (cli_error_context)
		fprintf(stderr, "%s: %s\n", PROG_NAME, message);
	else
		fprintf(stderr, "%s: %s (see '%s %s --help')\n", PROG_NAME, message, PROG_NAME,
			p->cmd);
	return EXIT_USAGE;
}

void cli_error(const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (cli_json_errors)
		json_error(message);
	else
		fprintf(stderr, "%s: %s\n", PROG_NAME, message);
}
