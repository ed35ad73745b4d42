/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* isn_local_addrs: this namespace's addresses, for the SYN proxy's route decision (bpf/local_addr.h). */
#ifndef ISNGUARD_LOCAL_ADDRS_H
#define ISNGUARD_LOCAL_ADDRS_H

#include <stdint.h>

/*
 * The map (fd) holds this namespace's addresses, netns_ino's entries
 * replaced by what getifaddrs lists now. Returns how many, or -errno.
 */
int local_addrs_fill(int fd, uint64_t netns_ino);

#endif /* ISNGUARD_LOCAL_ADDRS_H */
