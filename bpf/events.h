/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Events (include/isnguard.h, struct isn_event) into the ring buffers of
 * their readers, `isnguard monitor` (isn_events) and the exporter
 * (isn_events_log). Only rare branches emit, through global functions or
 * inlined on branches no hot path takes: the hot paths keep their
 * instructions. A ring without room is counted (events_lost), never
 * waited for; with no reader there, nothing is made.
 *
 * Sampled drops are rate-limited per CPU (ISN_EVENT_DROPS_PER_SEC a
 * second), a table's refusals to one event a second: a flood of either
 * cannot fill the ring for the events that are rare by nature.
 */
#ifndef ISNGUARD_BPF_EVENTS_H
#define ISNGUARD_BPF_EVENTS_H

#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "config.h"
#include "ctx.h"
#include "isnguard.h"
#include "parse.h"
#include "stats.h"

/* `isnguard monitor`'s ring and the exporter's (enum isn_event_reader). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ISN_EVENTS_BYTES);
} isn_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ISN_EVENTS_BYTES);
} isn_events_log SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isn_event_state);
	__uint(map_flags, BPF_F_MMAPABLE);
} isn_event_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isn_event_drops);
} isn_event_drops SEC(".maps");

/*
 * The event being made, per CPU (the program's own, not pinned): the SYN
 * paths' frames leave no stack for it (make check-verifier), and it goes
 * to up to two rings.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isn_event);
} isn_event_scratch SEC(".maps");

/* Set by the loader: the interface this object is attached to, named by its events. */
const volatile __u32 event_ifindex = 0;

/* The state, when some reader is there to take events; NULL otherwise. */
static __always_inline struct isn_event_state *event_readers(void)
{
	__u32 zero = 0;
	struct isn_event_state *es = bpf_map_lookup_elem(&isn_event_state, &zero);

	return es && (es->reader_pid[ISN_EVENT_READER_MONITOR] ||
		      es->reader_pid[ISN_EVENT_READER_EXPORTER]) ? es : NULL;
}

/* This CPU's event, zeroed and stamped as type, or NULL. */
static __always_inline struct isn_event *event_new(__u32 type)
{
	__u32 zero = 0;
	struct isn_event *ev = bpf_map_lookup_elem(&isn_event_scratch, &zero);

	if (!ev)
		return NULL;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = bpf_ktime_get_ns();
	ev->netns_ino = netns_ino;
	ev->ifindex = event_ifindex;
	ev->type = type;
	return ev;
}

/* ev into the ring of each reader there; a ring without room counts events_lost. */
static __always_inline void event_send(const struct isn_event_state *es, struct isn_event *ev)
{
	if (es->reader_pid[ISN_EVENT_READER_MONITOR] &&
	    bpf_ringbuf_output(&isn_events, ev, sizeof(*ev), 0))
		stat_inc(STAT_EVENTS_LOST);
	if (es->reader_pid[ISN_EVENT_READER_EXPORTER] &&
	    bpf_ringbuf_output(&isn_events_log, ev, sizeof(*ev), 0))
		stat_inc(STAT_EVENTS_LOST);
}

/*
 * Auto mode's window on port decided: cookies on or off, and with them a
 * flood's start or end (the same window, the same hysteresis; see
 * synproxy_auto_active). Two events, flood first when it starts, last when
 * it ends.
 */
__noinline int event_auto_switch(__u32 port, __u32 rate, __u32 threshold, __u32 on)
{
	const __u32 types[2][2] = {
		{ ISN_EVENT_AUTO_OFF, ISN_EVENT_FLOOD_END },
		{ ISN_EVENT_FLOOD_START, ISN_EVENT_AUTO_ON },
	};
	struct isn_event_state *es = event_readers();

	if (!es)
		return 0;
	for (int i = 0; i < 2; i++) {
		struct isn_event *ev = event_new(types[on ? 1 : 0][i]);

		if (!ev)
			return 0;
		ev->dport = bpf_htons((__u16)port);
		ev->rate = rate;
		ev->threshold = threshold;
		event_send(es, ev);
	}
	return 0;
}

/* A table refused an entry: one event a second at most, whatever the CPUs race. */
static __always_inline void event_table_full(__u32 table)
{
	struct isn_event_state *es = event_readers();
	struct isn_config *cfg;
	struct isn_event *ev;
	__u64 now;

	if (!es || table >= ISN_TABLE_COUNT)
		return;
	now = bpf_ktime_get_ns();
	if (es->table_full_ns[table] && now - es->table_full_ns[table] < ISN_EVENT_TABLE_FULL_GAP_NS)
		return;
	es->table_full_ns[table] = now;
	ev = event_new(ISN_EVENT_TABLE_FULL);
	if (!ev)
		return;
	ev->reason = table;
	cfg = config_get();
	if (cfg && table == ISN_TABLE_FLOWS)
		ev->threshold = cfg->max_flows;
	event_send(es, ev);
}

