// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Attaches and detaches the least ISN rewriter (tests/bpf/least_rewrite.bpf.c),
 * the floor of the connection-rate bench's rewrite rows (scripts/bench-conn.sh,
 * row "least"):
 *
 *   least_rewrite attach IFACE [--ingress tc]
 *                                its XDP program (native mode) on IFACE's
 *                                ingress, or with --ingress tc its tc one
 *                                (row "least_tc"), and its tc program on
 *                                IFACE's egress, sharing one flow table,
 *                                with a fresh secret from getrandom(2)
 *   least_rewrite detach IFACE   all off, IFACE's clsact qdisc with them
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

	xdp_err = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);	/* none: not an error */
	tc_hook_of(&hook, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
	tc_err = bpf_tc_hook_destroy(&hook);
	if (xdp_err)
		return fail("XDP detach", xdp_err);
	if (tc_err)
		return fail("tc clsact removal", tc_err);
	return 0;
}

/*
 * prog on IFACE's clsact hook at point, the qdisc made if there was none
 * (*created); opts gets the filter's handle and priority.
 */
static int tc_attach(int ifindex, enum bpf_tc_attach_point point, struct bpf_program *prog,
		     struct bpf_tc_opts *opts, bool *created)
{
	struct bpf_tc_hook hook;
	int err;

	tc_hook_of(&hook, ifindex, point);
	err = bpf_tc_hook_create(&hook);
	if (!err)
		*created = true;
	else if (err != -EEXIST)
		return fail("tc clsact qdisc", err);
	memset(opts, 0, sizeof(*opts));
	opts->sz = sizeof(*opts);
	opts->prog_fd = bpf_program__fd(prog);
	err = bpf_tc_attach(&hook, opts);
	if (err)
		return fail(point == BPF_TC_INGRESS ? "tc ingress attach" : "tc egress attach", err);
	return 0;
}

static int attach(int ifindex, bool tc_ingress)
{
	struct bpf_tc_opts in_opts = {}, out_opts;
	__u32 xdp_id = 0;
	struct least_rewrite *skel;
	struct bpf_tc_hook hook;
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
	/* One ingress program, the other not loaded. */
	bpf_program__set_autoload(skel->progs.least_ingress, !tc_ingress);
	bpf_program__set_autoload(skel->progs.least_ingress_tc, tc_ingress);
	err = least_rewrite__load(skel);
	if (err) {
		err = fail("load", err);
		goto out;
	}
	if (tc_ingress) {
		/* The row measures the device with no XDP program: none may be there. */
		err = bpf_xdp_query_id(ifindex, 0, &xdp_id);
		if (err || xdp_id) {
			err = err ? fail("XDP query", err)
				  : fail("--ingress tc: an XDP program is on the device", EEXIST);
			goto out;
		}
		if (tc_attach(ifindex, BPF_TC_INGRESS, skel->progs.least_ingress_tc, &in_opts,
			      &created))
			goto undo_qdisc;	/* nothing attached yet */
	} else {
		err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.least_ingress),
				     XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (err) {
			err = fail("XDP attach (native mode, none attached before)", err);
			goto out;
		}
	}
	if (tc_attach(ifindex, BPF_TC_EGRESS, skel->progs.least_egress, &out_opts, &created))
		goto undo;
	err = 0;
	goto out;
undo:
	/* What this attach made, and only that: a clsact qdisc that was there stays. */
	if (!tc_ingress) {
		bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	} else if (!created) {
		tc_hook_of(&hook, ifindex, BPF_TC_INGRESS);
		in_opts.prog_fd = 0;
		in_opts.prog_id = 0;
		in_opts.flags = 0;
		bpf_tc_detach(&hook, &in_opts);
	}
undo_qdisc:
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
	bool attaching = argc >= 3 && !strcmp(argv[1], "attach");
	bool tc_ingress = attaching && argc == 5 && !strcmp(argv[3], "--ingress") &&
			  !strcmp(argv[4], "tc");

	if (!(argc == 3 && (attaching || !strcmp(argv[1], "detach"))) && !tc_ingress) {
		fprintf(stderr, "usage: least_rewrite attach IFACE [--ingress tc] | detach IFACE\n");
		return 2;
	}
	ifindex = if_nametoindex(argv[2]);
	if (!ifindex)
		return fail(argv[2], errno);
	return attaching ? attach((int)ifindex, tc_ingress) : detach((int)ifindex);
}
