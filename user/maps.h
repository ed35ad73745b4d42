/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The commands that read or write the datapath's state (stats, flows, mode,
 * key) open its pinned maps through here, so each one is checked against the
 * layout in include/isnguard.h before a byte is read or written: a CLI and a
 * datapath from different builds fail with one line instead of misreading.
 */
#ifndef ISNGUARD_MAPS_H
#define ISNGUARD_MAPS_H

#include <stddef.h>
#include <linux/bpf.h>

#include "isnguard.h"

struct map_layout {
	const char *name;		/* pin name, ISN_MAP_* */
	enum bpf_map_type type;
	__u32 key_size;
	__u32 value_size;
	__u32 min_entries;
};

extern const struct map_layout isn_flows_layout;
extern const struct map_layout isn_opening_layout;
extern const struct map_layout isn_config_layout;
extern const struct map_layout isn_key_layout;
extern const struct map_layout isn_stats_layout;

/*
 * Opens the pinned map and checks it has the layout. Returns an fd, or a
 * negative errno after printing the one-line error for cmd ("not attached"
 * when nothing is pinned). info may be NULL.
 */
int map_open_checked(const char *cmd, const struct map_layout *layout,
		     struct bpf_map_info *info);

/* Called with each chunk of a map's keys and values; a nonzero return stops the walk with it. */
typedef int (*map_chunk_fn)(const void *keys, const void *values, size_t count, void *ctx);

/*
 * Visits every entry of a hash map in chunks (batch lookups), its key and
 * value of the sizes given. Returns 0 or -errno.
 */
int map_walk(int fd, size_t key_size, size_t value_size, map_chunk_fn visit, void *ctx);

/* Called with each chunk of the flow table; a nonzero return stops the walk with it. */
typedef int (*flow_chunk_fn)(const struct flow_key *keys,
			     const struct flow_state *states, size_t count,
			     void *ctx);

/* Visits every entry of the flow table in chunks. Returns 0 or -errno. */
int flow_table_walk(int fd, flow_chunk_fn visit, void *ctx);

/* Both flow tables: the connections (isn_flows) and the handshakes (isn_opening). */
struct flow_tables {
	int fd[2];
	__u32 max_entries[2];
};

/* Opens both, layout-checked; on failure prints the one-line error. */
int flow_tables_open(const char *cmd, struct flow_tables *t);
void flow_tables_close(struct flow_tables *t);
/* Visits every entry of both tables. */
int flow_tables_walk(const struct flow_tables *t, flow_chunk_fn visit, void *ctx);
int flow_tables_count(const struct flow_tables *t, size_t *count);
/* The entries of one flow table. */
int flow_table_count(int fd, size_t *count);

#endif /* ISNGUARD_MAPS_H */
