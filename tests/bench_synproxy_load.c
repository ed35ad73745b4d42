// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench_synproxy's BPF objects: the datapath as attach sets it up, and the programs loaded beside it on its maps. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_steps.skel.h"
#include "bench_synproxy.h"
#include "bpf_run.h"
#include "isnguard.skel.h"
#include "local_addrs.h"
#include "map_share.h"

int setup_datapath(struct isnguard **dp)
{
	struct synproxy_config sp = {
		.mode = SYNPROXY_ALWAYS,
		/* As attach sets it where the kernel has bpf_sk_assign_tcp_reqsk: the local path. */
		.flags = SYNPROXY_F_SACK | SYNPROXY_F_TIMESTAMPS | SYNPROXY_F_WSCALE |
			 SYNPROXY_F_ECN | SYNPROXY_F_LOCAL_PATH,
		.syn_threshold = 1000, .rcv_wscale = 7, .window = 65535,
	};
	struct isn_config cfg = { .hash = ISN_HASH_SIPHASH };
	/*
	 * The SYN policy as attach writes it (a bucket per source prefix), but
	 * with a rate no run reaches: every SYN pays its source bucket's check
	 * and is answered.
	 */
	struct syn_policy pol = {
		.source_rate = SYN_RATE_MAX, .source_burst = SYN_RATE_MAX,
		.source_prefix4 = SYN_SOURCE_PREFIX4_DEFAULT,
		.source_prefix6 = SYN_SOURCE_PREFIX6_DEFAULT, .flags = SYN_POLICY_SET,
	};
	uint32_t zero = 0, word = BENCH_PORT >> 6;
	uint64_t bits = 1ULL << (BENCH_PORT & 63);

	*dp = isnguard__open();
	if (!*dp || bpf_map__set_max_entries((*dp)->maps.isn_flows, 4096) ||
	    bpf_map__set_max_entries((*dp)->maps.isn_opening, 1024) || isnguard__load(*dp))
		return -1;
	if (bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_key), &zero, &bench_key, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_config), &zero, &cfg, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_synproxy_ports), &word, &bits,
				BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_synproxy), &zero, &sp, BPF_ANY))
		return -1;
	syn_policy_derive(&pol);
	if (bpf_map_update_elem(bpf_map__fd((*dp)->maps.isn_syn_policy), &zero, &pol, BPF_ANY))
		return -1;
	/* As attach does: the namespace's addresses (bpf/local_addr.h). */
	if (local_addrs_fill(bpf_map__fd((*dp)->maps.isn_local_addrs), 0) < 0)
		return -1;
	/* As attach does: flows enter isn_flows only with a slot of the sweeper's queue. */
	{
		unsigned char frame[64] = { 0 };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
			    .data_size_in = sizeof(frame), .repeat = 1);

		if (bpf_prog_test_run_opts(bpf_program__fd((*dp)->progs.isnguard_sweeper), &opts) ||
		    opts.retval)
			return -1;
	}
	return 0;
}

/*
 * isnguard_tc_ingress answering SYNs (`attach --syn-hook tc`): the object
 * loaded again with syn_at_tc set, on the first load's maps.
 */
int setup_syn_tc(struct isnguard *dp, struct isnguard **syn_tc)
{
	struct bpf_program *p;

	*syn_tc = isnguard__open();
	if (!*syn_tc)
		return -1;
	(*syn_tc)->rodata->syn_at_tc = true;
	bpf_object__for_each_program(p, (*syn_tc)->obj)
		bpf_program__set_autoload(p, p == (*syn_tc)->progs.isnguard_tc_ingress);
	if (map_share((*syn_tc)->obj, dp->obj, NULL))
		return -1;
	return isnguard__load(*syn_tc);
}

/*
 * isnguard_xdp on the first load's maps but a SYN policy of its own, all
 * zero (no limit, no list, no monitor): the SYN policy's cost is the
 * difference from the first load's, taken round by round.
 */
int setup_no_policy(struct isnguard *dp, struct isnguard **no_policy)
{
	struct bpf_program *p;

	*no_policy = isnguard__open();
	if (!*no_policy)
		return -1;
	bpf_object__for_each_program(p, (*no_policy)->obj)
		bpf_program__set_autoload(p, p == (*no_policy)->progs.isnguard_xdp);
	if (map_share((*no_policy)->obj, dp->obj, ISN_MAP_SYN_POLICY))
		return -1;
	return isnguard__load(*no_policy);
}

/* The programs that stop after each step of the SYN answer, on the datapath's maps. */
int setup_steps(struct isnguard *dp, struct bench_steps **steps)
{
	struct bpf_program *p;

	*steps = bench_steps__open();
	if (!*steps)
		return -1;
	bpf_object__for_each_program(p, (*steps)->obj)
		bpf_program__set_autoload(p, !strncmp(bpf_program__name(p), "bench_step_", 11));
	if (map_share((*steps)->obj, dp->obj, NULL))
		return -1;
	return bench_steps__load(*steps);
}

/* A counter of the datapath, summed over CPUs (UINT64_MAX when it cannot be read). */
uint64_t stat_sum(struct isnguard *dp, uint32_t stat)
{
	return percpu_u64_sum(bpf_map__fd(dp->maps.isn_stats), stat, sizeof(uint64_t), 0);
}

/* Another build's object on the datapath's maps: the programs the A/B cases run. */
int setup_other(struct isnguard *dp, const char *path, struct bpf_object **other)
{
	struct bpf_program *p;

	*other = bpf_object__open_file(path, NULL);
	if (!*other)
		return -1;
	bpf_object__for_each_program(p, *other) {
		const char *name = bpf_program__name(p);

		bpf_program__set_autoload(p, !strcmp(name, "isnguard_tc_cookie") ||
						     !strcmp(name, "isnguard_tc_ingress") ||
						     !strcmp(name, "isnguard_xdp"));
	}
	if (map_share(*other, dp->obj, NULL))
		return -1;
	return bpf_object__load(*other);
}

