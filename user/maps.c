// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "maps.h"
#include "pinned.h"

const struct map_layout isn_flows_layout = {
	ISN_MAP_FLOWS, BPF_MAP_TYPE_HASH, sizeof(struct flow_key),
	sizeof(struct flow_state), 1,
};
const struct map_layout isn_opening_layout = {
	ISN_MAP_OPENING, BPF_MAP_TYPE_LRU_HASH, sizeof(struct flow_key),
	sizeof(struct flow_state), 1,
};
const struct map_layout isn_config_layout = {
	ISN_MAP_CONFIG, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct isn_config), 1,
};
const struct map_layout isn_key_layout = {
	ISN_MAP_KEY, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct isn_key), ISN_KEY_SLOTS,
};
const struct map_layout isn_stats_layout = {
	ISN_MAP_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32), sizeof(__u64), STAT_COUNT,
};

static bool layout_matches(const struct map_layout *want, const struct bpf_map_info *got)
{
	return got->type == want->type && got->key_size == want->key_size &&
	       got->value_size == want->value_size && got->max_entries >= want->min_entries;
}

int map_open_checked(const char *cmd, const struct map_layout *layout,
		     struct bpf_map_info *info)
{
	struct bpf_map_info got = { 0 };
	__u32 info_len = sizeof(got);
	char path[256];
	int fd = pinned_map_open(layout->name);

	if (fd < 0) {
		report_open_error(cmd, layout->name, fd);
		return fd;
	}
	pin_path(path, sizeof(path), layout->name);
	if (bpf_obj_get_info_by_fd(fd, &got, &info_len)) {
		int err = -errno;

		cli_error("%s: %s: %s", cmd, path, strerror(-err));
		close(fd);
		return err;
	}
	if (!layout_matches(layout, &got)) {
		cli_error("%s: %s is not this build's map (type %u, key %u, value %u bytes, "
			  "%u entries; want type %u, key %u, value %u, >= %u entries)",
			  cmd, path, got.type, got.key_size, got.value_size, got.max_entries,
			  layout->type, layout->key_size, layout->value_size, layout->min_entries);
		close(fd);
		return -EPROTO;
	}
	if (info)
		*info = got;
	return fd;
}

/*
 * Entries per batch call. The kernel copies whole hash buckets, so this must
 * exceed the longest bucket (ENOSPC otherwise); buckets of an LRU hash hold a
 * handful of entries, and 4096 keeps one batch well under a megabyte.
 */
#define FLOW_BATCH 4096

/*
 * Batch lookup rather than get_next_key: one syscall per FLOW_BATCH entries,
 * and no restart from the first key when the entry just read is evicted
 * under us, which on a busy LRU table makes a get_next_key walk revisit
 * entries. Hash-map batch ops (5.6) predate bpf_timer (5.15), which the
 * datapath needs anyway, so there is no fallback.
 */
int map_walk(int fd, size_t key_size, size_t value_size, map_chunk_fn visit, void *ctx)
{
	void *keys = calloc(FLOW_BATCH, key_size);
	void *values = calloc(FLOW_BATCH, value_size);
	__u32 token;		/* hash maps resume from a u32 bucket index */
	bool first = true;
	int err = 0;

	if (!keys || !values) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 count = FLOW_BATCH;
		int ret = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys,
					       values, &count, NULL);

		if (ret && ret != -ENOENT) {
			err = ret;
			break;
		}
		if (count) {
			err = visit(keys, values, count, ctx);
			if (err)
				break;
		}
		if (ret == -ENOENT)	/* the last chunk, possibly empty */
			break;
		first = false;
	}
out:
	free(keys);
	free(values);
	return err;
}

struct flow_visit {
	flow_chunk_fn visit;
	void *ctx;
};

static int flow_chunk(const void *keys, const void *values, size_t count, void *ctx)
{
	const struct flow_visit *v = ctx;

	return v->visit(keys, values, count, v->ctx);
}

int flow_table_walk(int fd, flow_chunk_fn visit, void *ctx)
{
	struct flow_visit v = { visit, ctx };

	return map_walk(fd, sizeof(struct flow_key), sizeof(struct flow_state), flow_chunk, &v);
}

static int count_chunk(const struct flow_key *keys, const struct flow_state *states,
		       size_t count, void *ctx)
{
	(void)keys;
	(void)states;
	*(size_t *)ctx += count;
	return 0;
}


int flow_tables_open(const char *cmd, struct flow_tables *t)
{
	const struct map_layout *layouts[2] = { &isn_flows_layout, &isn_opening_layout };

	t->fd[0] = t->fd[1] = -1;
	for (int i = 0; i < 2; i++) {
		struct bpf_map_info info = { 0 };

		t->fd[i] = map_open_checked(cmd, layouts[i], &info);
		if (t->fd[i] < 0) {
			int err = t->fd[i];

			flow_tables_close(t);
			return err;
		}
		t->max_entries[i] = info.max_entries;
	}
	return 0;
}

void flow_tables_close(struct flow_tables *t)
{
	for (int i = 0; i < 2; i++) {
		if (t->fd[i] >= 0)
			close(t->fd[i]);
		t->fd[i] = -1;
	}
}

int flow_tables_walk(const struct flow_tables *t, flow_chunk_fn visit, void *ctx)
{
	for (int i = 0; i < 2; i++) {
		int err = flow_table_walk(t->fd[i], visit, ctx);

		if (err)
			return err;
	}
	return 0;
}

int flow_tables_count(const struct flow_tables *t, size_t *count)
{
	*count = 0;
	return flow_tables_walk(t, count_chunk, count);
}

int flow_table_count(int fd, size_t *count)
{
	*count = 0;
	return flow_table_walk(fd, count_chunk, count);
}
