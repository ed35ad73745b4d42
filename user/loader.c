// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "cli.h"
#include "isnguard.h"
#include "isnguard.skel.h"
#include "json_writer.h"
#include "loader.h"
#include "maps.h"
#include "netdev.h"
#include "pinned.h"
#include "tick.h"

#define XDP_PROG_NAME "isnguard_xdp"
/* The SYN-cookie half alone, beside --ingress tc. */
#define XDP_COOKIE_PROG_NAME "isnguard_xdp_cookie"
/* The kernel keeps 15 characters of a program name. */
#define TC_PROG_NAME_PREFIX "isnguard_tc"

static const char *const pinned_maps[] = {
	ISN_MAP_FLOWS, ISN_MAP_OPENING, ISN_MAP_CONFIG, ISN_MAP_KEY, ISN_MAP_STATS, ISN_MAP_LINKS,
	ISN_MAP_SYNPROXY, ISN_MAP_SYNPROXY_PORTS, ISN_MAP_SYN_RATE, ISN_MAP_SWEEPER,
	ISN_MAP_FLOW_COUNT, ISN_MAP_SYN_RESEND, ISN_MAP_SWEEP_FLOWS, ISN_MAP_SWEEP_OPENING,
	ISN_MAP_SWEEP_LONG,
};

uint64_t netns_inode(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

static void libbpf_message(char *buf, size_t len, int err)
{
	if (libbpf_strerror(err, buf, len))
		snprintf(buf, len, "%s", strerror(-err));
}

/* The program libbpf last warned "prog 'NAME': failed to load" of: the verifier refused it. */
static char refused_prog[64];

void loader_libbpf_note(const char *fmt, va_list ap)
{
	static const char head[] = "prog '", tail[] = "': failed to load";
	char line[256], *name, *end;

	vsnprintf(line, sizeof(line), fmt, ap);
	name = strstr(line, head);
	if (!name || !(end = strstr(name, tail)))
		return;
	name += sizeof(head) - 1;
	snprintf(refused_prog, sizeof(refused_prog), "%.*s", (int)(end - name), name);
}

/*
 * After a failed load: the program of obj the kernel refused, named; false
 * when none was. libbpf also loads libxdp's own probe programs (xdp_pass),
 * whose refusal says only that a feature is missing: not ours, not named.
 */
static bool report_refusal(const char *ifname, int err, const struct bpf_object *obj)
{
	const struct bpf_program *prog;
	char msg[128];

	if (!refused_prog[0])
		return false;
	prog = bpf_object__find_program_by_name(obj, refused_prog);
	if (!prog || bpf_program__fd(prog) >= 0)
		return false;
	libbpf_message(msg, sizeof(msg), err);
	cli_error("attach %s: the kernel refused to load %s: %s (ISNGUARD_DEBUG=1 shows the "
		  "verifier's log; 'make check-verifier' each program's cost)", ifname, refused_prog,
		  msg);
	return true;
}

static enum xdp_attach_mode xdp_mode_of(enum link_ingress ingress)
{
	return ingress == LINK_INGRESS_XDP_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE;
}

/* --- what is attached --------------------------------------------------- */

static bool prog_name_is(uint32_t prog_id, const char *prefix)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(prog_id);
	bool match;

	if (fd < 0)
		return false;
	match = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
		!strncmp(info.name, prefix, strlen(prefix));
	close(fd);
	return match;
}

/* Our XDP program called name on ifindex, as a libxdp object to detach, or NULL. */
static struct xdp_program *xdp_find(int ifindex, const char *name, struct xdp_multiprog **mp_out)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *prog = NULL;

	*mp_out = NULL;
	if (libxdp_get_error(mp) || !mp)
		return NULL;
	if (xdp_multiprog__is_legacy(mp)) {
		prog = xdp_multiprog__main_prog(mp);
		if (prog && strcmp(xdp_program__name(prog), name))
			prog = NULL;
	} else {
		for (prog = xdp_multiprog__next_prog(NULL, mp); prog;
		     prog = xdp_multiprog__next_prog(prog, mp))
			if (!strcmp(xdp_program__name(prog), name))
				break;
	}
	if (!prog) {
		xdp_multiprog__close(mp);
		return NULL;
	}
	*mp_out = mp;
	return prog;
}

static void tc_hook(struct bpf_tc_hook *hook, int ifindex, enum bpf_tc_attach_point point)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = point;
}

static void tc_filter_opts(struct bpf_tc_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->sz = sizeof(*opts);
	opts->handle = ISN_TC_HANDLE;
	opts->priority = ISN_TC_PRIORITY;
}

