// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The state pinned under pin_dir(): reusing the maps a load finds there,
 * upgrading kept maps of another build's layout (64-byte flow tables, fewer
 * counters, another sweeper), pinning this load's, the isn_links records,
 * the state lock and removing it all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "hooks.h"
#include "isnguard.h"
#include "isnguard.skel.h"
#include "loader.h"
#include "maps.h"
#include "pinned.h"
#include "state.h"

static const char *const pinned_maps[] = {
	ISN_MAP_FLOWS, ISN_MAP_OPENING, ISN_MAP_CONFIG, ISN_MAP_KEY, ISN_MAP_STATS, ISN_MAP_LINKS,
	ISN_MAP_SYNPROXY, ISN_MAP_SYNPROXY_PORTS, ISN_MAP_SYN_RATE, ISN_MAP_SWEEPER,
	ISN_MAP_FLOW_COUNT, ISN_MAP_SYN_RESEND, ISN_MAP_SWEEP_FLOWS, ISN_MAP_SWEEP_OPENING,
	ISN_MAP_SWEEP_LONG, ISN_MAP_RESEND_QUEUES, ISN_MAP_RESEND_SLOTS, ISN_MAP_LOCAL_ADDRS,
	ISN_MAP_SYN_POLICY, ISN_MAP_SYNPROXY_MONITOR, ISN_MAP_PREFIX4, ISN_MAP_PREFIX6,
	ISN_MAP_SYN_BUCKETS, ISN_MAP_SYN_TOTAL,
	ISN_MAP_EVENTS, ISN_MAP_EVENTS_LOG, ISN_MAP_EVENT_STATE, ISN_MAP_EVENT_DROPS,
};
_Static_assert(sizeof(pinned_maps) / sizeof(pinned_maps[0]) == STATE_MAP_COUNT,
	       "STATE_MAP_COUNT is how many pinned_maps there are");

/*
 * A pinned map another isnguard build made, whose entries this one cannot
 * read: one line, with its layout (got) beside this build's.
 */
void report_other_build(const char *ifname, const char *name,
			       const struct bpf_map_info *got, __u32 type, __u32 key, __u32 value)
{
	char path[256];

	pin_path(path, sizeof(path), name);
	cli_error("attach %s: %s was made by another isnguard build (type %u, key %u, value %u "
		  "bytes; this build's: %u, %u, %u), so the state there cannot be kept: remove %s "
		  "to start afresh (kept connections then lose their translation)", ifname, path,
		  got->type, got->key_size, got->value_size, type, key, value, pin_dir());
}

/*
 * --max-flows of the kept state, from its config; -EPROTO, with the
 * config's map info in *info, when another build made it.
 */
int pinned_max_flows(uint32_t *max_flows, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);
	struct isn_config cfg;
	uint32_t zero = 0;
	int fd = pinned_map_open(ISN_MAP_CONFIG);
	int err;

	if (fd < 0)
		return fd;
	memset(info, 0, sizeof(*info));
	err = bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
	if (!err && info->value_size != sizeof(cfg))
		err = -EPROTO;	/* and its lookup would not fit cfg */
	if (!err)
		err = bpf_map_lookup_elem(fd, &zero, &cfg) ? -errno : 0;
	close(fd);
	if (!err)
		*max_flows = cfg.max_flows;
	return err || *max_flows ? err : -EPROTO;
}

void kept_maps_init(struct kept_maps *km)
{
	for (size_t i = 0; i < sizeof(km->old_fd) / sizeof(km->old_fd[0]); i++)
		km->old_fd[i] = -1;
	km->new_sweeper = false;
	km->flows_copied = false;
}

/*
 * Kept maps of another layout whose content nothing needs: made anew even
 * while another build's programs use the old one (each its own until it is
 * replaced too). The source buckets: a source forgotten starts again with
 * a full bucket, as one evicted does.
 */
static bool is_soft_state_map(const char *name)
{
	return !strcmp(name, ISN_MAP_SYN_BUCKETS);
}

bool kept_maps_replaced(const struct kept_maps *km)
{
	for (int i = 0; i < STATE_MAP_COUNT; i++)
		if (km->old_fd[i] >= 0 && !is_soft_state_map(pinned_maps[i]))
			return true;
	return km->new_sweeper || km->flows_copied;
}

