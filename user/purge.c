// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard purge: the kept state removed, what 'detach --keep-state' leaves behind. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "health.h"
#include "json_writer.h"
#include "loader.h"
#include "pinned.h"

int do_purge(int argc, char **argv)
{
	static bool json;
	const struct cli_option options[] = CLI_JSON_HELP_TABLE(&json, "print what was done as one JSON object");
	struct cli_parser p = {
		.cmd = "purge",
		.args = "",
		.summary = "Remove the kept state under the pin directory (flow tables, key,\n"
			   "settings, counters) and the resend tick of this namespace: what\n"
			   "'detach --keep-state' leaves. Refused while an interface is attached.",
		.options = options,
	};
	static struct health h;
	struct json_writer jw;
	int err;

	json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	if (require_root("purge"))
		return EXIT_RUNTIME;
	health_read(&h);
	for (int i = 0; i < h.links; i++) {
		const struct link_health *l = &h.link[i];

		if (!l->checked || !strcmp(l->state, "attached") ||
		    !strcmp(l->state, "partly-attached")) {
			cli_error("purge: %s is attached%s%s; detach it first", l->info.ifname,
				  l->netns[0] ? " in netns " : l->checked ? "" : " in another netns",
				  l->netns);
			return EXIT_RUNTIME;
		}
	}
	if (h.state && loader_purge())
		return EXIT_RUNTIME;
	if (json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "pin_dir", pin_dir());
		jw_bool_field(&jw, "purged", h.state);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		printf(h.state ? "purged %s\n" : "nothing to purge: no state in %s\n", pin_dir());
	}
	return 0;
}