/* The program id of our filter on one clsact hook, or 0. */
static uint32_t tc_query(int ifindex, enum bpf_tc_attach_point point)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;

	tc_hook(&hook, ifindex, point);
	tc_filter_opts(&opts);
	if (bpf_tc_query(&hook, &opts) || !prog_name_is(opts.prog_id, TC_PROG_NAME_PREFIX))
		return 0;
	return opts.prog_id;
}

int loader_query(int ifindex, struct attachment *att)
{
	struct xdp_multiprog *mp;
	struct xdp_program *prog;

	memset(att, 0, sizeof(*att));
	prog = xdp_find(ifindex, XDP_PROG_NAME, &mp);
	if (prog) {
		att->ingress = true;
		att->ingress_prog_id = xdp_program__id(prog);
		att->ingress_kind = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB
					    ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;
		xdp_multiprog__close(mp);
		att->cookie_prog_id = tc_query(ifindex, BPF_TC_INGRESS);
	} else {
		att->ingress_prog_id = tc_query(ifindex, BPF_TC_INGRESS);
		att->ingress = att->ingress_prog_id != 0;
		att->ingress_kind = LINK_INGRESS_TC;
		prog = xdp_find(ifindex, XDP_COOKIE_PROG_NAME, &mp);
		if (prog) {
			att->cookie_prog_id = xdp_program__id(prog);
			xdp_multiprog__close(mp);
		}
	}
	att->egress_prog_id = tc_query(ifindex, BPF_TC_EGRESS);
	att->egress = att->egress_prog_id != 0;
	return 0;
}

/* --- state -------------------------------------------------------------- */

/*
 * A pinned map another isnguard build made, whose entries this one cannot
 * read: one line, with its layout (got) beside this build's.
 */
static void report_other_build(const char *ifname, const char *name,
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
static int pinned_max_flows(uint32_t *max_flows, struct bpf_map_info *info)
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

/*
 * Defaults on a fresh table; on kept state only the hash, when asked for,
 * and, under a sweeper made anew (struct kept_maps), its interval: the
 * kept one was the walk's of the build before.
 */
static int write_config(struct isnguard *skel, int hash, bool fresh, uint32_t max_flows,
			bool new_sweeper)
{
	int fd = bpf_map__fd(skel->maps.isn_config);
	struct isn_config cfg = { 0 };
	uint32_t zero = 0;

	if (!fresh && bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	if (fresh) {
		cfg.hash = ISN_HASH_SIPHASH;
		cfg.timeout_opening = ISN_DEFAULT_TIMEOUT_OPENING;
		cfg.timeout_established = ISN_DEFAULT_TIMEOUT_ESTABLISHED;
		cfg.timeout_closing = ISN_DEFAULT_TIMEOUT_CLOSING;
		cfg.timeout_closed = ISN_DEFAULT_TIMEOUT_CLOSED;
		cfg.sweep_interval_ms = isn_sweep_interval_ms(max_flows);
		cfg.max_flows = max_flows;
	}
	if (!fresh && new_sweeper)
		cfg.sweep_interval_ms = isn_sweep_interval_ms(cfg.max_flows ? cfg.max_flows : max_flows);
	if (hash >= 0)
		cfg.hash = (uint32_t)hash;
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

static int write_fresh_key(struct isnguard *skel)
{
	struct isn_key key;
	uint32_t zero = 0;
	int err = 0;

	if (getrandom(key.bytes, sizeof(key.bytes), 0) != (ssize_t)sizeof(key.bytes))
		err = -EIO;
	else if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_key), &zero, &key, BPF_ANY))
		err = -errno;
	explicit_bzero(&key, sizeof(key));
	return err;
}

