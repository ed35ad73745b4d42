/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A second load of a BPF object on the first one's maps (a load-time switch set differently). */
#ifndef ISNGUARD_TEST_MAP_SHARE_H
#define ISNGUARD_TEST_MAP_SHARE_H

#include <bpf/libbpf.h>

/*
 * Before to is loaded: each of its maps that from has by name reuses from's,
 * but its own globals (.bss, .rodata) and the maps whose names start with
 * except (NULL: none). Returns NULL, or the name of the map that could not
 * be shared (errno set).
 */
const char *map_share(struct bpf_object *to, const struct bpf_object *from, const char *except);

#endif /* ISNGUARD_TEST_MAP_SHARE_H */
