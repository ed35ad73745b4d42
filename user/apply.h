/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* isnguard apply (user/apply.c): the live state made to match a config file. */
#ifndef ISNGUARD_APPLY_H
#define ISNGUARD_APPLY_H

#include <stdbool.h>
#include "config.h"

/* Plans, and unless dry_run carries out, the changes; prints them. 0 or an exit code. */
int apply_config(const struct config *file, bool dry_run, bool json);

#endif /* ISNGUARD_APPLY_H */