static int synproxy_mark_was_on(int fd)
{
	struct synproxy_config cfg;
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	cfg.flags |= SYNPROXY_F_WAS_ON;
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/* The ports and mode of --synproxy, with what the host's stack negotiates. */
static int write_synproxy(struct isnguard *skel, const struct synproxy_request *sp)
{
	struct synproxy_config cfg = { .mode = sp->mode, .syn_threshold = sp->syn_threshold,
				       .path = sp->path, .invalid_ack_rate = sp->invalid_ack_rate };

	synproxy_host_params(&cfg);
	return synproxy_write(bpf_map__fd(skel->maps.isn_synproxy),
			      bpf_map__fd(skel->maps.isn_synproxy_ports), &cfg, sp->ports);
}

static int record_link(struct isnguard *skel, const struct attach_request *req, int ifindex,
		       uint32_t ingress_prog_id, uint32_t egress_prog_id)
{
	struct link_key key = { .netns_ino = netns_inode(), .ifindex = (uint32_t)ifindex };
	struct link_info info = {
		.ingress = req->ingress,
		.ingress_prog_id = ingress_prog_id,
		.egress_prog_id = egress_prog_id,
		.flags = req->syn_tc ? LINK_F_SYN_TC : 0,
		.attached_at = (uint64_t)time(NULL),
	};

	snprintf(info.ifname, sizeof(info.ifname), "%s", req->ifname);
	return bpf_map_update_elem(bpf_map__fd(skel->maps.isn_links), &key, &info, BPF_ANY)
		       ? -errno : 0;
}

/*
 * Pinned maps of another layout: state kept (`detach --keep-state`) by
 * another isnguard build, as over an upgrade. What this load can rebuild
 * it makes anew, and their pins are replaced once it has loaded: the
 * sweeper's map and queues, all four together (a new sweeper gives the
 * kept flows their slots, bpf/sweeper.h), and the counters when this build
 * has more (their counts added; the ones appended since start at 0), but
 * not while an interface still runs the other build; flow tables of the
 * 64-byte layout are copied into new ones, with a new sweeper (below).
 * Flow tables of any other layout, key, config or SYN-proxy settings of
 * another layout are refused with a line naming the map: their entries
 * cannot be read as this build's.
 */
struct kept_maps {
	int old_fd[sizeof(pinned_maps) / sizeof(pinned_maps[0])];	/* replaced, or -1 */
	bool new_sweeper;	/* the sweeper's maps, of another layout, made anew */
	bool flows_copied;	/* flow tables of the 64-byte layout copied into new ones */
};

static void kept_maps_init(struct kept_maps *km)
{
	for (size_t i = 0; i < sizeof(km->old_fd) / sizeof(km->old_fd[0]); i++)
		km->old_fd[i] = -1;
	km->new_sweeper = false;
	km->flows_copied = false;
}

static void kept_maps_close(struct kept_maps *km)
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

static int live_attachments(void);

/*
 * Maps already pinned are reused, so flows, key and mode survive a reload.
 * This is done by hand rather than with LIBBPF_PIN_BY_NAME: libbpf's reuse
 * check compares the definition's map_flags with the kernel's, and the
 * kernel does not keep BPF_F_WRONLY (it belongs to the creating fd only).
 * Pinned maps of another layout go as struct kept_maps says.
 */
static int reuse_pinned_maps(struct isnguard *skel, const char *ifname, struct kept_maps *km)
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
		     info.max_entries < STAT_COUNT)) {
			km->old_fd[idx] = fd;	/* made anew, pinned in its place */
			replaced = name;
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
		int live = live_attachments();

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
	int ncpus = libbpf_num_possible_cpus();
	__u64 *old, *cur;
	int err = 0;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	old = calloc((size_t)ncpus, sizeof(*old));
	cur = calloc((size_t)ncpus, sizeof(*cur));
	if (!old || !cur)
		err = -ENOMEM;
	for (__u32 i = 0; i < STAT_COUNT && !err; i++) {
		if (bpf_map_lookup_elem(from, &i, old))
			break;	/* past the old map's last counter */
		if (bpf_map_lookup_elem(to, &i, cur)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpus; c++)
			cur[c] += old[c];
		if (bpf_map_update_elem(to, &i, cur, BPF_ANY))
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
static int copy_kept_maps(struct isnguard *skel, const struct kept_maps *km)
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
static int pin_new_maps(struct isnguard *skel, struct kept_maps *km)
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

static void remove_state(void)
{
	char path[256];

	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		if (!pin_path(path, sizeof(path), pinned_maps[i]))
			unlink(path);
	rmdir(pin_dir());
}

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

/* How many records of isn_links still stand for an attachment, or -errno. */
static int live_attachments(void)
{
	return links_walk(0, false);	/* no interface has index 0 */
}

/*
 * Forgets ifindex in isn_links, and every record that no longer stands for
 * an attachment. Returns how many attachments remain, or -errno.
 */
static int forget_link(int ifindex)
{
	return links_walk(ifindex, true);
}

/*
 * One attach or detach at a time: two first attaches would otherwise each
 * create state, and the loser's undo could remove the winner's pins.
 */
static int state_lock(const char *cmd)
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

/* --- attach / detach ---------------------------------------------------- */

static int resolve_ifindex(const char *cmd, const char *ifname)
{
	int ifindex;

	if (strlen(ifname) >= IFNAMSIZ) {
		cli_error("%s %s: interface name too long", cmd, ifname);
		return -EINVAL;
	}
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex) {
		cli_error("%s %s: no such interface", cmd, ifname);
		return -ENODEV;
	}
	return ifindex;
}

static int pick_max_flows(const struct attach_request *req, bool fresh, uint32_t *max_flows)
{
	struct bpf_map_info info;
	uint32_t existing;
	int err;

	if (fresh) {
		*max_flows = req->max_flows ? req->max_flows : ISN_DEFAULT_MAX_FLOWS;
		return 0;
	}
	err = pinned_max_flows(&existing, &info);
	if (err == -EPROTO && info.value_size != sizeof(struct isn_config)) {
		report_other_build(req->ifname, ISN_MAP_CONFIG, &info, BPF_MAP_TYPE_ARRAY,
				   sizeof(__u32), sizeof(struct isn_config));
		return err;
	}
	if (err) {
		cli_error("attach %s: read the pinned flow table: %s", req->ifname, strerror(-err));
		return err;
	}
	if (req->max_flows && req->max_flows != existing) {
		cli_error("attach %s: the flow table is kept with %u entries; --max-flows %u needs "
			  "every interface detached without --keep-state first",
			  req->ifname, existing, req->max_flows);
		return -EEXIST;
	}
	*max_flows = existing;
	return 0;
}

static void report_xdp_error(const char *ifname, int err, enum link_ingress ingress,
			     const struct bpf_object *obj)
{
	char msg[128];

	if (report_refusal(ifname, err, obj))
		return;
	if (err == -EOPNOTSUPP && ingress == LINK_INGRESS_XDP_NATIVE) {
		cli_error("attach %s: the driver has no native XDP (try --xdp-mode skb)", ifname);
		return;
	}
	libbpf_message(msg, sizeof(msg), err);
	cli_error("attach %s: XDP attach failed: %s", ifname, msg);
}

/* Our filter on one clsact hook; *created_hook tells whether clsact was made here. */
static int attach_tc(int ifindex, enum bpf_tc_attach_point point, struct bpf_program *prog,
		     bool *created_hook, uint32_t *prog_id)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	int err;

	tc_hook(&hook, ifindex, point);
	err = bpf_tc_hook_create(&hook);
	if (err == 0)
		*created_hook = true;
	else if (err != -EEXIST)
		return err;
	tc_filter_opts(&opts);
	opts.prog_fd = bpf_program__fd(prog);
	err = bpf_tc_attach(&hook, &opts);
	*prog_id = opts.prog_id;
	return err;
}