void kept_maps_close(struct kept_maps *km)
{
	for (size_t i = 0; i < sizeof(km->old_fd) / sizeof(km->old_fd[0]); i++) {
		if (km->old_fd[i] >= 0)
			close(km->old_fd[i]);
		km->old_fd[i] = -1;
	}
}

static int state_map_index(const char *name)
{
	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		if (!strcmp(name, pinned_maps[i]))
			return (int)i;
	return -1;
}

/*
 * struct flow_state of the builds before its cache-line layout (64 bytes:
 * host_ack among the fields every segment reads, no padding). Kept flow
 * tables of that layout are copied into this build's, entry by entry, so
 * an upgrade keeps its connections translated.
 */
struct flow_state_64 {
	__u32 seq_delta, host_isn, wire_isn, flags, hash, host_ack, host_snd_nxt;
	__u32 ts_delta, peer_tsval;
	__u16 peer_window;
	__u8 wscale_host, wscale_wire, peer_wscale_wire, peer_wscale_host;
	__u16 open_cpu;
	__u32 sweep_id;
	__u64 created_ns, last_seen_ns;
};
_Static_assert(sizeof(struct flow_state_64) == 64, "the 64-byte flow_state");

/* Whether a pinned map is a flow table of the 64-byte layout, for map. */
static bool is_flow_table_64(const struct bpf_map *map, const struct bpf_map_info *info)
{
	const char *name = bpf_map__name(map);

	return (!strcmp(name, ISN_MAP_FLOWS) || !strcmp(name, ISN_MAP_OPENING)) &&
	       info->type == bpf_map__type(map) && info->key_size == sizeof(struct flow_key) &&
	       info->value_size == sizeof(struct flow_state_64);
}

static void flow_state_from_64(struct flow_state *st, const struct flow_state_64 *old)
{
	memset(st, 0, sizeof(*st));
	st->seq_delta = old->seq_delta;
	st->host_isn = old->host_isn;
	st->wire_isn = old->wire_isn;
	st->flags = old->flags;
	st->hash = old->hash;
	st->host_snd_nxt = old->host_snd_nxt;
	st->ts_delta = old->ts_delta;
	st->peer_tsval = old->peer_tsval;
	st->peer_window = old->peer_window;
	st->wscale_host = old->wscale_host;
	st->wscale_wire = old->wscale_wire;
	st->peer_wscale_wire = old->peer_wscale_wire;
	st->peer_wscale_host = old->peer_wscale_host;
	st->open_cpu = old->open_cpu;
	st->host_ack = old->host_ack;
	st->sweep_id = old->sweep_id;
	st->created_ns = old->created_ns;
	st->last_seen_ns = old->last_seen_ns;
}

/*
 * Every entry of a kept flow table of the 64-byte layout into this load's.
 * No program of the old build is attached anywhere (reuse_pinned_maps),
 * but its sweeper's timer still runs on the old tables until their pins
 * go: an entry it removes meanwhile is copied or not, as the batch walk
 * (map_walk) meets it (it was idle past its timeout: the new sweeper
 * removes a copy), and the slot ids
 * it writes do not matter, since the sweeper's maps are made anew over
 * copied tables and the new one gives every entry a slot
 * (sweep_flows_adopted). Ingress runs already: a tuple it has given a new
 * connection since (a cookie ACK) keeps that newer entry. isn_flow_count
 * is counted again once the old tables are gone (recount_flows).
 */
