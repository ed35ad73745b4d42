// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach and detach of one interface, in order: the checks before anything
 * changes, the object opened over the pinned state (state.c), the hooks
 * (hooks.c), key, config, SYN-proxy and SYN-policy settings written
 * (settings.c), the sweeper started,
 * the attachment recorded and printed; on failure, the undo.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <openssl/sha.h>

#include "cli.h"
#include "events.h"
#include "hooks.h"
#include "isnguard.h"
#include "isnguard.skel.h"
#include "json_writer.h"
#include "loader.h"
#include "local_addrs.h"
#include "netdev.h"
#include "pinned.h"
#include "policy.h"
#include "settings.h"
#include "state.h"
#include "statslots.h"
#include "synhook.h"
#include "tick.h"

uint64_t netns_inode(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

static int record_link(struct isnguard *skel, const struct attach_request *req, int ifindex,
		       uint32_t ingress_prog_id, uint32_t egress_prog_id, bool made_clsact)
{
	struct link_key key = { .netns_ino = netns_inode(), .ifindex = (uint32_t)ifindex };
	struct link_info info = {
		.ingress = req->ingress,
		.ingress_prog_id = ingress_prog_id,
		.egress_prog_id = egress_prog_id,
		.flags = (req->syn_tc ? LINK_F_SYN_TC : 0) | (made_clsact ? LINK_F_CLSACT_MADE : 0),
		.attached_at = (uint64_t)time(NULL),
	};

	unsigned char build[ISN_BUILD_ID_LEN];

	snprintf(info.ifname, sizeof(info.ifname), "%s", req->ifname);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.isn_links), &key, &info, BPF_ANY))
		return -errno;
	/* Without it, apply would take the link for another build's and replace it once more. */
	loader_build_id(build);
	if (link_build_record(ifindex, build))
		fprintf(stderr, "%s: warning: attach %s: record the build in %s\n", PROG_NAME,
			req->ifname, ISN_MAP_BUILDS);
	return 0;
}

void loader_build_id(unsigned char *id)
{
	size_t len;
	const void *elf = isnguard__elf_bytes(&len);

	SHA256(elf, len, id);
}

/* --- attach / detach ---------------------------------------------------- */

int loader_resolve_ifindex(const char *cmd, const char *ifname)
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
	if ((att.ingress || att.egress) && !req->replace) {
		cli_error("attach %s: already attached (run 'isnguard detach %s' first, or "
			  "'isnguard attach --replace %s' for this build's programs in place)",
			  req->ifname, req->ifname, req->ifname);
		return -EEXIST;
	}
	if (req->replace && !(att.ingress && att.egress)) {
		cli_error("attach %s: --replace: not attached here, nothing to replace",
			  req->ifname);
		return -ENOENT;
	}
	err = check_device(req, ifindex, l3);
	if (err)
		return err;
	*fresh = !pinned_state_exists();
	return pick_max_flows(req, *fresh, max_flows);
}