static int detach_tc(int ifindex, enum bpf_tc_attach_point point)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;

	tc_hook(&hook, ifindex, point);
	tc_filter_opts(&opts);
	return bpf_tc_detach(&hook, &opts);
}

/* Removes the clsact qdisc this attach created (and so nobody else uses yet). */
static void destroy_created_hook(int ifindex, bool created_hook)
{
	struct bpf_tc_hook hook;

	if (!created_hook)
		return;
	tc_hook(&hook, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
	bpf_tc_hook_destroy(&hook);
}

/*
 * Which programs this attach loads; the others are not even verified. Beside
 * XDP ingress, the tc filter that takes cookie ACKs always goes on (without
 * the kfunc the SYN proxy translates), so `isnguard synproxy` can switch the
 * SYN proxy on live; beside tc ingress, which takes cookie ACKs itself, the
 * XDP program that answers SYNs only with --synproxy, and never with
 * --syn-hook tc (tc ingress answers them too, so `isnguard synproxy` can
 * switch them on live there).
 */
static void select_programs(struct isnguard *skel, const struct attach_request *req)
{
	bool tc = req->ingress == LINK_INGRESS_TC;

	bpf_program__set_autoload(skel->progs.isnguard_xdp, !tc);
	bpf_program__set_autoload(skel->progs.isnguard_tc_ingress, tc);
	bpf_program__set_autoload(skel->progs.isnguard_tc_cookie, !tc);
	bpf_program__set_autoload(skel->progs.isnguard_xdp_cookie,
				  tc && req->synproxy && !req->syn_tc);
	bpf_program__set_autoload(skel->progs.isnguard_tc_tick, true);
	bpf_program__set_autoload(skel->progs.isnguard_sweeper, true);
}

/*
 * The tick device's filter (bpf/resend.h), this load's program replacing an
 * older one. Without it the translating proxy resends a silent server's SYN
 * only when the client retransmits, as before: a warning, not a failure.
 */
static void attach_tick(struct isnguard *skel, const struct attach_request *req)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	char msg[128];
	int ifindex = tick_ensure(), err = ifindex < 0 ? ifindex : 0;

	if (!err) {
		tc_hook(&hook, ifindex, BPF_TC_INGRESS);
		err = bpf_tc_hook_create(&hook);
		if (err == -EEXIST)
			err = 0;
	}
	if (!err) {
		tc_filter_opts(&opts);
		opts.prog_fd = bpf_program__fd(skel->progs.isnguard_tc_tick);
		opts.flags = BPF_TC_F_REPLACE;
		err = bpf_tc_attach(&hook, &opts);
	}
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		fprintf(stderr, "%s: warning: attach %s: tick device %s: %s: the SYN proxy resends "
			"a SYN to a silent server only when the client retransmits\n", PROG_NAME,
			req->ifname, ISN_TICK_DEV, msg);
	}
}

