// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The slots of isn_stats, one per attached interface (include/isnguard.h):
 * attach claims one for the load it makes, and its programs count there
 * (bpf/stats.h, stats_slot). The record is a pinned array of their owners,
 * no program's map: a slot stays its interface's across detach and attach,
 * and goes to another interface only once every slot has been given and
 * its own is attached nowhere.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "loader.h"
#include "pinned.h"
#include "statslots.h"

static int slots_open(bool create)
{
	char path[256];
	int fd = pinned_map_open(ISN_MAP_STAT_SLOTS);

	if (fd >= 0 || fd != -ENOENT || !create)
		return fd;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, ISN_MAP_STAT_SLOTS, sizeof(__u32),
			    sizeof(struct stat_slot), ISN_STATS_SLOTS, NULL);
	if (fd < 0)
		return -errno;
	if (pin_path(path, sizeof(path), ISN_MAP_STAT_SLOTS) || bpf_obj_pin(fd, path)) {
		int err = -errno;

		close(fd);
		return err ? err : -ENAMETOOLONG;
	}
	return fd;
}

int stat_slots_read(struct stat_slot slots[ISN_STATS_SLOTS])
{
	int fd = slots_open(false);

	memset(slots, 0, sizeof(struct stat_slot) * ISN_STATS_SLOTS);
	if (fd < 0)
		return fd;
	for (__u32 i = 1; i < ISN_STATS_SLOTS; i++)
		if (bpf_map_lookup_elem(fd, &i, &slots[i]))
			memset(&slots[i], 0, sizeof(slots[i]));
	close(fd);
	return 0;
}

static bool owner_set(const struct link_key *k)
{
	return k->netns_ino || k->ifindex;
}

static bool same_owner(const struct link_key *a, const struct link_key *b)
{
	return a->netns_ino == b->netns_ino && a->ifindex == b->ifindex;
}

/* Whether isn_links has a record of owner: its interface attached, here or elsewhere. */
static bool owner_attached(int links_fd, const struct link_key *owner)
{
	struct link_info info;

	return links_fd >= 0 && !bpf_map_lookup_elem(links_fd, owner, &info);
}

/*
 * Slot's counts added to slot 0's and zeroed, CPU by CPU: a slot given to
 * another interface starts from 0, and the totals keep what it had.
 */
static int fold_into_slot_0(__u32 slot)
{
	int fd = pinned_map_open(ISN_MAP_STATS), ncpus = libbpf_num_possible_cpus(), err = 0;
	__u64 *from, *into;

	if (fd == -ENOENT)
		return 0;	/* new state: nothing counted yet */
	if (fd < 0 || ncpus <= 0)
		return fd < 0 ? fd : -EINVAL;
	from = calloc((size_t)ncpus, sizeof(*from));
	into = calloc((size_t)ncpus, sizeof(*into));
	for (__u32 stat = 0; stat < STAT_COUNT && from && into && !err; stat++) {
		__u32 src = slot * STAT_COUNT + stat, dst = stat;

		if (bpf_map_lookup_elem(fd, &src, from))
			break;	/* a kept map of one slot: nothing there */
		if (bpf_map_lookup_elem(fd, &dst, into)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpus; c++) {
			into[c] += from[c];
			from[c] = 0;
		}
		if (bpf_map_update_elem(fd, &dst, into, BPF_ANY) ||
		    bpf_map_update_elem(fd, &src, from, BPF_ANY))
			err = -errno;
	}
	if (!from || !into)
		err = -ENOMEM;
	free(from);
	free(into);
	close(fd);
	return err;
}

__u32 stat_slot_claim(const char *ifname, int ifindex)
{
	struct link_key me = { .netns_ino = netns_inode(), .ifindex = (__u32)ifindex };
	struct stat_slot slots[ISN_STATS_SLOTS], mine = { .owner = me };
	__u32 chosen = 0, never = 0, stale = 0;
	int fd = slots_open(true), links_fd, err;

	if (fd < 0) {
		cli_error("attach %s: warning: no record of isn_stats' slots (%s): its counters go "
			  "unattributed", ifname, strerror(-fd));
		return 0;
	}
	snprintf(mine.ifname, sizeof(mine.ifname), "%s", ifname);
	links_fd = pinned_map_open(ISN_MAP_LINKS);
	for (__u32 i = 1; i < ISN_STATS_SLOTS; i++) {
		if (bpf_map_lookup_elem(fd, &i, &slots[i]))
			memset(&slots[i], 0, sizeof(slots[i]));
		if (same_owner(&slots[i].owner, &me) && !chosen)
			chosen = i;
		else if (!owner_set(&slots[i].owner) && !never)
			never = i;
		else if (owner_set(&slots[i].owner) && !stale &&
			 !owner_attached(links_fd, &slots[i].owner))
			stale = i;
	}
	if (links_fd >= 0)
		close(links_fd);
	if (!chosen && (never || stale)) {
		chosen = never ? never : stale;
		err = fold_into_slot_0(chosen);
		if (err) {
			cli_error("attach %s: warning: clear isn_stats' slot %u: %s: its counters go "
				  "unattributed", ifname, chosen, strerror(-err));
			chosen = 0;
		}
	}
	if (chosen && bpf_map_update_elem(fd, &chosen, &mine, BPF_ANY)) {
		cli_error("attach %s: warning: record isn_stats' slot %u: %s", ifname, chosen,
			  strerror(errno));
		chosen = 0;
	}
	close(fd);
	return chosen;
}
