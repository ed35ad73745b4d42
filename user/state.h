/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The state pinned under pin_dir() as a load finds and leaves it
 * (user/state.c): kept maps reused or upgraded, this load's pinned, the
 * lock, the removal; and the isn_links records (user/links.c). Errors as one line on stderr
 * where a function names the interface; 0 or -errno.
 */
#ifndef ISNGUARD_STATE_H
#define ISNGUARD_STATE_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

struct bpf_map_info;
struct link_info;
struct isnguard;

/* How many maps isnguard pins (state.c's pinned_maps). */
#define STATE_MAP_COUNT 28

/*
 * Pinned maps of another layout: state kept (`detach --keep-state`) by
 * another isnguard build, as over an upgrade. What this load can rebuild
 * it makes anew, and their pins are replaced once it has loaded: the
 * sweeper's map and queues, all four together (a new sweeper gives the
 * kept flows their slots, bpf/sweeper.h), and the counters when this build
 * has more (their counts added; the ones appended since start at 0), and
 * the resend records (flows opening for a few seconds: their resends are
 * lost, not their connections), but not while an interface still runs the
 * other build; flow tables of the
 * 64-byte layout are copied into new ones, with a new sweeper (state.c).
 * Flow tables of any other layout, key, config or SYN-proxy settings of
 * another layout are refused with a line naming the map: their entries
 * cannot be read as this build's.
 */
struct kept_maps {
	int old_fd[STATE_MAP_COUNT];	/* replaced, or -1 */
	bool new_sweeper;	/* the sweeper's maps, of another layout, made anew */
	bool flows_copied;	/* flow tables of the 64-byte layout copied into new ones */
};

void kept_maps_init(struct kept_maps *km);
void kept_maps_close(struct kept_maps *km);
/* Whether km holds anything of another layout that this load makes anew or copies. */
bool kept_maps_replaced(const struct kept_maps *km);

/* A pinned map of another build, which cannot be kept: one line, its layout beside this build's. */
void report_other_build(const char *ifname, const char *name,
			const struct bpf_map_info *got, __u32 type, __u32 key, __u32 value);
/* --max-flows of the kept state; -EPROTO, with the config's map info in *info, from another build. */
int pinned_max_flows(uint32_t *max_flows, struct bpf_map_info *info);

/* The pinned maps reused by this load's object; those of another layout go into km. */
int reuse_pinned_maps(struct isnguard *skel, const char *ifname, struct kept_maps *km);
/* What the maps made anew take over from the kept ones they replace: counters, 64-byte flows. */
int copy_kept_maps(struct isnguard *skel, const struct kept_maps *km);
/* This load's state maps pinned, in the place of those km replaces. */
int pin_new_maps(struct isnguard *skel, struct kept_maps *km);
/* Every pin of the state, and its directory. */
void remove_state(void);
/*
 * A network namespace's resend state (bpf/resend.h): its records, queue
 * slots and queues, once its last attachment goes: its tick is gone with
 * it, and the queues are bounded by namespaces (SYNPROXY_RESEND_NETNS_MAX).
 * 0 or -errno.
 */
int resend_state_forget(uint64_t netns_ino);
/* netns_ino's entries of isn_local_addrs gone (the namespace's last detach). 0 or -errno. */
int local_addrs_forget(uint64_t netns_ino);

/* --- user/links.c --- */
/* Forgets ifindex and stale records in isn_links: how many attachments remain, or -errno. */
int forget_link(int ifindex);
/* How many records of isn_links still stand for an attachment, or -errno. */
int links_live(void);
/* Attachments left in this network namespace (after forget_link). */
int links_here(void);
/* The names of this namespace's records (names NULL: count them), at most max; or -errno. */
int links_here_names(char (*names)[IFNAMSIZ], int max);
/* This namespace's record of ifindex into info: 0 or -errno (none: -ENOENT). */
int link_record(int ifindex, struct link_info *info);
/* Its flags (enum link_flags), 0 without a record. */
uint32_t link_record_flags(int ifindex);
/* The build attached to a link, by the SHA-256 of its BPF object (ISN_MAP_BUILDS). */
#define ISN_BUILD_ID_LEN 32
int link_build_record(int ifindex, const unsigned char *build_id);
/* Whether the link runs that build (false where no build was recorded: an older one's). */
bool link_build_is(int ifindex, const unsigned char *build_id);
/* The ifindex this namespace's record of ifname has (a device since gone, say), or -errno. */
int link_index_by_name(const char *ifname);

/* --- user/state.c --- */
/*
 * Starts the flow sweeper's timer (bpf/sweeper.h), or hands a running one
 * to this load's program: isnguard_sweeper, run once. Before any flow is
 * made: a flow needs a slot of the sweeper's queues, which it sizes. 0, or
 * -errno after a line naming the bpf_timer call that failed.
 */
int state_start_sweeper(struct isnguard *skel, const char *ifname);
/* One attach or detach at a time: the lock's fd, or -1 after the error line. */
int state_lock(const char *cmd);

#endif /* ISNGUARD_STATE_H */