/* Attachments left in this network namespace (after forget_link). */
static int links_here(void)
{
	struct link_key cur, next;
	uint64_t here = netns_inode();
	int fd = pinned_map_open(ISN_MAP_LINKS), count = 0;
	void *prev = NULL;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		count += cur.netns_ino == here;
	}
	close(fd);
	return count;
}

/* The XDP program called name, through libxdp; loads the object on the way. */
static int attach_xdp(struct isnguard *skel, const struct attach_request *req, int ifindex,
		      const char *name, struct xdp_program **xdp_prog, uint32_t *prog_id)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = skel->obj, .prog_name = name);
	enum link_ingress mode = req->xdp_skb ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;
	char msg[128];
	int err;

	*xdp_prog = xdp_program__create(&opts);
	err = (int)libxdp_get_error(*xdp_prog);
	if (err) {
		*xdp_prog = NULL;
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: prepare the XDP program: %s", req->ifname, msg);
		return err;
	}
	xdp_program__set_run_prio(*xdp_prog, ISN_XDP_RUN_PRIO);
	xdp_program__set_chain_call_enabled(*xdp_prog, XDP_PASS, true);
	/*
	 * Multi-buffer frames (MTU above a page, e.g. 9000 on veth): the
	 * headers are in the first buffer, which is all the datapath touches
	 * directly; option walks and the SYN-ACK go through the load/store
	 * helpers, which follow the fragments.
	 */
	xdp_program__set_xdp_frags_support(*xdp_prog, true);
	err = xdp_program__attach(*xdp_prog, ifindex, xdp_mode_of(mode), 0);
	if (err) {
		report_xdp_error(req->ifname, err, mode, skel->obj);
		return err;
	}
	*prog_id = xdp_program__id(*xdp_prog);
	return 0;
}

struct ingress_attached {
	struct xdp_program *xdp_prog;	/* isnguard_xdp, or isnguard_xdp_cookie beside tc */
	bool tc;			/* a filter on clsact ingress */
	uint32_t prog_id;		/* the ingress program */
	uint32_t cookie_prog_id;	/* its SYN-proxy companion, if any */
};

/* Loads the object and attaches the ingress side: XDP through libxdp, tc, or both. */
static int attach_ingress(struct isnguard *skel, const struct attach_request *req, int ifindex,
			  struct ingress_attached *in, bool *created_hook)
{
	char msg[128];
	int err;

	refused_prog[0] = 0;
	select_programs(skel, req);
	if (req->ingress == LINK_INGRESS_TC) {
		bool xdp = req->synproxy && !req->syn_tc;

		err = xdp ? attach_xdp(skel, req, ifindex, XDP_COOKIE_PROG_NAME, &in->xdp_prog,
				       &in->cookie_prog_id)
			  : isnguard__load(skel);
		if (err) {
			if (!xdp && !report_refusal(req->ifname, err, skel->obj)) {
				libbpf_message(msg, sizeof(msg), err);
				cli_error("attach %s: load the BPF object: %s", req->ifname, msg);
			}
			return err;
		}
		err = attach_tc(ifindex, BPF_TC_INGRESS, skel->progs.isnguard_tc_ingress,
				created_hook, &in->prog_id);
		if (err) {
			libbpf_message(msg, sizeof(msg), err);
			cli_error("attach %s: tc ingress attach failed: %s", req->ifname, msg);
			return err;
		}
		in->tc = true;
		return 0;
	}

	err = attach_xdp(skel, req, ifindex, XDP_PROG_NAME, &in->xdp_prog, &in->prog_id);
	if (err)
		return err;
	err = attach_tc(ifindex, BPF_TC_INGRESS, skel->progs.isnguard_tc_cookie, created_hook,
			&in->cookie_prog_id);
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: tc ingress attach (SYN-cookie ACKs) failed: %s", req->ifname,
			  msg);
		return err;
	}
	in->tc = true;
	return 0;
}

/* Undoes attach_ingress: the XDP program first, so no SYN is answered whose ACK nobody takes. */
static void detach_ingress(const struct attach_request *req, int ifindex,
			   struct ingress_attached *in)
{
	enum link_ingress mode = req->xdp_skb ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;

	if (in->xdp_prog && xdp_program__id(in->xdp_prog))
		xdp_program__detach(in->xdp_prog, ifindex, xdp_mode_of(mode), 0);
	if (in->tc)
		detach_tc(ifindex, BPF_TC_INGRESS);
}

