// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The hooks of one interface: the XDP programs through libxdp, our filters on
 * clsact ingress and egress, the tick device's filter; attaching, detaching,
 * querying them, and the one-line errors of each (the verifier's refusal too).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <linux/if_link.h>

#include "cli.h"
#include "hooks.h"
#include "isnguard.h"
#include "isnguard.skel.h"
#include "loader.h"
#include "tick.h"

/* The kernel keeps 15 characters of a program name. */
#define TC_PROG_NAME_PREFIX "isnguard_tc"

void libbpf_message(char *buf, size_t len, int err)
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

bool tick_filter_present(int ifindex)
{
	return tc_query(ifindex, BPF_TC_INGRESS) != 0;
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
		att->xdp_native = att->ingress_kind == LINK_INGRESS_XDP_NATIVE;
		xdp_multiprog__close(mp);
		att->cookie_prog_id = tc_query(ifindex, BPF_TC_INGRESS);
	} else {
		att->ingress_prog_id = tc_query(ifindex, BPF_TC_INGRESS);
		att->ingress = att->ingress_prog_id != 0;
		att->ingress_kind = LINK_INGRESS_TC;
		prog = xdp_find(ifindex, XDP_COOKIE_PROG_NAME, &mp);
		if (prog) {
			att->cookie_prog_id = xdp_program__id(prog);
			att->xdp_native = xdp_multiprog__attach_mode(mp) != XDP_MODE_SKB;
			xdp_multiprog__close(mp);
		}
	}
	att->egress_prog_id = tc_query(ifindex, BPF_TC_EGRESS);
	att->egress = att->egress_prog_id != 0;
	return 0;
}

/*
 * The hook is taken (EBUSY, EEXIST): by a program loaded without libxdp's
 * dispatcher, which libxdp cannot share, or in the other XDP mode. Names it.
 */
static bool report_xdp_holder(const char *ifname, int ifindex, int err)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info), id;
	int fd;

	if ((err != -EBUSY && err != -EEXIST) || bpf_xdp_query(ifindex, 0, &q))
		return false;
	id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;
	if (!id)
		return false;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd >= 0) {
		bpf_obj_get_info_by_fd(fd, &info, &len);
		close(fd);
	}
	cli_error("attach %s: XDP attach failed: the hook is held by XDP program %u (%s, %s mode), "
		  "not through libxdp's dispatcher; see 'bpftool net show dev %s' or 'isnguard "
		  "check %s'; detach it, load it with xdp-loader, or use --ingress tc --syn-hook tc",
		  ifname, id, info.name[0] ? info.name : "?", q.drv_prog_id == id ? "native"
		  : q.skb_prog_id == id ? "skb" : "hw", ifname, ifname);
	return true;
}

static void report_xdp_error(const char *ifname, int ifindex, int err, enum link_ingress ingress,
			     const struct bpf_object *obj)
{
	char msg[128];

	if (report_refusal(ifname, err, obj) || report_xdp_holder(ifname, ifindex, err))
		return;
	if (err == -EOPNOTSUPP && ingress == LINK_INGRESS_XDP_NATIVE) {
		cli_error("attach %s: the driver has no native XDP (try --xdp-mode skb)", ifname);
		return;
	}
	libbpf_message(msg, sizeof(msg), err);
	cli_error("attach %s: XDP attach failed: %s", ifname, msg);
}

/* Our filter on one clsact hook; *created_hook tells whether clsact was made here. */
int attach_tc(int ifindex, enum bpf_tc_attach_point point, struct bpf_program *prog,
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

int detach_tc(int ifindex, enum bpf_tc_attach_point point)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;

	tc_hook(&hook, ifindex, point);
	tc_filter_opts(&opts);
	return bpf_tc_detach(&hook, &opts);
}

/* Removes the clsact qdisc this attach created (and so nobody else uses yet). */
void destroy_created_hook(int ifindex, bool created_hook)
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
				  tc && (req->synproxy || req->synproxy_kept) && !req->syn_tc);
	bpf_program__set_autoload(skel->progs.isnguard_tc_tick, true);
	bpf_program__set_autoload(skel->progs.isnguard_sweeper, true);
}

/*
 * The tick device's filter (bpf/resend.h), this load's program replacing an
 * older one. Without it the translating proxy resends a silent server's SYN
 * only when the client retransmits, as before: a warning, not a failure.
 */
void attach_tick(struct isnguard *skel, const struct attach_request *req)
{
	char who[64];

	snprintf(who, sizeof(who), "attach %s", req->ifname);
	attach_tick_prog(bpf_program__fd(skel->progs.isnguard_tc_tick), who);
}

int attach_tick_prog(int prog_fd, const char *who)
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
		opts.prog_fd = prog_fd;
		opts.flags = BPF_TC_F_REPLACE;
		err = bpf_tc_attach(&hook, &opts);
	}
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		fprintf(stderr, "%s: warning: %s: tick device %s: %s: the SYN proxy resends "
			"a SYN to a silent server only when the client retransmits\n", PROG_NAME,
			who, ISN_TICK_DEV, msg);
	}
	return err;
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
		report_xdp_error(req->ifname, ifindex, err, mode, skel->obj);
		return err;
	}
	*prog_id = xdp_program__id(*xdp_prog);
	return 0;
}

