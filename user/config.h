/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The config file (user/config.c): INI, read with libinih. [global] and
 * [interface NAME] sections whose keys are attach's long options without
 * "--", each value parsed by attach's own option table; [exporter] the
 * exporter's.
 */
#ifndef ISNGUARD_CONFIG_H
#define ISNGUARD_CONFIG_H

#include <limits.h>
#include <net/if.h>

#include "attach.h"

#define CONFIG_DEFAULT_PATH "/etc/isnguard/isnguard.conf"
#define CONFIG_MAX_IFACES 64
/* `isnguard exporter`'s section: its keys are the exporter's long options. */
#define CONFIG_EXPORTER_SECTION "exporter"

struct config_iface {
	char name[IFNAMSIZ];
	int line;			/* of its [interface NAME] */
	struct attach_params prm;	/* [global]'s, with the section's own keys over them */
	struct attach_request req;	/* what attach would be asked */
};

struct config {
	char path[PATH_MAX];
	struct attach_params global;
	int ifaces;
	struct config_iface iface[CONFIG_MAX_IFACES];
	char exporter_listen[64];	/* [exporter] listen, "" when not set */
	int errors;			/* each reported as "PATH:LINE: ..." */
};

/*
 * Reads and checks path: 0 when it holds no error, else EXIT_USAGE (errors
 * on stderr, one line each with its line number) or EXIT_RUNTIME (cannot
 * be read).
 */
int config_load(const char *path, struct config *cfg);
/* $ISNGUARD_CONFIG, else CONFIG_DEFAULT_PATH: what apply and config check read. */
const char *config_default_path(void);

int do_config(int argc, char **argv);

#endif /* ISNGUARD_CONFIG_H */
