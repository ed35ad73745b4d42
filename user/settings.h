/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The settings an attach writes into the state (user/settings.c). */
#ifndef ISNGUARD_USER_SETTINGS_H
#define ISNGUARD_USER_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "isnguard.skel.h"
#include "loader.h"

int settings_write_config(struct isnguard *skel, const struct attach_request *req, bool fresh,
			  uint32_t max_flows, bool new_sweeper);
int settings_write_fresh_key(struct isnguard *skel);
int settings_mark_was_on(int fd);
int settings_write_synproxy(struct isnguard *skel, const struct synproxy_request *sp);
int settings_write_policy(struct isnguard *skel, const struct attach_request *req);

#endif /* ISNGUARD_USER_SETTINGS_H */
