/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The tick device of the translating proxy's SYN resends (user/tick.c, bpf/resend.h). */
#ifndef ISNGUARD_TICK_H
#define ISNGUARD_TICK_H

/* Makes ISN_TICK_DEV in this network namespace unless it is there: its ifindex, or -errno. */
int tick_ensure(void);
/* Removes it (0 when there is none): 0 or -errno. */
int tick_remove(void);

#endif /* ISNGUARD_TICK_H */