/* Our filter on one clsact hook swapped for prog in one call (BPF_TC_F_REPLACE). */
static int replace_tc(const char *ifname, int ifindex, enum bpf_tc_attach_point point,
		      struct bpf_program *prog, uint32_t *prog_id)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	char msg[128];
	int err;

	tc_hook(&hook, ifindex, point);
	tc_filter_opts(&opts);
	opts.prog_fd = bpf_program__fd(prog);
	opts.flags = BPF_TC_F_REPLACE;
	err = bpf_tc_attach(&hook, &opts);
	*prog_id = opts.prog_id;
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: replace the tc %s filter: %s", ifname,
			  point == BPF_TC_INGRESS ? "ingress" : "egress", msg);
	}
	return err;
}

/*
 * This load's XDP program in the place of ours called name, in one netlink
 * call (XDP_FLAGS_REPLACE with the old program's fd), so that every packet
 * meets one of the two. Only where ours holds the hook alone (libxdp's
 * legacy mode, as where the kernel refuses freplace): under libxdp's
 * dispatcher it is one of several programs and cannot be swapped alone.
 */
static int replace_xdp(const char *ifname, int ifindex, const char *name,
		       struct bpf_program *prog, uint32_t *prog_id)
{
	struct xdp_multiprog *mp;
	struct xdp_program *old = xdp_find(ifindex, name, &mp);
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	char msg[128];
	__u32 mode;
	int err;

	if (!old) {
		cli_error("attach %s: --replace: no %s attached to replace", ifname, name);
		return -ENOENT;
	}
	if (!xdp_multiprog__is_legacy(mp)) {
		cli_error("attach %s: --replace: %s runs under libxdp's dispatcher, where one "
			  "program cannot be swapped alone; run 'detach --keep-state %s' and "
			  "'attach %s'", ifname, name, ifname, ifname);
		xdp_multiprog__close(mp);
		return -EOPNOTSUPP;
	}
	mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE
							     : XDP_FLAGS_DRV_MODE;
	opts.old_prog_fd = xdp_program__fd(old);
	err = bpf_xdp_attach(ifindex, bpf_program__fd(prog), mode | XDP_FLAGS_REPLACE, &opts);
	xdp_multiprog__close(mp);
	if (err) {
		libbpf_message(msg, sizeof(msg), err);
		cli_error("attach %s: --replace: swap %s: %s", ifname, name, msg);
		return err;
	}
	return bpf_xdp_query_id(ifindex, mode, prog_id);
}

int replace_ingress(struct isnguard *skel, const struct attach_request *req, int ifindex,
		    struct ingress_attached *in)
{
	char msg[128];
	int err;

	refused_prog[0] = 0;
	select_programs(skel, req);
	/* As libxdp loads them (xdp_program__set_xdp_frags_support): multi-buffer frames. */
	bpf_program__set_flags(skel->progs.isnguard_xdp, BPF_F_XDP_HAS_FRAGS);
	bpf_program__set_flags(skel->progs.isnguard_xdp_cookie, BPF_F_XDP_HAS_FRAGS);
	err = isnguard__load(skel);
	if (err) {
		if (!report_refusal(req->ifname, err, skel->obj)) {
			libbpf_message(msg, sizeof(msg), err);
			cli_error("attach %s: load the BPF object: %s", req->ifname, msg);
		}
		return err;
	}
	if (req->ingress == LINK_INGRESS_TC) {
		err = replace_tc(req->ifname, ifindex, BPF_TC_INGRESS,
				 skel->progs.isnguard_tc_ingress, &in->prog_id);
		if (!err && req->synproxy_kept && !req->syn_tc)
			err = replace_xdp(req->ifname, ifindex, XDP_COOKIE_PROG_NAME,
					  skel->progs.isnguard_xdp_cookie, &in->cookie_prog_id);
		return err;
	}
	/* The ACK side first: the new SYN answer's cookies are checked by either. */
	err = replace_tc(req->ifname, ifindex, BPF_TC_INGRESS, skel->progs.isnguard_tc_cookie,
			 &in->cookie_prog_id);
	if (!err)
		err = replace_xdp(req->ifname, ifindex, XDP_PROG_NAME, skel->progs.isnguard_xdp,
				  &in->prog_id);
	return err;
}

int replace_egress(const char *ifname, int ifindex, struct bpf_program *prog, uint32_t *prog_id)
{
	return replace_tc(ifname, ifindex, BPF_TC_EGRESS, prog, prog_id);
}

/* Loads the object and attaches the ingress side: XDP through libxdp, tc, or both. */
int attach_ingress(struct isnguard *skel, const struct attach_request *req, int ifindex,
			  struct ingress_attached *in, bool *created_hook)
{
	char msg[128];
	int err;

	refused_prog[0] = 0;
	select_programs(skel, req);
	if (req->ingress == LINK_INGRESS_TC) {
		bool xdp = (req->synproxy || req->synproxy_kept) && !req->syn_tc;

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
void detach_ingress(const struct attach_request *req, int ifindex,
			   struct ingress_attached *in)
{
	enum link_ingress mode = req->xdp_skb ? LINK_INGRESS_XDP_SKB : LINK_INGRESS_XDP_NATIVE;

	if (in->xdp_prog && xdp_program__id(in->xdp_prog))
		xdp_program__detach(in->xdp_prog, ifindex, xdp_mode_of(mode), 0);
	if (in->tc)
		detach_tc(ifindex, BPF_TC_INGRESS);
}

int detach_xdp(const char *ifname, int ifindex, const char *name)
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