/* The object, sized and set for this device, over the pinned maps that exist. */
static int open_object(const struct attach_request *req, int ifindex, bool l3,
		       uint32_t max_flows, struct isnguard **skel, struct kept_maps *km)
{
	char msg[128];
	__u32 slot;
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
	/* This interface's own counters in isn_stats (user/statslots.c). */
	slot = stat_slot_claim(req->ifname, ifindex);
	(*skel)->rodata->stats_slot = slot;
	(*skel)->rodata->sweep_stat_full = slot * STAT_COUNT + STAT_SWEEP_QUEUE_FULL;
	(*skel)->rodata->event_ifindex = (__u32)ifindex;
	bpf_map__set_max_entries((*skel)->maps.isn_flows, isn_flows_capacity(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_opening, isn_opening_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_flows, isn_sweep_flows_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_opening, isn_sweep_opening_size(max_flows));
	bpf_map__set_max_entries((*skel)->maps.isn_sweep_long, isn_sweep_long_size(max_flows));
	return reuse_pinned_maps(*skel, req->ifname, km);
}

/* Pins, key, config and SYN-proxy settings; before egress attaches, so no SYN leaves unkeyed. */
static int write_state(struct isnguard *skel, const struct attach_request *req, bool fresh,
		       uint32_t max_flows, struct kept_maps *km)
{
	char msg[128];
	int addrs, err = copy_kept_maps(skel, km);

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
	err = fresh ? settings_write_fresh_key(skel) : 0;
	if (!err)
		err = settings_write_config(skel, req, fresh, max_flows, km->new_sweeper);
	/*
	 * State of a build before SYNPROXY_F_WAS_ON (its sweeper is made
	 * anew): the proxy may have been on, and its connections live.
	 */
	if (!err && !fresh && km->new_sweeper)
		err = settings_mark_was_on(bpf_map__fd(skel->maps.isn_synproxy));
	if (err) {
		cli_error("attach %s: initialise key and config: %s", req->ifname, strerror(-err));
		return err;
	}
	err = state_start_sweeper(skel, req->ifname);
	if (err)
		return err;
	addrs = local_addrs_fill(bpf_map__fd(skel->maps.isn_local_addrs), netns_inode());
	if (addrs < 0)	/* not fatal: every destination takes the route lookup then */
		fprintf(stderr, "%s: warning: attach %s: this namespace's addresses: %s\n", PROG_NAME,
			req->ifname, strerror(-addrs));
	err = settings_write_policy(skel, req);
	if (err) {
		cli_error("attach %s: write the SYN policy: %s", req->ifname, strerror(-err));
		return err;
	}
	if (req->synproxy) {
		err = settings_write_synproxy(skel, req->synproxy);
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

	if (req->quiet)
		return;
	if (!req->json) {
		printf("%s %s: ingress %s%s, egress tc, flow table %u entries (%s)\n",
		       req->replace ? "replaced in place, this build's programs on" : "attached to",
		       req->ifname, link_ingress_name(req->ingress),
		       req->syn_tc ? (req->synproxy || req->synproxy_kept ? " (SYN cookies too)"
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
	jw_bool_field(&jw, "replaced", req->replace);
	jw_end_object(&jw);
	jw_finish(&jw);
}

/*
 * --replace keeps the hooks as attached (the record's ingress and SYN hook,
 * the live XDP mode and cookie companion); hooks named otherwise need a
 * detach and an attach.
 */
static int replace_hooks(struct attach_request *req, int ifindex)
{
	struct link_info info;
	struct attachment att;

	if (link_record(ifindex, &info)) {
		cli_error("attach %s: --replace: no record of an attachment here", req->ifname);
		return -ENOENT;
	}
	loader_query(ifindex, &att);
	if ((req->ingress_given && req->ingress != info.ingress) ||
	    (req->syn_hook_given && req->syn_tc != !!(info.flags & LINK_F_SYN_TC))) {
		cli_error("attach %s: --replace keeps the hooks as attached (ingress %s%s); to "
			  "change them, 'detach --keep-state %s' and attach", req->ifname,
			  link_ingress_name(info.ingress),
			  info.flags & LINK_F_SYN_TC ? ", SYN hook tc" : "", req->ifname);
		return -EINVAL;
	}
	req->ingress = info.ingress;
	req->xdp_skb = info.ingress == LINK_INGRESS_XDP_SKB ||
		       (info.ingress == LINK_INGRESS_TC && att.cookie_prog_id && !att.xdp_native);
	req->syn_tc = info.flags & LINK_F_SYN_TC;
	/* Beside tc ingress, the XDP SYN answer loads only where it runs now. */
	req->synproxy_kept = info.ingress == LINK_INGRESS_TC && !req->syn_tc
				     ? att.cookie_prog_id != 0 : synhook_kept_proxy_on();
	return 0;
}

/*
 * --replace: this build's programs in the place of those attached, each in
 * one kernel call, on the same pinned maps, so no packet passes between two
 * builds untranslated and the link is not touched (no XDP detach, which some
 * drivers answer with a link flap). The kept maps must be this build's
 * layout: a state to rebuild needs the detach and attach of an upgrade.
 */
static int replace_locked(const struct attach_request *req, int ifindex)
{
	struct ingress_attached in = { 0 };
	struct isnguard *skel = NULL;
	struct kept_maps km;
	uint32_t max_flows, egress_id = 0;
	bool fresh, l3;
	int err;

	err = attach_preflight(req, ifindex, &l3, &fresh, &max_flows);
	if (err)
		return err;
	kept_maps_init(&km);
	err = open_object(req, ifindex, l3, max_flows, &skel, &km);
	if (!err && kept_maps_replaced(&km)) {
		cli_error("attach %s: --replace: the pinned state in %s is another build's layout, "
			  "which this build rebuilds only with nothing attached: run 'detach "
			  "--keep-state' on every interface, then 'attach'", req->ifname, pin_dir());
		err = -EPROTO;
	}
	if (!err)
		err = replace_ingress(skel, req, ifindex, &in);
	if (!err)
		err = write_state(skel, req, false, max_flows, &km);
	if (!err)
		err = replace_egress(req->ifname, ifindex, skel->progs.isnguard_tc_egress,
				     &egress_id);
	if (!err) {
		synhook_pin_tick_prog(skel);
		events_pin_key_prog(skel);
		if (synhook_proxy_on(skel))
			attach_tick(skel, req);
		err = record_link(skel, req, ifindex, in.prog_id, egress_id,
				  link_record_flags(ifindex) & LINK_F_CLSACT_MADE);
	}
	if (!err)
		print_attached(req, &in, egress_id, max_flows, false);
	kept_maps_close(&km);
	isnguard__destroy(skel);
	return err;
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
	err = open_object(req, ifindex, l3, max_flows, &skel, &km);
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
	/*
	 * Only the SYN proxy's translate path needs it: no device for ISN
	 * rewriting alone. Kept state with the proxy on (a restart) gets it
	 * as the attach that switched it on did. Its program is pinned, so
	 * that 'apply' and 'synproxy' can put the tick back without a load.
	 */
	synhook_pin_tick_prog(skel);
	events_pin_key_prog(skel);
	if (req->synproxy || synhook_proxy_on(skel))
		attach_tick(skel, req);
	err = record_link(skel, req, ifindex, in.prog_id, egress_id, created_hook);
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

int loader_attach(const struct attach_request *asked)
{
	struct attach_request chosen = *asked, *req = &chosen;
	int ifindex, lock, err;

	ifindex = loader_resolve_ifindex("attach", req->ifname);
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
	err = req->replace ? replace_hooks(req, ifindex) : synhook_choose(req, ifindex);
	if (err)
		return err;
	lock = state_lock("attach");
	if (lock < 0)
		return -EBUSY;
	err = req->replace ? replace_locked(req, ifindex) : attach_locked(req, ifindex);
	close(lock);
	return err;
}

