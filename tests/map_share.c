// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include <bpf/libbpf.h>

#include "map_share.h"

const char *map_share(struct bpf_object *to, const struct bpf_object *from, const char *except)
{
	struct bpf_map *map, *ours;

	bpf_object__for_each_map(map, to) {
		if (bpf_map__is_internal(map) ||
		    (except && !strncmp(bpf_map__name(map), except, strlen(except))))
			continue;
		ours = bpf_object__find_map_by_name(from, bpf_map__name(map));
		if (ours && bpf_map__reuse_fd(map, bpf_map__fd(ours)))
			return bpf_map__name(map);
	}
	return NULL;
}
