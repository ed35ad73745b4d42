// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard completion bash: the bash completion script, made from the same
 * option tables as each command's --help (cli_table_out), so it offers each
 * command its own options, each option its own values (choices, files,
 * interfaces) and each command its own words (key rotate|set, config
 * check|example, mode siphash|md5|none, interfaces where it takes one).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* What completes a value or a positional word of this name. */
static void value_action(FILE *out, const char *metavar, const char *choices)
{
	if (choices && *choices)
		fprintf(out, "COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))", choices);
	else if (!strcmp(metavar, "FILE"))
		fprintf(out, "COMPREPLY=($(compgen -f -- \"$cur\"))");
	else if (!strcmp(metavar, "IFACE"))
		fprintf(out, "_isnguard_ifaces");
	else
		fprintf(out, "COMPREPLY=()");
}

/* One command's case: its options' values, its options, its positional words. */
static void command_case(FILE *out, const char *cmd, char *table)
{
	char words[256] = "", opts[1024] = "", *line, *save = NULL;
	bool iface = false, file = false;

	fprintf(out, "\t%s)\n\t\tcase $prev in\n", cmd);
	for (line = strtok_r(table, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[4] = { 0 }, *cursor = line;

		for (int i = 0; i < 4; i++)
			field[i] = strsep(&cursor, "\t");
		if (!strcmp(field[0], "args") && field[1]) {
			/*
			 * Lower-case words are literal; IFACE and FILE are what they
			 * say, unless an option's value ("set --from-file FILE").
			 */
			bool after_option = false;

			for (char *w = strtok(field[1], " |[].,"); w; w = strtok(NULL, " |[].,")) {
				bool value = after_option;

				after_option = w[0] == '-';
				if (value || after_option)
					continue;
				if (!strcmp(w, "IFACE"))
					iface = true;
				else if (!strcmp(w, "FILE"))
					file = true;
				else if (islower((unsigned char)w[0]))
					snprintf(words + strlen(words), sizeof(words) - strlen(words),
						 "%s%s", *words ? " " : "", w);
			}
			continue;
		}
		if (strcmp(field[0], "option") || !field[1])
			continue;
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts), "%s%s",
			 *opts ? " " : "", field[1]);
		if (field[2] && *field[2]) {
			fprintf(out, "\t\t%s) ", field[1]);
			value_action(out, field[2], field[3]);
			fprintf(out, "; return ;;\n");
		}
	}
	fprintf(out, "\t\tesac\n");
	fprintf(out, "\t\tif [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); "
		     "return; fi\n", opts);
	/* The command's own words first (key rotate|set), then what follows them. */
	if (*words)
		fprintf(out, "\t\tif [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"%s\" "
			     "-- \"$cur\")); return; fi\n", words);
	fprintf(out, "\t\tCOMPREPLY=()\n");
	if (iface)
		fprintf(out, "\t\t_isnguard_ifaces add\n");
	if (file)
		fprintf(out, "\t\tCOMPREPLY+=($(compgen -f -- \"$cur\"))\n");
	fprintf(out, "\t\t;;\n");
}

int completion_bash(const struct cmd *commands)
{
	FILE *out = stdout;
	char names[512] = "";

	fprintf(out, "# bash completion for isnguard, made by 'isnguard completion bash' from\n"
		     "# the option tables each command's --help is made from.\n"
		     "_isnguard_ifaces()\n{\n"
		     "\tlocal ifaces\n"
		     "\tifaces=$(ls /sys/class/net 2>/dev/null)\n"
		     "\tif [ \"$1\" = add ]; then COMPREPLY+=($(compgen -W \"$ifaces\" -- \"$cur\"));\n"
		     "\telse COMPREPLY=($(compgen -W \"$ifaces\" -- \"$cur\")); fi\n"
		     "}\n\n_isnguard()\n{\n"
		     "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n");
	for (const struct cmd *c = commands; c->name; c++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 *names ? " " : "", c->name);
	fprintf(out, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
		     "\t\tCOMPREPLY=($(compgen -W \"%s --help --version\" -- \"$cur\"))\n"
		     "\t\treturn\n\tfi\n\tcase ${COMP_WORDS[1]} in\n", names);
	for (const struct cmd *c = commands; c->name; c++) {
		char *table = NULL, *argv[] = { (char *)c->name, "--help", NULL };
		size_t len = 0;

		if (!strcmp(c->name, "help")) {
			fprintf(out, "\thelp) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")) ;;\n", names);
			continue;
		}
		cli_table_out = open_memstream(&table, &len);
		if (!cli_table_out)
			return EXIT_RUNTIME;
		c->fn(2, argv);
		fclose(cli_table_out);
		cli_table_out = NULL;
		command_case(out, c->name, table);
		free(table);
	}
	fprintf(out, "\tesac\n}\ncomplete -F _isnguard isnguard\n");
	return 0;
}
