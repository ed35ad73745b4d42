// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Attaches and detaches the least ISN rewriter (tests/bpf/least_rewrite.bpf.c),
 * the floor of the connection-rate bench's rewrite rows (scripts/bench-conn.sh,
 * row "least"):
 *
 *   least_rewrite attach IFACE   its XDP program (native mode) on IFACE's
 *                                ingress, its tc program on IFACE's egress,
 *                                the two sharing one flow table, with a
 *                                fresh secret from getrandom(2)
 *   least_rewrite detach IFACE   both off, IFACE's clsact qdisc with them
 *
 * Run in IFACE's network namespace, as root. The attachments hold the
 * programs and their table once this exits; a failed attach undoes what it
 * made. libbpf's own attach, not libxdp's: a floor to measure against,
 * with nothing between the driver and its program.
 */
#include <errno.h>
#include <stdbool.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "isnguard.h"
#include "least_rewrite.skel.h"

static int fail(const char *what, int err)
{
	char msg[128];

	libbpf_strerror(err < 0 ? err : -err, msg, sizeof(msg));
	fprintf(stderr, "least_rewrite: %s: %s\n", what, msg);
	return 1;
}

static void tc_hook_of(struct bpf_tc_hook *hook, int ifindex, enum bpf_tc_attach_point point)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = point;
}

/* Both programs off; the first error is reported, the other removal still tried. */
static int detach(int ifindex)
{
	struct bpf_tc_hook hook;
	int xdp_err, tc_err;

	xdp_err = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	tc_hook_of(&hook, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
	tc_err = bpf_tc_hook_destroy(&hook);
	if (xdp_err)
		return fail("XDP detach", xdp_err);
	if (tc_err)
		return fail("tc clsact removal", tc_err);
	return 0;
}

static int attach(int ifindex)
{
	struct least_rewrite *skel;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	bool created = false;
	ssize_t n;
	int err;

	skel = least_rewrite__open();
	if (!skel)
		return fail("open", errno);
	n = getrandom(skel->data->least_secret.bytes, sizeof(skel->data->least_secret.bytes), 0);
	if (n != (ssize_t)sizeof(skel->data->least_secret.bytes)) {
		err = fail("getrandom", n < 0 ? errno : EIO);
		goto out;
	}
	err = least_rewrite__load(skel);
	if (err) {
		err = fail("load", err);
		goto out;
	}
	err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.least_ingress),
			     XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (err) {
		err = fail("XDP attach (native mode, none attached before)", err);
		goto out;
	}
	tc_hook_of(&hook, ifindex, BPF_TC_EGRESS);
	err = bpf_tc_hook_create(&hook);
	created = !err;
	if (err && err != -EEXIST) {
		fail("tc clsact qdisc", err);
		goto undo;
	}
	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.prog_fd = bpf_program__fd(skel->progs.least_egress);
	err = bpf_tc_attach(&hook, &opts);
	if (err) {
		fail("tc egress attach", err);
		goto undo;
	}
	err = 0;
	goto out;
undo:
	/* What this attach made, and only that: a clsact qdisc that was there stays. */
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	if (created) {
		tc_hook_of(&hook, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
		bpf_tc_hook_destroy(&hook);
	}
	err = 1;
out:
	least_rewrite__destroy(skel);
	return err;
}

int main(int argc, char **argv)
{
	unsigned int ifindex;

	if (argc != 3 || (strcmp(argv[1], "attach") && strcmp(argv[1], "detach"))) {
		fprintf(stderr, "usage: least_rewrite attach|detach IFACE\n");
		return 2;
	}
	ifindex = if_nametoindex(argv[2]);
	if (!ifindex)
		return fail(argv[2], errno);
	return strcmp(argv[1], "attach") ? detach((int)ifindex) : attach((int)ifindex);
}
