/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One do_<cmd>() per subcommand; main.c holds the table. */
#ifndef ISNGUARD_COMMANDS_H
#define ISNGUARD_COMMANDS_H

int do_isn(int argc, char **argv);

#endif /* ISNGUARD_COMMANDS_H */
