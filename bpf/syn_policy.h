/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a SYN to a protected port meets before the SYN proxy answers it
 * (struct syn_policy, include/isnguard.h): the prefix lists, monitor mode,
 * and the SYN-ACK limits, per source prefix and for the host. A SYN-cookie
 * responder answers whatever source a SYN names: without a limit one
 * spoofed source draws a SYN-ACK for every SYN it sends, at any rate,
 * towards the address it forges (reflection).
 */
#ifndef ISNGUARD_BPF_SYN_POLICY_H
#define ISNGUARD_BPF_SYN_POLICY_H

#include <bpf/bpf_helpers.h>
#include "ctx.h"
#include "isnguard.h"
#include "parse.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct syn_policy);
} isn_syn_policy SEC(".maps");

/* The ports only watched (SYN_MONITOR_PORTS), a bitmap as isn_synproxy_ports. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SYNPROXY_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} isn_synproxy_monitor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, ISN_PREFIXES_MAX);
	__type(key, struct prefix4_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} isn_prefix4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, ISN_PREFIXES_MAX);
	__type(key, struct prefix6_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} isn_prefix6 SEC(".maps");

/* One bucket per source prefix, in sets (struct syn_bucket_set), shared by every CPU and interface. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ISN_SYN_BUCKET_SETS);
	__type(key, __u32);
	__type(value, struct syn_bucket_set);
} isn_syn_buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct syn_bucket);
} isn_syn_total SEC(".maps");

static __always_inline const struct syn_policy *syn_policy_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&isn_syn_policy, &zero);
}

/* Whether the SYN proxy only watches port (decides and counts, answers nothing). */
static __always_inline bool syn_port_monitored(const struct syn_policy *pol, __be16 port)
{
	__u32 host_port, word;
	__u64 *bits;

	if (pol->monitor != SYN_MONITOR_PORTS)
		return pol->monitor == SYN_MONITOR_ALL;
	host_port = bpf_ntohs(port);
	word = host_port >> 6;
	bits = bpf_map_lookup_elem(&isn_synproxy_monitor, &word);
	return bits && ((*bits >> (host_port & 63)) & 1);
}

/* Whether the segment's destination port is only watched (monitor mode). */
static __always_inline bool syn_ack_monitored(const struct ctx *c, const struct pkt *pkt)
{
	const struct syn_policy *pol = syn_policy_get();
	struct tcphdr *th;

	if (!pol || pol->monitor == SYN_MONITOR_OFF)
		return false;
	th = ctx_ptr(c, pkt->l4_off, TCP_HLEN_MIN);
	return th && syn_port_monitored(pol, th->dest);
}

/*
 * The SYN's IP header, checked for 40 bytes whatever its family, as
 * tcp_addrs does: any TCP segment has them past its IP header's start, and
 * kernel 6.1's verifier, given one check per family, forgets which one held
 * by the time the source is read (the read past an IPv4 check of 20 bytes
 * was refused there as outside the packet).
 */
static __always_inline void *syn_ip_header(const struct ctx *c, const struct pkt *pkt)
{
	return ctx_ptr(c, pkt->l3_off, IPV6_HLEN);
}

/*
 * The list holding the SYN's source (enum syn_list): the longest prefix of
 * either list wins. A family whose lists are empty costs no lookup.
 */
static __always_inline __u32 syn_source_list(const struct ctx *c, const struct pkt *pkt,
					     const struct syn_policy *pol)
{
	__u32 *list;
	__u8 *ip;

	if (!(pol->flags & (SYN_POLICY_LIST4 | SYN_POLICY_LIST6)))
		return SYN_LIST_NONE;	/* the common case: no list at all */
	ip = syn_ip_header(c, pkt);
	if (!ip)
		return SYN_LIST_NONE;
	if (pkt->family == FLOW_FAMILY_IPV4) {
		struct prefix4_key k = { .prefixlen = 32 };

		if (!(pol->flags & SYN_POLICY_LIST4))
			return SYN_LIST_NONE;
		__builtin_memcpy(k.addr, ip + __builtin_offsetof(struct iphdr, saddr), 4);
		list = bpf_map_lookup_elem(&isn_prefix4, &k);
	} else {
		struct prefix6_key k = { .prefixlen = 128 };

		if (!(pol->flags & SYN_POLICY_LIST6))
			return SYN_LIST_NONE;
		__builtin_memcpy(k.addr, ip + __builtin_offsetof(struct ipv6hdr, saddr), 16);
		list = bpf_map_lookup_elem(&isn_prefix6, &k);
	}
	return list ? *list : SYN_LIST_NONE;
}

/* A 32-bit word of an address (network order) with its bits past bits cleared. */
static __always_inline __u32 syn_mask_word(__u32 word, __s32 bits)
{
	if (bits >= 32)
		return word;
	if (bits <= 0)
		return 0;
	return word & bpf_htonl(~(0xffffffffU >> bits));
}

/* The SYN's source prefix, the key of its bucket; -1 when the frame is short. */
static __always_inline int syn_source_of(const struct ctx *c, const struct pkt *pkt,
					 const struct syn_policy *pol, struct syn_source *src)
{
	__u32 *w = (__u32 *)src->addr, *a;
	__u8 *ip = syn_ip_header(c, pkt);
	__s32 bits;

	if (!ip)
		return -1;
	if (pkt->family == FLOW_FAMILY_IPV4) {
		a = (__u32 *)(ip + __builtin_offsetof(struct iphdr, saddr));
		w[0] = 0;
		w[1] = 0;
		w[2] = bpf_htonl(0xffff);
		w[3] = syn_mask_word(*a, pol->source_prefix4);
		return 0;
	}
	a = (__u32 *)(ip + __builtin_offsetof(struct ipv6hdr, saddr));
	bits = pol->source_prefix6;
	w[0] = syn_mask_word(a[0], bits);
	w[1] = syn_mask_word(a[1], bits - 32);
	w[2] = syn_mask_word(a[2], bits - 64);
	w[3] = syn_mask_word(a[3], bits - 96);
	return 0;
}