static int copy_chunk_64(const void *keys, const void *values, size_t count, void *ctx)
{
	const struct flow_key *key = keys;
	const struct flow_state_64 *old = values;
	struct flow_state st;

	for (size_t i = 0; i < count; i++) {
		flow_state_from_64(&st, &old[i]);
		if (bpf_map_update_elem(*(int *)ctx, &key[i], &st, BPF_NOEXIST) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int copy_flows_64(int from, int to)
{
	return map_walk(from, sizeof(struct flow_key), sizeof(struct flow_state_64), copy_chunk_64,
			&to);
}

/*
 * isn_flow_count set to the entries isn_flows holds, after a copy: the old
 * sweeper subtracted the entries it removed from the old table, copied or
 * not, and the count held entries that a newer one replaced. A count the
 * datapath adds between the walk and the write is lost (a new connection
 * in those microseconds; the sweeper's removal of it later leaves the
 * count one low, never high, so --max-flows is never exceeded by it).
 */
static int recount_flows(struct isnguard *skel)
{
	size_t entries;
	__u32 zero = 0;
	__s64 count;
	int err = flow_table_count(bpf_map__fd(skel->maps.isn_flows), &entries);

	if (err)
		return err;
	count = (__s64)entries;
	return bpf_map_update_elem(bpf_map__fd(skel->maps.isn_flow_count), &zero, &count,
				   BPF_EXIST) ? -errno : 0;
}

/* The sweeper's map and its queues: made anew together, or reused together. */
static const char *const sweeper_maps[] = {
	ISN_MAP_SWEEPER, ISN_MAP_SWEEP_FLOWS, ISN_MAP_SWEEP_OPENING, ISN_MAP_SWEEP_LONG,
};

static bool is_sweeper_map(const char *name)
{
	for (size_t i = 0; i < sizeof(sweeper_maps) / sizeof(sweeper_maps[0]); i++)
		if (!strcmp(name, sweeper_maps[i]))
			return true;
	return false;
}

/* The pinned map's info, and whether its type, key and value are map's. */
static bool pinned_layout_is(int fd, const struct bpf_map *map, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len))
		return false;
	return info->type == bpf_map__type(map) && info->key_size == bpf_map__key_size(map) &&
	       info->value_size == bpf_map__value_size(map);
}

/* Whether a kept isn_flows or isn_opening is of the 64-byte layout. */
static bool pinned_flows_64(struct isnguard *skel)
{
	const struct bpf_map *maps[] = { skel->maps.isn_flows, skel->maps.isn_opening };
	bool found = false;

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct bpf_map_info info;
		int fd = pinned_map_open(bpf_map__name(maps[i]));

		if (fd < 0)
			continue;
		if (!pinned_layout_is(fd, maps[i], &info) && is_flow_table_64(maps[i], &info))
			found = true;
		close(fd);
	}
	return found;
}

/* Whether the sweeper's maps are all pinned, each of this build's layout. */
static bool pinned_sweeper_reusable(struct isnguard *skel)
{
	struct bpf_map_info info;

	for (size_t i = 0; i < sizeof(sweeper_maps) / sizeof(sweeper_maps[0]); i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(skel->obj, sweeper_maps[i]);
		int fd = pinned_map_open(sweeper_maps[i]);
		bool same = fd >= 0 && map && pinned_layout_is(fd, map, &info);

		if (fd >= 0)
			close(fd);
		if (!same)
			return false;
	}
	return true;
}


/*
 * Maps already pinned are reused, so flows, key and mode survive a reload.
 * This is done by hand rather than with LIBBPF_PIN_BY_NAME: libbpf's reuse
 * check compares the definition's map_flags with the kernel's, and the
 * kernel does not keep BPF_F_WRONLY (it belongs to the creating fd only).
 * Pinned maps of another layout go as struct kept_maps says.
 */
