// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * detach of one interface, in order: egress first, then the SYN answer
 * before the ACK side, the record forgotten, the clsact qdisc attach made,
 * the tick and the state where nothing is left; a gone interface's record;
 * and purge, the kept state removed.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "hooks.h"
#include "isnguard.h"
#include "json_writer.h"
#include "loader.h"
#include "netdev.h"
#include "pinned.h"
#include "state.h"
#include "synhook.h"
#include "synproxy.h"
#include "tick.h"

/* gone: NULL, or why there was nothing to take off ("gone": the device no longer exists). */
static void print_detached(const char *ifname, const char *state, const char *gone,
			   enum detach_output out)
{
	struct json_writer jw;

	if (out == DETACH_QUIET)
		return;
	if (out == DETACH_TEXT) {
		printf("detached from %s (%sstate %s)\n", ifname,
		       gone ? "the interface is gone, its record forgotten; " : "", state);
		return;
	}
	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "detached", ifname);
	jw_string_field(&jw, "state", state);
	if (gone)
		jw_string_field(&jw, "interface", gone);
	jw_end_object(&jw);
	jw_finish(&jw);
}

/*
 * The namespace's last attachment gone, and with it its tick: the resends
 * it was to make go too, unless the state is kept for a restart here (or
 * goes whole: nothing is left to attach).
 */
static void resend_forget_here(const char *ifname, bool keep_state, int remaining)
{
	int err;

	if (keep_state || remaining == 0)
		return;
	err = resend_state_forget(netns_inode());
	if (err)
		fprintf(stderr, "%s: warning: detach %s: forget this namespace's resends: %s\n",
			PROG_NAME, ifname, strerror(-err));
}

static int detach_locked(const char *ifname, int ifindex, bool keep_state,
			 enum detach_output out)
{
	bool made_clsact;
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

	made_clsact = link_record_flags(ifindex) & LINK_F_CLSACT_MADE;
	remaining = forget_link(ifindex);
	/* The clsact qdisc attach made goes too, unless someone's filter is on it now. */
	if (made_clsact && netdev_clsact_filters(ifindex) == 0)
		destroy_created_hook(ifindex, true);
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
		resend_forget_here(ifname, keep_state, remaining);
	}
	if (!keep_state && remaining == 0)
		remove_state();
	state = keep_state ? "kept" : remaining > 0 ? "kept for other interfaces" : "removed";
	print_detached(ifname, state, NULL, out);
	return 0;
}

/* A record whose device is gone (deleted, its namespace moved): forgotten, as detach would. */
static int forget_gone(const char *ifname, int ifindex, bool keep_state, enum detach_output out)
{
	int remaining = forget_link(ifindex);

	if (remaining < 0) {
		cli_error("detach %s: update %s: %s", ifname, ISN_MAP_LINKS, strerror(-remaining));
		return remaining;
	}
	if (links_here() == 0) {
		tick_remove();
		resend_forget_here(ifname, keep_state, remaining);
	}
	if (!keep_state && remaining == 0)
		remove_state();
	print_detached(ifname, keep_state ? "kept" : remaining > 0 ? "kept for other interfaces"
							: "removed", "gone", out);
	return 0;
}

int loader_detach(const char *ifname, bool keep_state, enum detach_output out)
{
	int ifindex, lock, err, recorded;

	if (strlen(ifname) < IFNAMSIZ && !if_nametoindex(ifname) &&
	    (recorded = link_index_by_name(ifname)) > 0) {
		lock = state_lock("detach");
		if (lock < 0)
			return -EBUSY;
		err = forget_gone(ifname, recorded, keep_state, out);
		close(lock);
		return err;
	}
	ifindex = loader_resolve_ifindex("detach", ifname);
	if (ifindex < 0)
		return ifindex;
	bpffs_ensure();
	lock = state_lock("detach");
	if (lock < 0)
		return -EBUSY;
	err = detach_locked(ifname, ifindex, keep_state, out);
	close(lock);
	return err;
}

int loader_purge(void)
{
	int lock = state_lock("purge"), err;

	if (lock < 0)
		return -EBUSY;
	remove_state();
	err = tick_remove();
	if (err)
		fprintf(stderr, "%s: warning: purge: remove the tick device %s: %s\n", PROG_NAME,
			ISN_TICK_DEV, strerror(-err));
	close(lock);
	return 0;
}
