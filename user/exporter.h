/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* isnguard exporter: /metrics in Prometheus' text format (user/exporter.c). */
#ifndef ISNGUARD_EXPORTER_H
#define ISNGUARD_EXPORTER_H

#include <stdbool.h>
#include <stdio.h>

struct cli_parser;

/*
 * The 9100-9999 range of Prometheus' default port allocations is taken;
 * new exporters get ports past 10000. This one is clear of both the list
 * and the services common on hosts (Zabbix's 10050-10051, Kubernetes'
 * 10248-10259), and only loopback by default.
 */
#define EXPORTER_DEFAULT_LISTEN "127.0.0.1:10946"

struct exporter_params {
	const char *listen;	/* ADDR:PORT or [ADDR]:PORT */
	bool once;
};

/* The exporter's option table (the config file's [exporter] keys go through it). */
void exporter_parser(struct cli_parser *p);
struct exporter_params *exporter_params_current(void);

/* Every family, read from the pinned maps now. 0, or -errno when out could not be written. */
int metrics_write(FILE *out);

int do_exporter(int argc, char **argv);

/* The events to the journal while the exporter serves (user/journal.c): 0 or -1. */
int journal_start(void);
void journal_stop(void);

#endif /* ISNGUARD_EXPORTER_H */