/*
 * Where the link's SYN cookies are answered: "none" where XDP would, but no
 * program takes their ACKs (attached without --synproxy), as status's
 * "SYN cookies not served here". Cookie_prog: the link has that program,
 * or cannot be looked at from here (another namespace).
 */
const char *link_syn_hook(const struct link_info *info, bool cookie_prog)
{
	return info->flags & LINK_F_SYN_TC ? "tc" : cookie_prog ? "xdp" : "none";
}

const char *link_ingress_name(uint32_t ingress)
{
	switch (ingress) {
	case LINK_INGRESS_XDP_SKB:
		return "xdp-skb";
	case LINK_INGRESS_TC:
		return "tc";
	default:
		return "xdp-native";
	}
}

/*
 * Refuses a device that shares its packets with one isnguard is attached to
 * already in this namespace (VLAN and parent, bond and port, bridge and
 * port): both would translate, and every connection would break. Tells
 * whether the device has no link-layer header.
 */
static int check_device(const struct attach_request *req, int ifindex, bool *l3)
{
	static struct netdev devs[NETDEV_MAX];
	struct link_key cur, next;
	uint64_t here = netns_inode();
	int n = netdev_list(devs, NETDEV_MAX), fd, err = 0;
	void *prev = NULL;

	*l3 = false;
	if (n < 0) {
		cli_error("attach %s: list the interfaces: %s", req->ifname, strerror(-n));
		return n;
	}
	for (int i = 0; i < n; i++)
		if (devs[i].ifindex == ifindex)
			*l3 = netdev_is_l3(&devs[i]);
	fd = pinned_map_open(ISN_MAP_LINKS);
	if (fd < 0)
		return 0;	/* no state yet: nothing else is attached */
	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		const char *relation;

		cur = next;
		prev = &cur;
		if (cur.netns_ino != here)
			continue;
		relation = netdev_relation(devs, n, ifindex, (int)cur.ifindex);
		if (!relation)
			continue;
		for (int i = 0; i < n; i++) {
			if (devs[i].ifindex != (int)cur.ifindex)
				continue;
			cli_error("attach %s: isnguard is attached to %s, %s: the same packets would "
				  "be translated twice (detach %s first)", req->ifname, devs[i].name,
				  relation, devs[i].name);
			err = -EEXIST;
		}
	}
	close(fd);
	return err;
}

/* Before anything changes: not attached yet, a device isnguard can serve, the table size. */
static int attach_preflight(const struct attach_request *req, int ifindex, bool *l3, bool *fresh,
			    uint32_t *max_flows)
{
	struct attachment att;
	int err;

	loader_query(ifindex, &att);
	if (att.ingress || att.egress) {
		cli_error("attach %s: already attached (run 'isnguard detach %s' first)",
			  req->ifname, req->ifname);
		return -EEXIST;
	}
	err = check_device(req, ifindex, l3);
	if (err)
		return err;
	*fresh = !pinned_state_exists();
	return pick_max_flows(req, *fresh, max_flows);
}

/* The object, sized and set for this device, over the pinned maps that exist. */
static int open_object(const struct attach_request *req, bool l3, uint32_t max_flows,
		       struct isnguard **skel, struct kept_maps *km)
{
	char msg[128];
	int err;

	if (mkdir(pin_dir(), 0700) && errno != EEXIST) {
		err = -errno;
		cli_error("attach %s: create %s: %s", req->ifname, pin_dir(), strerror(errno));
		return err;
	}
	*skel = isnguard__open();
	if (!*skel) {
		err = -errno;
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: open the BPF object: %s", req->ifname, msg);
		return err;
	}
	(*skel)->rodata->l3_device = l3;
	/* SYNs in frames to another station's MAC are not answered (syn_to_other_host). */
	(*skel)->rodata->dev_mac = l3 ? 0 : netdev_ether_mac(req->ifname);
	(*skel)->rodata->netns_ino = netns_inode();
	(*skel)->rodata->syn_at_tc = req->syn_tc;
	bpf_map__set_max_entries((*skel)->maps.isn_flows, isn_flows_capacity(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_opening, isn_opening_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_flows, isn_sweep_flows_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_opening, isn_sweep_opening_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_long, isn_sweep_long_size(max_flows));
	return reuse_pinned_maps(*skel, req->ifname, km);
}

/*
 * Starts the flow sweeper's timer (bpf/sweeper.h), or hands a running one
 * to this load's program: isnguard_sweeper, run once. Before any flow is
 * made: a flow needs a slot of the sweeper's queues, which it sizes.
 */
static int start_sweeper(struct isnguard *skel)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.isnguard_sweeper), &opts);

	if (err)
		return -errno;
	return opts.retval ? -EIO : 0;
}