/* Whether this CPU may send another drop event this second (ISN_EVENT_DROPS_PER_SEC). */
static __always_inline bool event_drop_sampled(void)
{
	struct isn_event_drops *d;
	__u32 zero = 0;
	__u64 now;

	d = bpf_map_lookup_elem(&isn_event_drops, &zero);
	if (!d)
		return false;
	now = bpf_ktime_get_coarse_ns();
	if (now - d->window_start_ns >= NSEC_PER_SEC) {
		d->window_start_ns = now;
		d->sent = 0;
	}
	if (d->sent >= ISN_EVENT_DROPS_PER_SEC)
		return false;
	d->sent++;
	return true;
}

/*
 * The dropped packet's addresses and ports as it came, when it is TCP right
 * after the IP header (IPv4 with any options, IPv6 without extension
 * headers): a parse of its own, far smaller for the verifier than
 * parse_frame's, for a sample that may go without its tuple.
 */
static __always_inline void event_tuple(const struct ctx *c, struct isn_event *ev)
{
	__u64 off = l3_device ? 0 : ETH_HLEN, l4_off;
	__u8 *ip, family, proto;
	__be16 *word, *ports;

	if (!l3_device) {
		word = ctx_ptr(c, ETH_HLEN - 2, 2);
		if (!word)
			return;
		if (*word == bpf_htons(ETH_P_8021Q) || *word == bpf_htons(ETH_P_8021AD)) {
			off += VLAN_HLEN;
			word = ctx_ptr(c, ETH_HLEN + 2, 2);
			if (!word)
				return;
		}
		if (*word != bpf_htons(ETH_P_IP) && *word != bpf_htons(ETH_P_IPV6))
			return;
	}
	ip = ctx_ptr(c, off, IPV6_HLEN);	/* an IPv4 header and its TCP ports fit too */
	if (!ip)
		return;
	family = ip[0] >> 4;
	if (family == FLOW_FAMILY_IPV4) {
		proto = ip[9];
		__builtin_memcpy(ev->saddr, ip + 12, 4);
		__builtin_memcpy(ev->daddr, ip + 16, 4);
		l4_off = off + (ip[0] & 0xf) * 4;
	} else if (family == FLOW_FAMILY_IPV6) {
		proto = ip[6];
		__builtin_memcpy(ev->saddr, ip + 8, 16);
		__builtin_memcpy(ev->daddr, ip + 24, 16);
		l4_off = off + IPV6_HLEN;
	} else {
		return;
	}
	ev->family = family;
	ev->proto = proto;
	if (proto != IPPROTO_TCP)
		return;
	ports = ctx_ptr(c, l4_off, 4);
	if (!ports)
		return;
	ev->sport = ports[0];
	ev->dport = ports[1];
}

/*
 * A program's exit on a decision worth an event (event_wanted): a table
 * full, or a packet dropped, sampled.
 */
static __always_inline void event_packet(const struct ctx *c, int stat)
{
	struct isn_event_state *es;
	struct isn_event *ev;

	if (stat == STAT_PASS_TABLE_FULL) {
		event_table_full(ISN_TABLE_FLOWS);
		return;
	}
	if (stat == STAT_PROXY_TABLE_FULL)
		event_table_full(ISN_TABLE_PROXY);
	es = event_readers();
	if (!es || !event_drop_sampled())
		return;
	ev = event_new(ISN_EVENT_DROP);
	if (!ev)
		return;
	ev->reason = (__u32)stat;
	ev->ifindex = ctx_ifindex(c);
	event_tuple(c, ev);
	event_send(es, ev);
}

__noinline int event_packet_xdp(struct xdp_md *xdp, int stat)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };

	if (!xdp)
		return 0;
	event_packet(&c, stat);
	return 0;
}

__noinline int event_packet_skb(struct __sk_buff *skb, int stat)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };

	if (!skb)
		return 0;
	event_packet(&c, stat);
	return 0;
}

/*
 * A key written (user/key.c runs isnguard_event_key after each): an event
 * when the generation in use is not the one the last event said.
 */
static __always_inline int event_key_rotated(void)
{
	struct isn_event_state *es;
	struct isn_config *cfg = config_get();
	struct isn_event *ev;
	__u32 zero = 0;

	es = bpf_map_lookup_elem(&isn_event_state, &zero);
	if (!es || !cfg)
		return 1;
	if (es->key_gen == cfg->key_gen)
		return 0;
	es->key_gen = cfg->key_gen;
	if (!event_readers())
		return 0;
	ev = event_new(ISN_EVENT_KEY_ROTATED);
	if (!ev)
		return 1;
	ev->ifindex = 0;	/* no interface's: the state's */
	ev->key_gen = cfg->key_gen;
	event_send(es, ev);
	return 0;
}

/* Whether a program's exit with this decision and verdict calls event_packet_*. */
#define event_wanted(stat, dropped) \
	((dropped) || (stat) == STAT_PASS_TABLE_FULL)

#endif /* ISNGUARD_BPF_EVENTS_H */
