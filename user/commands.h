/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One do_<cmd>() per subcommand; main.c holds the table. */
#ifndef ISNGUARD_COMMANDS_H
#define ISNGUARD_COMMANDS_H

int do_isn(int argc, char **argv);	/* isn.c */
int do_attach(int argc, char **argv);	/* attach.c */
int do_detach(int argc, char **argv);	/* attach.c */
int do_status(int argc, char **argv);	/* status.c */
int do_stats(int argc, char **argv);	/* stats.c */
int do_flows(int argc, char **argv);	/* flows.c */
int do_mode(int argc, char **argv);	/* key.c */
int do_key(int argc, char **argv);	/* key.c */
int do_synproxy(int argc, char **argv);	/* synproxy.c */
int do_apply(int argc, char **argv);	/* apply.c */
int do_config(int argc, char **argv);	/* config.c */
int do_purge(int argc, char **argv);	/* purge.c */
int do_check(int argc, char **argv);	/* check.c */
int do_prefix(int argc, char **argv);	/* prefix.c */
int do_exporter(int argc, char **argv);	/* exporter.c */
int do_monitor(int argc, char **argv);	/* monitor.c */

struct cmd;
/* The bash completion script for these commands, from their option tables (completion.c). */
int completion_bash(const struct cmd *commands);

#endif /* ISNGUARD_COMMANDS_H */
