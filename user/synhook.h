/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where a device's SYN cookies are answered, and the resend tick (user/synhook.c). */
#ifndef ISNGUARD_SYNHOOK_H
#define ISNGUARD_SYNHOOK_H

#include <stdbool.h>

struct attach_request;
struct isnguard;

/* The pinned state's SYN proxy is on (a restart over kept state). */
bool synhook_kept_proxy_on(void);
/* This load's SYN proxy settings have it on (a kept state's, say). */
bool synhook_proxy_on(struct isnguard *skel);
/* The tick program pinned beside the state (ISN_PIN_TICK_PROG), replacing an older one. */
void synhook_pin_tick_prog(struct isnguard *skel);
/*
 * Sets req->synproxy_kept, and on a veth whose peer has no XDP program,
 * SYN cookies at tc (said on stderr), unless the hooks were named: then
 * -EOPNOTSUPP after a one-line error naming the fix.
 */
int synhook_choose(struct attach_request *req, int ifindex);

#endif /* ISNGUARD_SYNHOOK_H */
