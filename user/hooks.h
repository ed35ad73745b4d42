/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The hooks of one interface (user/hooks.c): XDP through libxdp, our filters
 * on clsact, the tick device's filter. Each reports its own failure as one
 * line on stderr and returns 0 or -errno.
 */
#ifndef ISNGUARD_HOOKS_H
#define ISNGUARD_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

struct attach_request;
struct isnguard;
struct xdp_program;

#define XDP_PROG_NAME "isnguard_xdp"
/* The SYN-cookie half alone, beside --ingress tc. */
#define XDP_COOKIE_PROG_NAME "isnguard_xdp_cookie"

struct ingress_attached {
	struct xdp_program *xdp_prog;	/* isnguard_xdp, or isnguard_xdp_cookie beside tc */
	bool tc;			/* a filter on clsact ingress */
	uint32_t prog_id;		/* the ingress program */
	uint32_t cookie_prog_id;	/* its SYN-proxy companion, if any */
};

/* libbpf's message for err (-errno or a libbpf code) into buf, else strerror's. */
void libbpf_message(char *buf, size_t len, int err);

/* Loads the object and attaches the ingress side: XDP through libxdp, tc, or both. */
int attach_ingress(struct isnguard *skel, const struct attach_request *req, int ifindex,
		   struct ingress_attached *in, bool *created_hook);
/*
 * --replace: loads the object and swaps each of our ingress programs for
 * this load's, in place (tc: BPF_TC_F_REPLACE; XDP: XDP_FLAGS_REPLACE, where
 * ours holds the hook alone), the hooks as they are. No undo: a program
 * not swapped stays the previous build's, on the same maps.
 */
int replace_ingress(struct isnguard *skel, const struct attach_request *req, int ifindex,
		    struct ingress_attached *in);
/* The egress filter swapped in place. */
int replace_egress(const char *ifname, int ifindex, struct bpf_program *prog, uint32_t *prog_id);
/* Undoes attach_ingress: the XDP program first, so no SYN is answered whose ACK nobody takes. */
void detach_ingress(const struct attach_request *req, int ifindex, struct ingress_attached *in);

/* Our filter on one clsact hook; *created_hook tells whether clsact was made here. */
int attach_tc(int ifindex, enum bpf_tc_attach_point point, struct bpf_program *prog,
	      bool *created_hook, uint32_t *prog_id);
int detach_tc(int ifindex, enum bpf_tc_attach_point point);
/* Removes the clsact qdisc this attach created (and so nobody else uses yet). */
void destroy_created_hook(int ifindex, bool created_hook);
/* Our XDP program called name off ifindex, if it is there. */
int detach_xdp(const char *ifname, int ifindex, const char *name);

/* The tick device's filter, for the SYN proxy's resends; a warning, not a failure, if it fails. */
void attach_tick(struct isnguard *skel, const struct attach_request *req);
/* Our filter is on the tick device's clsact ingress. */
bool tick_filter_present(int ifindex);
/* The same with a program's fd (the pinned one); who names the caller in the warning. */
int attach_tick_prog(int prog_fd, const char *who);

#endif /* ISNGUARD_HOOKS_H */