/*
 * GCRA, the virtual-scheduling form of a token bucket: a SYN-ACK may go
 * when the bucket's theoretical arrival time is no later than now plus the
 * burst's tolerance, and moves it one step on. The host's bucket, which
 * every CPU answering any source takes from at once, moves by
 * compare-and-swap, so CPUs take a token each, never the same one; one that
 * loses twice to others is refused, as over the limit.
 */
static __always_inline bool syn_bucket_take(__u64 *tat_ns, __u64 now, __u64 step,
					    __u64 tolerance)
{
	__u64 tat = *tat_ns, base, seen;

#pragma unroll
	for (int i = 0; i < 2; i++) {
		base = (__s64)(tat - now) > 0 ? tat : now;
		if (base - now > tolerance)
			return false;
		seen = __sync_val_compare_and_swap(tat_ns, tat, base + step);
		if (seen == tat)
			return true;
		tat = seen;
	}
	return false;
}

/*
 * The same for a source's bucket, by a plain load and store: only two CPUs
 * answering one source in the same few nanoseconds can both take its last
 * token, one SYN-ACK more each time, where the compare-and-swap cost every
 * answered SYN 15 ns on bench_synproxy's rows. A SYN over the limit writes
 * nothing, so a flood past it is refused on a clean read.
 */
static __always_inline bool syn_source_bucket_take(__u64 *tat_ns, __u64 now, __u64 step,
						   __u64 tolerance)
{
	__u64 tat = *(volatile __u64 *)tat_ns;
	__u64 base = (__s64)(tat - now) > 0 ? tat : now;

	if (base - now > tolerance)
		return false;
	*(volatile __u64 *)tat_ns = base + step;
	return true;
}

/*
 * The source's bucket in its set: a token taken from it (true), or none
 * left (false). A source with none gets the way closest to full, one token
 * spent; a way forgotten while its source was still spending past its
 * rate is counted (syn_source_bucket_evicted). Two CPUs making buckets in
 * one set at once may write one way each, or both the same: a source then
 * starts again with a full bucket, never a smaller one.
 */
static __always_inline bool syn_source_take(struct syn_bucket_set *set, __u64 tag, __u64 now,
					    const struct syn_policy *pol)
{
	__u32 way = 0;
	__u64 least;

#pragma unroll
	for (int i = 0; i < SYN_BUCKET_WAYS; i++)
		if (set->tag[i] == tag)
			return syn_source_bucket_take(&set->tat_ns[i], now, pol->source_step_ns,
						      pol->source_tolerance_ns);
	least = set->tat_ns[0];
#pragma unroll
	for (int i = 1; i < SYN_BUCKET_WAYS; i++)
		if ((__s64)(set->tat_ns[i] - least) < 0) {
			least = set->tat_ns[i];
			way = i;
		}
	stat_inc(STAT_SYN_BUCKET_NEW);
	/*
	 * Past its rate: more than the one step a source at its rate has
	 * ahead. A source of one SYN is at its rate: a flood from random
	 * addresses forgets such sources all the time, and they cost nothing
	 * to forget (they start again with a full bucket, one token more).
	 */
	if (set->tag[way] && (__s64)(least - now) > (__s64)pol->source_step_ns)
		stat_inc(STAT_SYN_BUCKET_EVICTED);
	set->tag[way] = tag;
	set->tat_ns[way] = now + pol->source_step_ns;
	return true;
}

/* The hash of the SYN's source prefix (syn_source_hash), its bucket's tag; -1 when the frame is short. */
static __always_inline int syn_source_tag(const struct ctx *c, const struct pkt *pkt,
					  const struct syn_policy *pol, __u64 *tag)
{
	struct syn_source src;

	if (syn_source_of(c, pkt, pol, &src))
		return -1;
	*tag = syn_source_hash(&src, pol->source_hash_key);
	return 0;
}

/*
 * A SYN about to be answered, its source's tag (syn_source_tag) and the
 * time: 0 when its SYN-ACK may go, else the decision
 * (STAT_SYN_SOURCE_LIMITED, STAT_SYN_TOTAL_LIMITED).
 */
static __always_inline int syn_limit(const struct syn_policy *pol, __u64 tag, __u64 now)
{
	struct syn_bucket *total;
	__u32 zero = 0;

	/* No tag: the SYN was parsed while the policy had no source limit. */
	if (pol->source_rate && tag) {
		struct syn_bucket_set *set;
		__u32 index = syn_source_set(tag);

		set = bpf_map_lookup_elem(&isn_syn_buckets, &index);
		if (set && !syn_source_take(set, tag, now, pol))
			return STAT_SYN_SOURCE_LIMITED;
	}
	if (!pol->total_rate)
		return 0;
	total = bpf_map_lookup_elem(&isn_syn_total, &zero);
	if (total && !syn_bucket_take(&total->tat_ns, now, pol->total_step_ns,
				      pol->total_tolerance_ns))
		return STAT_SYN_TOTAL_LIMITED;
	return 0;
}

#endif /* ISNGUARD_BPF_SYN_POLICY_H */
