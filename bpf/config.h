/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control plane's settings: the hash mode and timeouts (isn_config) and
 * the secret (isn_key). The key map is BPF_F_WRONLY from syscalls, so
 * `bpftool map dump` cannot read the secret, and BPF_F_RDONLY_PROG, so no
 * program can change it.
 */
#ifndef ISNGUARD_BPF_CONFIG_H
#define ISNGUARD_BPF_CONFIG_H

#include <bpf/bpf_helpers.h>
#include "isnguard.h"

#define NSEC_PER_SEC 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isn_config);
} isn_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ISN_KEY_SLOTS);
	__type(key, __u32);
	__type(value, struct isn_key);
	__uint(map_flags, BPF_F_WRONLY | BPF_F_RDONLY_PROG);
} isn_key SEC(".maps");

/* The loader's record of attachments; no program reads it, it is here to be pinned with BTF. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ISN_MAX_LINKS);
	__type(key, struct link_key);
	__type(value, struct link_info);
} isn_links SEC(".maps");

/*
 * Set by the loader: the network namespace of the interfaces this object
 * is attached to. The state (isn_syn_resend, the queues) is shared by
 * attachments in every namespace; each namespace's tick resends only its
 * own flows, from queues of its own. Maps shared by attachments in every
 * namespace key their entries with it (bpf/resend.h, bpf/local_addr.h).
 * Events name it.
 */
const volatile __u64 netns_ino = 0;

static __always_inline struct isn_config *config_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&isn_config, &zero);
}

/* The key of generation gen (isn_config.key_gen says which is current). */
static __always_inline const struct isn_key *key_get(__u32 gen)
{
	__u32 slot = gen & (ISN_KEY_SLOTS - 1);

	return bpf_map_lookup_elem(&isn_key, &slot);
}

#endif /* ISNGUARD_BPF_CONFIG_H */
