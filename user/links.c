// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The records of isn_links, one per attachment (network namespace inode and
 * ifindex): counted, looked up by name, forgotten, and pruned where they no
 * longer stand for an attachment (its device gone, its programs unloaded).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "isnguard.h"
#include "loader.h"
#include "pinned.h"
#include "state.h"

/* True while a program id of the record still names a loaded program. */
static bool link_programs_exist(const struct link_info *info)
{
	const uint32_t ids[] = { info->ingress_prog_id, info->egress_prog_id };

	for (size_t i = 0; i < 2; i++) {
		int fd = ids[i] ? bpf_prog_get_fd_by_id(ids[i]) : -1;

		if (fd >= 0) {
			close(fd);
			return true;
		}
	}
	return false;
}

/*
 * Whether a record no longer stands for an attachment. In this network
 * namespace that is asked of the interface itself (deleted interfaces take
 * their programs with them); elsewhere, of the programs it recorded, which
 * go with their interface (the sweeper's timer holds isnguard_sweeper, not
 * them).
 */
static bool link_is_stale(int fd, const struct link_key *key, uint64_t here)
{
	struct attachment att;
	struct link_info info;

	if (key->netns_ino == here) {
		loader_query((int)key->ifindex, &att);
		return !att.ingress && !att.egress;
	}
	return !bpf_map_lookup_elem(fd, key, &info) && !link_programs_exist(&info);
}

/*
 * The records of isn_links that still stand for an attachment, counted;
 * with prune, the others, and ifindex's here, are deleted. Returns the
 * count, or -errno.
 */
static int links_walk(int ifindex, bool prune)
{
	struct link_key cur, next, stale[ISN_MAX_LINKS];
	uint64_t here = netns_inode();
	int fd = pinned_map_open(ISN_MAP_LINKS);
	int remaining = 0, nstale = 0;
	void *prev = NULL;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if ((cur.netns_ino == here && (int)cur.ifindex == ifindex) ||
		    link_is_stale(fd, &cur, here)) {
			if (prune && nstale < ISN_MAX_LINKS)
				stale[nstale++] = cur;
			continue;
		}
		remaining++;
	}
	for (int i = 0; i < nstale; i++)
		bpf_map_delete_elem(fd, &stale[i]);
	close(fd);
	return remaining;
}

int links_live(void)
{
	return links_walk(0, false);	/* no interface has index 0 */
}

/*
 * Forgets ifindex in isn_links, and every record that no longer stands for
 * an attachment. Returns how many attachments remain, or -errno.
 */
int forget_link(int ifindex)
{
	return links_walk(ifindex, true);
}

int links_here_names(char (*names)[IFNAMSIZ], int max)
{
	struct link_key cur, next;
	struct link_info info;
	uint64_t here = netns_inode();
	int fd = pinned_map_open(ISN_MAP_LINKS), count = 0;
	void *prev = NULL;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	while (count < max && !bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if (cur.netns_ino != here)
			continue;
		if (names && !bpf_map_lookup_elem(fd, &cur, &info))
			snprintf(names[count], IFNAMSIZ, "%s", info.ifname);
		count++;
	}
	close(fd);
	return count;
}

int links_here(void)
{
	return links_here_names(NULL, ISN_MAX_LINKS);
}

int link_index_by_name(const char *ifname)
{
	struct link_key cur, next;
	struct link_info info;
	uint64_t here = netns_inode();
	int fd = pinned_map_open(ISN_MAP_LINKS), found = -ENOENT;
	void *prev = NULL;

	if (fd < 0)
		return fd;
	while (found < 0 && !bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if (cur.netns_ino == here && !bpf_map_lookup_elem(fd, &cur, &info) &&
		    !strncmp(info.ifname, ifname, sizeof(info.ifname)))
			found = (int)cur.ifindex;
	}
	close(fd);
	return found;
}

int link_record(int ifindex, struct link_info *info)
{
	struct link_key key = { .netns_ino = netns_inode(), .ifindex = (uint32_t)ifindex };
	int fd = pinned_map_open(ISN_MAP_LINKS), err = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &key, info))
		err = -errno;
	close(fd);
	return err;
}

uint32_t link_record_flags(int ifindex)
{
	struct link_info info;

	return link_record(ifindex, &info) ? 0 : info.flags;
}

/* ISN_MAP_BUILDS, made on first use: userspace's own, no program reads it. */
static int builds_open(bool create)
{
	char path[256];
	int fd = pinned_map_open(ISN_MAP_BUILDS);

	if (fd >= 0 || !create)
		return fd;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, ISN_MAP_BUILDS, sizeof(struct link_key),
			    ISN_BUILD_ID_LEN, ISN_MAX_LINKS, NULL);
	if (fd < 0)
		return -errno;
	if (pin_path(path, sizeof(path), ISN_MAP_BUILDS) || bpf_obj_pin(fd, path)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int link_build_record(int ifindex, const unsigned char *build_id)
{
	struct link_key key = { .netns_ino = netns_inode(), .ifindex = (uint32_t)ifindex };
	int fd = builds_open(true), err = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(fd, &key, build_id, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

bool link_build_is(int ifindex, const unsigned char *build_id)
{
	struct link_key key = { .netns_ino = netns_inode(), .ifindex = (uint32_t)ifindex };
	unsigned char got[ISN_BUILD_ID_LEN];
	int fd = builds_open(false);
	bool same;

	if (fd < 0)
		return false;
	same = !bpf_map_lookup_elem(fd, &key, got) && !memcmp(got, build_id, sizeof(got));
	close(fd);
	return same;
}
