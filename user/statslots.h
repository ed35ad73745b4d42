/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which attached interface each slot of isn_stats counts for
 * (user/statslots.c): the pinned map isn_stat_slots, userspace's own, which
 * attach writes and stats and the exporter read (include/isnguard.h,
 * ISN_STATS_SLOTS).
 */
#ifndef ISNGUARD_STATSLOTS_H
#define ISNGUARD_STATSLOTS_H

#include <net/if.h>

#include "isnguard.h"

/* A slot's owner; all zero while the slot was never given. */
struct stat_slot {
	struct link_key owner;
	char ifname[IFNAMSIZ];
};

/*
 * The slot of the interface ifindex of this network namespace, for its
 * load's .rodata: the one it had (a restart keeps counting there), else one
 * never given, else one whose interface is no longer attached anywhere, its
 * counts first added to slot 0's so that totals never go back. 0 when every
 * slot is taken, or the record cannot be kept (a warning says so).
 */
__u32 stat_slot_claim(const char *ifname, int ifindex);

/* Every slot's owner (slot 0's stays zero); 0 or -errno (-ENOENT: no record). */
int stat_slots_read(struct stat_slot slots[ISN_STATS_SLOTS]);

#endif /* ISNGUARD_STATSLOTS_H */