int reuse_pinned_maps(struct isnguard *skel, const char *ifname, struct kept_maps *km)
{
	bool kept = pinned_state_exists();
	bool flows_64 = kept && pinned_flows_64(skel);
	bool sweeper_other = kept && !pinned_sweeper_reusable(skel);
	/* Copied flow tables get a new sweeper too: the old one's slots are not theirs. */
	bool sweeper_anew = sweeper_other || flows_64;
	const char *replaced = NULL;	/* a map made anew in the place of a pinned one */
	struct bpf_map_info info;
	struct bpf_map *map;
	char path[256], msg[128];

	km->new_sweeper = sweeper_other;
	km->flows_copied = flows_64;
	bpf_object__for_each_map(map, skel->obj) {
		const char *name = bpf_map__name(map);
		int fd, err, idx = state_map_index(name);
		bool same;

		if (bpf_map__is_internal(map) || idx < 0)
			continue;	/* .rodata (l3_device, the MSS tables), scratch: this load's own */
		pin_path(path, sizeof(path), name);
		fd = pinned_map_open(name);
		if (fd == -ENOENT)
			continue;
		if (fd < 0) {
			cli_error("attach %s: open %s: %s", ifname, path, strerror(-fd));
			return fd;
		}
		if ((sweeper_anew && is_sweeper_map(name)) ||
		    (!strcmp(name, ISN_MAP_STATS) && pinned_layout_is(fd, map, &info) &&
		     info.max_entries < bpf_map__max_entries(map)) ||
		    (!strcmp(name, ISN_MAP_SYN_RESEND) && !pinned_layout_is(fd, map, &info))) {
			km->old_fd[idx] = fd;	/* made anew, pinned in its place */
			replaced = name;
			continue;
		}
		if (is_soft_state_map(name) && (!pinned_layout_is(fd, map, &info) ||
						 info.max_entries != bpf_map__max_entries(map))) {
			km->old_fd[idx] = fd;	/* made anew, pinned in its place, whoever uses it */
			continue;
		}
		same = pinned_layout_is(fd, map, &info);
		if (!same && is_flow_table_64(map, &info)) {
			km->old_fd[idx] = fd;	/* copied into a new one, pinned in its place */
			replaced = name;
			continue;
		}
		if (!same) {
			report_other_build(ifname, name, &info, bpf_map__type(map),
					   bpf_map__key_size(map), bpf_map__value_size(map));
			close(fd);
			return -EPROTO;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd);
		if (err) {
			libbpf_message(msg, sizeof(msg), err);
			cli_error("attach %s: reuse %s: %s", ifname, path, msg);
			return err;
		}
	}
	/* Programs of the other build still attached elsewhere would lose what goes with its pins. */
	if (replaced) {
		int live = links_live();

		if (live) {
			pin_path(path, sizeof(path), replaced);
			cli_error("attach %s: %s was made by another isnguard build and is still in "
				  "use by %d attachment%s: detach them with --keep-state first, then "
				  "attach each with this build", ifname, path, live,
				  live == 1 ? "" : "s");
			return live < 0 ? live : -EBUSY;
		}
	}
	return 0;
}

/*
 * The counters of a replaced isn_stats added to this load's, CPU by CPU (its
 * programs may have counted already: XDP is attached before the state is
 * written; a count made between the read and the write here is lost).
 */
static int copy_counters(int from, int to)
{
	struct bpf_map_info info = { 0 };
	__u32 info_len = sizeof(info), stride;
	int ncpus = libbpf_num_possible_cpus();
	__u64 *old, *cur;
	int err = 0;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	if (bpf_obj_get_info_by_fd(from, &info, &info_len))
		return -errno;
	/*
	 * A map of one slot (STAT_COUNT counters or fewer) goes into slot 0;
	 * one of a slot per interface, made before counters were appended,
	 * slot for slot (each slot's counters keep their indices).
	 */
	stride = info.max_entries <= STAT_COUNT ? info.max_entries : info.max_entries / ISN_STATS_SLOTS;
	if (!stride)
		return 0;
	old = calloc((size_t)ncpus, sizeof(*old));
	cur = calloc((size_t)ncpus, sizeof(*cur));
	if (!old || !cur)
		err = -ENOMEM;
	for (__u32 i = 0; i < info.max_entries && !err; i++) {
		__u32 slot = i / stride, stat = i % stride, to_index = slot * STAT_COUNT + stat;

		if (slot >= ISN_STATS_SLOTS || stat >= STAT_COUNT)
			break;
		if (bpf_map_lookup_elem(from, &i, old))
			break;	/* past the old map's last counter */
		if (bpf_map_lookup_elem(to, &to_index, cur)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpus; c++)
			cur[c] += old[c];
		if (bpf_map_update_elem(to, &to_index, cur, BPF_ANY))
			err = -errno;
	}
	free(old);
	free(cur);
	return err;
}

/*
 * What the state maps made anew in the place of kept ones take over from
 * them: the counters, and the flows of a 64-byte flow table. All before
 * any pin moves, so a failure leaves every kept map where it was.
 */
int copy_kept_maps(struct isnguard *skel, const struct kept_maps *km)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, skel->obj) {
		int err = 0, idx = state_map_index(bpf_map__name(map));

		if (bpf_map__is_internal(map) || idx < 0 || km->old_fd[idx] < 0)
			continue;
		if (map == skel->maps.isn_stats)
			err = copy_counters(km->old_fd[idx], bpf_map__fd(map));
		else if (map == skel->maps.isn_flows || map == skel->maps.isn_opening)
			err = copy_flows_64(km->old_fd[idx], bpf_map__fd(map));
		if (err)
			return err;
	}
	return 0;
}

