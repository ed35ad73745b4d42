/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where isnguard keeps its state: maps pinned under one bpffs directory
 * (ISN_PIN_DIR, or $ISNGUARD_PIN_DIR), shared by every interface it is
 * attached to, so a connection keeps its translation whichever way it routes.
 */
#ifndef ISNGUARD_PINNED_H
#define ISNGUARD_PINNED_H

#include <stdbool.h>
#include <stddef.h>

/* The bpffs holding the state: /sys/fs/bpf, or the host's through /proc/1/root under `ip netns exec`. */
const char *bpffs_root(void);
const char *pin_dir(void);
/* "<pin_dir>/<name>" into buf; -ENAMETOOLONG if it does not fit. */
int pin_path(char *buf, size_t len, const char *name);

/* Mounts bpffs on /sys/fs/bpf when it is not one (as under `ip netns exec`). */
int bpffs_ensure(void);

/* True when the pin directory's bpffs is private to this mount namespace (ip netns exec). */
bool pin_dir_is_private(void);

/*
 * Opens a pinned map by name (the key map write-only). Returns an fd, or
 * -ENOENT when isnguard holds no state there, or another -errno.
 */
int pinned_map_open(const char *name);

/* True when the state directory holds isnguard's maps. */
bool pinned_state_exists(void);

/* Fails with a one-line error unless running with the privileges BPF needs. */
int require_root(const char *cmd);

/* One-line error for a failed pinned_map_open(): "not attached" for -ENOENT. */
void report_open_error(const char *cmd, const char *name, int err);

#endif /* ISNGUARD_PINNED_H */