/* Pins, key, config and SYN-proxy settings; before egress attaches, so no SYN leaves unkeyed. */
static int write_state(struct isnguard *skel, const struct attach_request *req, bool fresh,
		       uint32_t max_flows, struct kept_maps *km)
{
	char msg[128];
	int err = copy_kept_maps(skel, km);

	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: copy the kept state in %s into this build's maps: %s",
			  req->ifname, pin_dir(), msg);
		return err;
	}
	err = pin_new_maps(skel, km);
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: pin the maps in %s: %s", req->ifname, pin_dir(), msg);
		return err;
	}
	err = fresh ? write_fresh_key(skel) : 0;
	if (!err)
		err = write_config(skel, req->hash, fresh, max_flows, km->new_sweeper);
	/*
	 * State of a build before SYNPROXY_F_WAS_ON (its sweeper is made
	 * anew): the proxy may have been on, and its connections live.
	 */
	if (!err && !fresh && km->new_sweeper)
		err = synproxy_mark_was_on(bpf_map__fd(skel->maps.isn_synproxy));
	if (err) {
		cli_error("attach %s: initialise key and config: %s", req->ifname, strerror(-err));
		return err;
	}
	err = start_sweeper(skel);
	if (err) {
		cli_error("attach %s: start the flow sweeper's timer (bpf_timer): %s", req->ifname,
			  strerror(-err));
		return err;
	}
	if (req->synproxy) {
		err = write_synproxy(skel, req->synproxy);
		if (err)
			cli_error("attach %s: write the SYN-proxy settings: %s", req->ifname,
				  strerror(-err));
	}
	return err;
}

static void print_attached(const struct attach_request *req, const struct ingress_attached *in,
			   uint32_t egress_id, uint32_t max_flows, bool fresh)
{
	const struct link_info link = { .flags = req->syn_tc ? LINK_F_SYN_TC : 0 };
	struct json_writer jw;

	if (!req->json) {
		printf("attached to %s: ingress %s%s, egress tc, flow table %u entries (%s)\n",
		       req->ifname, link_ingress_name(req->ingress),
		       req->syn_tc ? (req->synproxy ? " (SYN cookies too)"
						   : " (SYN cookies too, once `isnguard synproxy` is on)")
		       : !in->cookie_prog_id ? "" : req->ingress == LINK_INGRESS_TC
							  ? " + xdp SYN cookies" : " + tc cookie ACKs",
		       max_flows, fresh ? "new state, fresh key" : "kept state and key");
		return;
	}
	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "attached", req->ifname);
	jw_string_field(&jw, "ingress", link_ingress_name(req->ingress));
	jw_uint_field(&jw, "ingress_prog_id", in->prog_id);
	jw_uint_field(&jw, "egress_prog_id", egress_id);
	jw_uint_field(&jw, "synproxy_prog_id", in->cookie_prog_id);
	jw_string_field(&jw, "syn_hook", link_syn_hook(&link, in->cookie_prog_id));
	jw_uint_field(&jw, "max_flows", max_flows);
	jw_string_field(&jw, "state", fresh ? "new" : "kept");
	jw_end_object(&jw);
	jw_finish(&jw);
}

static int attach_locked(const struct attach_request *req, int ifindex)
{
	struct ingress_attached in = { 0 };
	struct isnguard *skel = NULL;
	struct kept_maps km;
	uint32_t max_flows, egress_id = 0;
	bool fresh, created_hook = false, l3;
	char msg[128];
	int err;

	err = attach_preflight(req, ifindex, &l3, &fresh, &max_flows);
	if (err)
		return err;
	kept_maps_init(&km);
	err = open_object(req, l3, max_flows, &skel, &km);
	if (!err)
		err = attach_ingress(skel, req, ifindex, &in, &created_hook);
	if (!err)
		err = write_state(skel, req, fresh, max_flows, &km);
	if (err)
		goto undo;
	err = attach_tc(ifindex, BPF_TC_EGRESS, skel->progs.isnguard_tc_egress, &created_hook,
			&egress_id);
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: tc egress attach failed: %s", req->ifname, msg);
		goto undo;
	}
	/* Only the SYN proxy's translate path needs it: no device for ISN rewriting alone. */
	if (req->synproxy)
		attach_tick(skel, req);
	err = record_link(skel, req, ifindex, in.prog_id, egress_id);
	if (err) {
		cli_error("attach %s: record the attachment: %s", req->ifname, strerror(-err));
		detach_tc(ifindex, BPF_TC_EGRESS);
		goto undo;
	}
	print_attached(req, &in, egress_id, max_flows, fresh);
	kept_maps_close(&km);
	xdp_program__close(in.xdp_prog);
	isnguard__destroy(skel);
	return 0;