/*
 * Pins, with their BTF, the state maps this load created, in the place of
 * those it replaces (copy_kept_maps first). The old maps' last references
 * go here, and an old sweeper's timer with them; copied flow tables have
 * their count made right after that (recount_flows).
 */
int pin_new_maps(struct isnguard *skel, struct kept_maps *km)
{
	struct bpf_map *map;
	char path[256];

	bpf_object__for_each_map(map, skel->obj) {
		int err, idx = state_map_index(bpf_map__name(map));

		if (bpf_map__is_internal(map) || idx < 0)
			continue;
		err = pin_path(path, sizeof(path), bpf_map__name(map));
		if (err)
			return err;
		if (km->old_fd[idx] >= 0) {
			char tmp[272];

			/* Pinned beside it, then renamed over it: the old pin goes only once the new one is there. */
			snprintf(tmp, sizeof(tmp), "%s_next", path);	/* bpffs takes no dot */
			unlink(tmp);
			err = bpf_obj_pin(bpf_map__fd(map), tmp) ? -errno : 0;
			if (!err && rename(tmp, path)) {
				err = -errno;
				unlink(tmp);
			}
			if (err)
				return err;
			close(km->old_fd[idx]);
			km->old_fd[idx] = -1;
			continue;
		}
		if (access(path, F_OK) == 0)
			continue;
		err = bpf_map__pin(map, path);
		if (err)
			return err;
	}
	return km->flows_copied ? recount_flows(skel) : 0;
}

void remove_state(void)
{
	/* Userspace's own pins beside the maps the programs share. */
	static const char *const own_pins[] = { ISN_MAP_KEY_SOURCE, ISN_MAP_BUILDS,
						ISN_MAP_STAT_SLOTS, ISN_PIN_TICK_PROG,
						ISN_PIN_EVENT_KEY_PROG };
	char path[256];

	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		if (!pin_path(path, sizeof(path), pinned_maps[i]))
			unlink(path);
	for (size_t i = 0; i < sizeof(own_pins) / sizeof(own_pins[0]); i++)
		if (!pin_path(path, sizeof(path), own_pins[i]))
			unlink(path);
	rmdir(pin_dir());
}

/*
 * One attach or detach at a time: two first attaches would otherwise each
 * create state, and the loser's undo could remove the winner's pins.
 */
int state_lock(const char *cmd)
{
	int fd = open(bpffs_root(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || flock(fd, LOCK_EX)) {
		cli_error("%s: lock %s: %s", cmd, bpffs_root(), strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One run of isnguard_sweeper: 0, or -errno with *step the bpf_timer call that failed. */
static int run_sweeper_start(struct isnguard *skel, unsigned int *step)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);

	*step = 0;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.isnguard_sweeper), &opts))
		return -errno;
	*step = opts.retval >> 16;
	return -(int)(opts.retval & 0xffff);
}

/*
 * Arms the sweeper's timer. A failure is said with the bpf_timer call and
 * its error; one that a second run 10 ms later does not repeat (a rare
 * one, not reproduced in a stress loop of attaches in fresh namespaces)
 * leaves a warning with the first error, and the attach goes on.
 */
int state_start_sweeper(struct isnguard *skel, const char *ifname)
{
	static const char *const steps[] = {
		[0] = "BPF_PROG_TEST_RUN",
		[SWEEPER_START_NO_MAP] = "no isn_sweeper entry",
		[SWEEPER_START_INIT] = "bpf_timer_init",
		[SWEEPER_START_CALLBACK] = "bpf_timer_set_callback",
		[SWEEPER_START_TIMER] = "bpf_timer_start",
	};
	const struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
	unsigned int step, again_step;
	int err = run_sweeper_start(skel, &step), again;
	const char *what;

	if (!err)
		return 0;
	what = step < sizeof(steps) / sizeof(steps[0]) && steps[step] ? steps[step] : "?";
	nanosleep(&pause, NULL);
	again = run_sweeper_start(skel, &again_step);
	if (!again) {
		fprintf(stderr, "%s: warning: attach %s: the flow sweeper's timer started at the "
			"second try; the first failed in %s: %s\n", PROG_NAME, ifname, what,
			strerror(-err));
		return 0;
	}
	cli_error("attach %s: start the flow sweeper's timer: %s: %s", ifname, what,
		  strerror(-err));
	return err;
}
