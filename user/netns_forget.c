// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What one network namespace leaves in the maps every namespace shares,
 * forgotten when its last interface is detached: its resend records,
 * queues and slots (bpf/resend.h), and its own addresses
 * (bpf/local_addr.h), each keyed by the namespace's inode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "isnguard.h"
#include "pinned.h"
#include "state.h"

/*
 * Deletes the entries of the pinned map name that match() takes: their
 * keys collected in one walk, then deleted (a walk cannot go on from a key
 * deleted under it). 0 or -errno; a map not pinned has none.
 */
static int map_delete_where(const char *name, __u32 key_size, __u32 value_size,
			    bool (*match)(const void *key, const void *value, uint64_t netns_ino),
			    uint64_t netns_ino)
{
	unsigned char cur[64], next[64], value[128], *keys = NULL, *grown;
	int fd = pinned_map_open(name), err = 0;
	size_t count = 0, room = 0;
	void *prev = NULL;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (key_size > sizeof(next) || value_size > sizeof(value)) {
		close(fd);
		return -EPROTO;
	}
	while (!err && !bpf_map_get_next_key(fd, prev, next)) {
		if (!bpf_map_lookup_elem(fd, next, value) && match(next, value, netns_ino)) {
			if (count == room) {
				room = room ? 2 * room : 256;
				grown = realloc(keys, room * key_size);
				if (!grown) {
					err = -ENOMEM;
					break;
				}
				keys = grown;
			}
			memcpy(keys + count++ * key_size, next, key_size);
		}
		memcpy(cur, next, key_size);
		prev = cur;
	}
	for (size_t i = 0; !err && i < count; i++)
		if (bpf_map_delete_elem(fd, keys + i * key_size) && errno != ENOENT)
			err = -errno;
	free(keys);
	close(fd);
	return err;
}

static bool queues_of(const void *key, const void *value, uint64_t netns_ino)
{
	(void)value;
	return *(const __u64 *)key == netns_ino;
}

static bool slot_of(const void *key, const void *value, uint64_t netns_ino)
{
	(void)value;
	return ((const struct resend_slot_key *)key)->netns_ino == netns_ino;
}

static bool record_of(const void *key, const void *value, uint64_t netns_ino)
{
	(void)key;
	return ((const struct syn_resend *)value)->netns_ino == netns_ino;
}

int resend_state_forget(uint64_t netns_ino)
{
	return map_delete_where(ISN_MAP_SYN_RESEND, sizeof(struct flow_key),
				sizeof(struct syn_resend), record_of, netns_ino) ?:
	       map_delete_where(ISN_MAP_RESEND_SLOTS, sizeof(struct resend_slot_key),
				sizeof(struct resend_slot), slot_of, netns_ino) ?:
	       map_delete_where(ISN_MAP_RESEND_QUEUES, sizeof(__u64),
				sizeof(struct resend_queues), queues_of, netns_ino);
}

static bool local_addr_of(const void *key, const void *value, uint64_t netns_ino)
{
	(void)value;
	return ((const struct local_addr_key *)key)->netns_ino == netns_ino;
}

int local_addrs_forget(uint64_t netns_ino)
{
	return map_delete_where(ISN_MAP_LOCAL_ADDRS, sizeof(struct local_addr_key),
				sizeof(struct local_addr), local_addr_of, netns_ino);
}