undo:
	detach_ingress(req, ifindex, &in);
	destroy_created_hook(ifindex, created_hook);
	if (fresh)
		remove_state();
	kept_maps_close(&km);
	xdp_program__close(in.xdp_prog);
	isnguard__destroy(skel);
	return err;
}

int loader_attach(const struct attach_request *req)
{
	int ifindex, lock, err;

	ifindex = resolve_ifindex("attach", req->ifname);
	if (ifindex < 0)
		return ifindex;
	err = bpffs_ensure();
	if (err) {
		cli_error("attach %s: no bpffs on /sys/fs/bpf and mounting one failed: %s",
			  req->ifname, strerror(-err));
		return err;
	}
	if (pin_dir_is_private())
		fprintf(stderr, "%s: warning: %s is a bpffs private to this mount namespace (as under "
			"'ip netns exec'): the state pinned there vanishes with this command; run "
			"isnguard with 'nsenter --net=/run/netns/NAME' instead\n", PROG_NAME, pin_dir());
	lock = state_lock("attach");
	if (lock < 0)
		return -EBUSY;
	err = attach_locked(req, ifindex);
	close(lock);
	return err;
}

static int detach_xdp(const char *ifname, int ifindex, const char *name)
{
	struct xdp_multiprog *mp;
	struct xdp_program *prog = xdp_find(ifindex, name, &mp);
	char msg[128];
	int err;

	if (!prog)
		return 0;
	if (xdp_multiprog__is_legacy(mp))
		err = xdp_multiprog__detach(mp);
	else
		err = xdp_program__detach(prog, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("detach %s: XDP detach failed: %s", ifname, msg);
	}
	return err;
}

static int detach_locked(const char *ifname, int ifindex, bool keep_state, bool json)
{
	const char *state;
	struct attachment att;
	int err = 0, remaining;

	loader_query(ifindex, &att);
	if (!att.ingress && !att.egress) {
		cli_error("detach %s: not attached", ifname);
		return -ENOENT;
	}
	/*
	 * Egress first: from here on no SYN gets a keyed ISN on this interface.
	 * If it stays, ingress must stay too, or live flows lose their acks.
	 */
	if (att.egress) {
		err = detach_tc(ifindex, BPF_TC_EGRESS);
		if (err) {
			cli_error("detach %s: tc egress detach failed: %s (nothing detached)", ifname,
				  strerror(-err));
			return err;
		}
	}
	/* SYNs stop being answered before the ACK side goes (see detach_ingress). */
	if (att.ingress_kind == LINK_INGRESS_TC) {
		if (att.cookie_prog_id && detach_xdp(ifname, ifindex, XDP_COOKIE_PROG_NAME))
			err = -EIO;
		if (!err && att.ingress) {
			err = detach_tc(ifindex, BPF_TC_INGRESS);
			if (err)
				cli_error("detach %s: tc ingress detach failed: %s", ifname,
					  strerror(-err));
		}
	} else {
		if (att.ingress && detach_xdp(ifname, ifindex, XDP_PROG_NAME))
			err = -EIO;
		if (!err && att.cookie_prog_id) {
			err = detach_tc(ifindex, BPF_TC_INGRESS);
			if (err)
				cli_error("detach %s: tc ingress (cookie ACKs) detach failed: %s",
					  ifname, strerror(-err));
		}
	}
	if (err)
		return err;	/* state and record stay: something still uses them */

	remaining = forget_link(ifindex);
	if (remaining < 0) {
		cli_error("detach %s: update %s: %s (state kept)", ifname, ISN_MAP_LINKS,
			  strerror(-remaining));
		return 0;
	}
	if (links_here() == 0) {
		int tick_err = tick_remove();

		if (tick_err)
			fprintf(stderr, "%s: warning: detach %s: remove the tick device %s: %s\n",
				PROG_NAME, ifname, ISN_TICK_DEV, strerror(-tick_err));
	}
	if (!keep_state && remaining == 0)
		remove_state();
	state = keep_state ? "kept" : remaining > 0 ? "kept for other interfaces" : "removed";
	if (json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "detached", ifname);
		jw_string_field(&jw, "state", state);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		printf("detached from %s (state %s)\n", ifname, state);
	}
	return 0;
}

int loader_detach(const char *ifname, bool keep_state, bool json)
{
	int ifindex, lock, err;

	ifindex = resolve_ifindex("detach", ifname);
	if (ifindex < 0)
		return ifindex;
	bpffs_ensure();
	lock = state_lock("detach");
	if (lock < 0)
		return -EBUSY;
	err = detach_locked(ifname, ifindex, keep_state, json);
	close(lock);
	return err;
}
