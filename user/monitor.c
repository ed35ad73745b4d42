// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard monitor: the datapath's events as they happen (bpf/events.h),
 * a line each, like `conntrack -E` or `cilium monitor`: auto mode switching
 * a port, a flood's start and end, a full table, a key rotation, sampled
 * drops. Its own ring (isn_events), so the exporter's journal sees them too.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "events.h"
#include "json_writer.h"
#include "pinned.h"

/* How long a wait for events lasts before Ctrl-C is looked at again. */
#define MONITOR_POLL_MS 200

struct monitor_params {
	bool json;
};

static struct monitor_params monitor_prm;

static const struct cli_option monitor_options[] = CLI_JSON_HELP_TABLE(
	&monitor_prm.json, "print each event as one JSON object a line");

static int print_event(void *ctx, const struct isn_event *ev)
{
	const struct monitor_params *prm = ctx;
	char when[40], text[256];

	if (prm->json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		event_json(&jw, ev);
		jw_finish(&jw);
	} else {
		event_time_iso(ev->ts_ns, when, sizeof(when));
		event_text(ev, text, sizeof(text));
		printf("%s %s\n", when, text);
	}
	fflush(stdout);
	return 0;
}

int do_monitor(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "monitor",
		.args = "",
		.summary = "Print the datapath's events as they happen, until Ctrl-C, each line\n"
			   "starting with its time (UTC, ms): auto mode switching a port's cookies\n"
			   "on or off and a flood's start and end (with the SYN rate that decided),\n"
			   "a full table, a key rotation, dropped packets (sampled: at most 10 a\n"
			   "second per CPU, with reason and addresses). Lost events are counted in\n"
			   "stats (events_lost). One monitor at a time; the exporter reads its own.",
		.options = monitor_options,
	};
	struct event_reader reader;
	struct timespec now = { 0 };
	sigset_t stop;
	int err;

	monitor_prm = (struct monitor_params){ 0 };
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	/* Blocked, and taken between waits: the reader always gives its ring back. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGPIPE);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	err = event_reader_open(&reader, ISN_EVENT_READER_MONITOR, p.cmd, print_event, &monitor_prm);
	if (err)
		return err;
	fprintf(stderr, "%s: monitor: reading the datapath's events (Ctrl-C stops)\n", PROG_NAME);
	while (sigtimedwait(&stop, NULL, &now) < 0) {
		err = event_reader_poll(&reader, MONITOR_POLL_MS);
		if (err < 0) {
			cli_error("monitor: read events: %s", strerror(-err));
			break;
		}
		err = 0;
	}
	event_reader_close(&reader);
	return err ? EXIT_RUNTIME : 0;
}
