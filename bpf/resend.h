/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The translating proxy's SYN, sent again to a silent server (bpf/proxy.h).
 * The client's ACK became the only SYN there was; a client whose server
 * speaks first (SMTP, SSH) then sends nothing more, so a SYN lost on the way
 * or dropped by a full accept queue would never go again, and the client
 * would wait for ever. isnguard resends it with Linux's back-off (1 s, then
 * doubling) and, at SYNPROXY_CONNECT_TIMEOUT_NS, gives up: the client gets
 * a RST it accepts (RFC 5961 3.2: at exactly its RCV.NXT) and the entry goes.
 *
 * A BPF timer cannot send a packet, and isnguard has no daemon: a packet
 * must carry each resend. The clock is the tick device (ISN_TICK_DEV), a
 * bridge with no ports made by attach, whose IGMP querier the kernel runs
 * once a second: each query arrives at the bridge's own ingress, where
 * isnguard_tc_tick rewrites it into the due SYNs and RSTs, one clone each
 * (bpf_clone_redirect), from what proxy_open recorded here (the SYN's TCP
 * header, the cookie ACK's interface and MACs). The SYN goes in at that
 * interface again, as the client's ACK did; the RST goes out of it.
 * netfilter's SYNPROXY and pf's synproxy resend only on the client's own
 * retransmissions.
 *
 * Which flows are due is kept in queues (include/isnguard.h, struct
 * resend_queues), not found by a walk of the records: each flow holds a
 * slot in the queue of its next step, and all slots of a step are due the
 * same time after their flow's first SYN, so a queue is in due order and a
 * run looks at the heads alone. A due slot is taken: its flow's SYN goes
 * again and the flow takes a slot of the next step, or the client gets its
 * RST; a slot whose record went (the server answered: the record goes when
 * its slot comes due) or has a newer slot is dropped. A run takes at most
 * RESEND_BATCH slots and stops past RESEND_RUN_CUT_NS; then, due slots
 * maybe left, it makes its carrier an IGMP query again and sends a copy of
 * it to the tick device's own ingress, whose run goes on from there. So no
 * run is long whatever the table's size, every due flow goes on time, and
 * a tick with nothing due looks at four queue heads.
 */
#ifndef ISNGUARD_BPF_RESEND_H
#define ISNGUARD_BPF_RESEND_H

#include <bpf/bpf_helpers.h>
#include "compiler.h"
#include "config.h"
#include "ctx.h"
#include "flow.h"
#include "parse.h"
#include "stats.h"
#include "synhdr.h"
#include "tcp.h"

#define EEXIST 17	/* errno values are #defines, not in vmlinux.h */

#define RESEND_BATCH SYNPROXY_RESEND_BATCH
/*
 * And a run past this stops at its next check, every RESEND_CLOCK_EVERY
 * slots, leaving the rest to the next: well under the 1 ms a run counted in
 * resend_runs_over_1ms takes.
 */
#define RESEND_RUN_CUT_NS 500000ULL
#define RESEND_CLOCK_EVERY 32
#define RESEND_LONG_RUN_NS 1000000ULL
#define IGMP_HOST_MEMBERSHIP_QUERY 0x11

_Static_assert((SYNPROXY_RESEND_STEPS & (SYNPROXY_RESEND_STEPS - 1)) == 0,
	       "a step is masked into its arrays");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SYNPROXY_RESEND_MAX);
	__type(key, struct flow_key);
	__type(value, struct syn_resend);
} isn_syn_resend SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SYNPROXY_RESEND_NETNS_MAX);
	__type(key, __u64);
	__type(value, struct resend_queues);
} isn_resend_queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SYNPROXY_RESEND_SLOTS);
	__type(key, struct resend_slot_key);
	__type(value, struct resend_slot);
} isn_resend_slots SEC(".maps");

/*
 * A new record, its key and first slot are written here, and a namespace's
 * first queues: they do not fit proxy_open's call chain's stack.
 */
struct resend_new {
	struct flow_key key;
	struct syn_resend r;
	struct resend_slot slot;
	struct resend_queues queues;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct resend_new);
} isn_resend_new SEC(".maps");

/* When a flow whose first SYN went at first_ns is due at step (a resend, or the give-up). */
static __always_inline __u64 resend_due_at(__u64 first_ns, __u32 step)
{
	if (step >= SYNPROXY_SYN_RESENDS)
		return first_ns + SYNPROXY_CONNECT_TIMEOUT_NS;
	/* 1, 3, 7 s: each wait twice the one before, as Linux's SYN retransmissions. */
	return first_ns + (SYNPROXY_RESEND_FIRST_NS << (step + 1)) - SYNPROXY_RESEND_FIRST_NS;
}

/* When the next resend (or, after the last, the give-up) of r is due. */
static __always_inline __u64 resend_due_ns(const struct syn_resend *r)
{
	return resend_due_at(r->first_ns, r->resends);
}

/* Whether st is still the connection r was recorded for, its server silent. */
static __always_inline bool resend_live(const struct syn_resend *r, const struct flow_state *st)
{
	__u32 seq = bpf_ntohl(r->tcp[1]);

	return st && (st->flags & FLOW_F_PROXY_OPEN) && seq + 1 == st->host_ack;
}

/* This namespace's queues, made empty on first use (zero: scratch for them). */
static __always_inline struct resend_queues *resend_queues_get(struct resend_queues *zero)
{
	struct resend_queues *q = bpf_map_lookup_elem(&isn_resend_queues, (const void *)&netns_ino);

	if (q)
		return q;
	__builtin_memset(zero, 0, sizeof(*zero));
	bpf_map_update_elem(&isn_resend_queues, (const void *)&netns_ino, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&isn_resend_queues, (const void *)&netns_ino);
}

/*
 * The next slot of step's queue in q for the flow fk, due at due_ns, its
 * value written from slot (scratch): 0 and the slot's position in *pos, or
 * -1 when the slots are all in use. A slot is published before its record
 * is written or moved to it: a run leaves a slot alone until it is due, and
 * drops a due one whose record does not name it.
 */
static __always_inline int resend_slot_take(struct resend_queues *q, __u32 step,
					    const struct flow_key *fk, __u64 due_ns,
					    struct resend_slot *slot, __u32 *pos)
{
	struct resend_slot_key sk = { .netns_ino = netns_ino };
	long err;

	/*
	 * The verifier sees the index bounded: kept from clang, which knows a
	 * caller's step + 1 is, where kernel 6.1's verifier does not.
	 */
	barrier_var(step);
	step &= SYNPROXY_RESEND_STEPS - 1;
	sk.step = step;
	sk.pos = __sync_fetch_and_add(&q->tail[step], 1);
	__builtin_memcpy(&slot->key, fk, sizeof(slot->key));
	slot->due_ns = due_ns;
	err = bpf_map_update_elem(&isn_resend_slots, &sk, slot, BPF_NOEXIST);
	/* Fully ordered after the write: a run passes over a missing slot only once every writer is done. */
	__sync_fetch_and_add(&q->written[step], 1);
	if (err)
		return -1;
	*pos = sk.pos;
	return 0;
}

/*
 * tc ingress: the first SYN of a flow, just made from the cookie ACK in
 * place by proxy_open (STAT_PROXY_SYN), is recorded for resends: its TCP
 * header, read back from the skb, and where it came from, with a slot of
 * the first resend's queue. The SYN again (the client's own
 * retransmission) finds it recorded already. Frames with a VLAN tag are
 * not: the tick's frames have none. A global function, after proxy_open,
 * not inside it: its stack would not fit on top of that one.
 */
__noinline int resend_track(struct __sk_buff *skb, const struct pkt *pkt_arg)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct resend_queues *q;
	struct resend_new *n;
	struct pkt p;
	__u32 zero = 0, tcp_len;
	__u8 doff;
	long err;

	if (!pkt_arg)
		return -1;
	p = *pkt_arg;	/* on this stack, the verifier ties its loads together */
	n = bpf_map_lookup_elem(&isn_resend_new, &zero);
	if (!n || p.l3_off != (l3_device ? 0 : ETH_HLEN) || skb->vlan_present ||
	    bpf_skb_load_bytes(skb, p.l4_off + 12, &doff, 1))
		goto untracked;
	tcp_len = (doff >> 4) * 4;
	if (tcp_len < TCP_HLEN_MIN || tcp_len > sizeof(n->r.tcp))
		goto untracked;
	__builtin_memset(&n->r, 0, sizeof(n->r));
	if (tcp_flow_key(&c, &p, false, &n->key) ||
	    (!l3_device && bpf_skb_load_bytes(skb, 0, n->r.macs, sizeof(n->r.macs))))
		goto untracked;
	if (bpf_map_lookup_elem(&isn_syn_resend, &n->key))
		return 0;	/* the client's cookie ACK again: its flow has its record */
	/* A word at a time: a load's length the verifier sees bounded with either compiler. */
#pragma unroll
	for (__u32 i = 0; i < SYNHDR_MAX_WORDS; i++) {
		if (i * 4 >= tcp_len)
			break;
		if (bpf_skb_load_bytes(skb, p.l4_off + i * 4, &n->r.tcp[i], 4))
			goto untracked;
	}
	((__u16 *)n->r.tcp)[8] = 0;	/* the checksum: the tick computes it */
	n->r.tcp_len = tcp_len;
	n->r.first_ns = bpf_ktime_get_coarse_ns();
	n->r.netns_ino = netns_ino;
	n->r.ifindex = skb->ifindex;
	q = resend_queues_get(&n->queues);
	if (!q || resend_slot_take(q, 0, &n->key, resend_due_at(n->r.first_ns, 0), &n->slot,
				   &n->r.queue_pos))
		goto untracked;
	/*
	 * A map value is a key kernel 6.1 takes. -EEXIST: another CPU's copy
	 * of the ACK recorded the flow meanwhile, and the slot taken here is
	 * dropped when due, as is that of a record the full table refused.
	 */
	err = bpf_map_update_elem(&isn_syn_resend, &n->key, &n->r, BPF_NOEXIST);
	if (!err || err == -EEXIST)
		return 0;
untracked:
	stat_inc(STAT_PROXY_RESEND_UNTRACKED);	/* the client's retransmissions alone resend */
	return -1;
}

/*
 * The carrier becomes the frame: Ethernet (dst, src, type), a fresh IP
 * header from src to dst, the TCP words with their checksum.
 */
static __always_inline int resend_frame(struct __sk_buff *skb, const struct flow_key *fk,
					const __u8 *eth_dst, const __u8 *eth_src,
					const __u8 *src, const __u8 *dst, __u32 *words,
					__u32 tcp_len)
{
	bool v4 = fk->family == FLOW_FAMILY_IPV4;
	__u16 proto = v4 ? ETH_P_IP : ETH_P_IPV6;
	__u32 ip_len = v4 ? IPV4_HLEN_MIN : IPV6_HLEN;
	__u32 addrs[8] = {};
	__u8 eth[ETH_HLEN];

	/*
	 * Checked on the register the stores use: clang 19, knowing the RST's
	 * length, would drop the check kernel 6.1's verifier needs.
	 */
	barrier_var(tcp_len);
	tcp_len &= 0x3c;
	if (tcp_len > SYNHDR_MAX_WORDS * 4 || tcp_len < TCP_HLEN_MIN)
		return -1;
	if (skb->protocol != bpf_htons(proto) && bpf_skb_change_proto(skb, bpf_htons(proto), 0))
		return -1;
	if (bpf_skb_change_tail(skb, ETH_HLEN + ip_len + tcp_len, 0))
		return -1;
	__builtin_memcpy(eth, eth_dst, 6);
	__builtin_memcpy(eth + 6, eth_src, 6);
	*(__be16 *)(eth + 12) = bpf_htons(proto);
	if (bpf_skb_store_bytes(skb, 0, eth, sizeof(eth), 0))
		return -1;
	if (v4) {
		struct iphdr ip = {
			.version = 4,
			.ihl = 5,
			.frag_off = bpf_htons(0x4000),	/* DF, as Linux's SYNs */
			.ttl = SYNHDR_TTL,
			.protocol = IPPROTO_TCP,
		};

		__builtin_memcpy(&ip.saddr, src, 4);
		__builtin_memcpy(&ip.daddr, dst, 4);
		synhdr_ipv4(&ip, tcp_len, false);
		__builtin_memcpy(addrs, &ip.saddr, 8);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, addrs, 2);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0))
			return -1;
	} else {
		struct ipv6hdr ip6 = { .version = 6, .nexthdr = IPPROTO_TCP,
				       .hop_limit = SYNHDR_TTL };

		__builtin_memcpy(&ip6.saddr, src, 16);
		__builtin_memcpy(&ip6.daddr, dst, 16);
		synhdr_ipv6(&ip6, tcp_len, false);
		__builtin_memcpy(addrs, &ip6.saddr, 32);
		((__u16 *)words)[8] = synhdr_csum(words, tcp_len, addrs, 8);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6), 0))
			return -1;
	}
	return bpf_skb_store_bytes(skb, ETH_HLEN + ip_len, words, tcp_len, 0) ? -1 : 0;
}

/*
 * A live flow whose slot of step came due: its SYN again, in at the
 * interface the cookie ACK came in by, and a slot of the next step; or, at
 * the give-up's step or past the connect timeout, a RST out to the client,
 * and the entry goes. A
 * next slot is due as its step says, and at least a second on, so a flow
 * whose tick came late gets no two SYNs at once. Without a slot for it
 * the record goes: the client's retransmissions alone resend.
 */
static __always_inline void resend_flow(struct __sk_buff *skb, struct resend_queues *q,
					const struct flow_key *key, struct syn_resend *r,
					struct flow_state *st, __u32 step, __u64 now)
{
	__u32 words[SYNHDR_MAX_WORDS] = {};
	struct resend_slot slot;
	struct synhdr h = {};
	__u32 ifindex, pos;
	__u8 macs[12];
	__u64 due;

	__builtin_memcpy(macs, r->macs, sizeof(macs));
	if (step < SYNPROXY_SYN_RESENDS &&
	    (__s64)(now - r->first_ns) < (__s64)SYNPROXY_CONNECT_TIMEOUT_NS) {
		due = resend_due_at(r->first_ns, step + 1);
		if ((__s64)(due - now) < (__s64)SYNPROXY_RESEND_FIRST_NS)
			due = now + SYNPROXY_RESEND_FIRST_NS;
		if (resend_slot_take(q, step + 1, key, due, &slot, &pos)) {
			bpf_map_delete_elem(&isn_syn_resend, key);
			stat_inc(STAT_PROXY_RESEND_UNTRACKED);
			return;
		}
		r->queue_pos = pos;
		r->resends = step + 1;
		__builtin_memcpy(words, r->tcp, sizeof(words));
		if (resend_frame(skb, key, macs, macs + 6, key->remote_addr, key->local_addr, words,
				 r->tcp_len))
			return;
		stat_inc(STAT_PROXY_SYN_RESENT);
		bpf_clone_redirect(skb, r->ifindex, BPF_F_INGRESS);
		return;
	}
	/* The server never answered: the client gets a RST at the seq it expects. */
	h.source = key->local_port;
	h.dest = key->remote_port;
	h.seq = st->wire_isn + 1;
	h.flags = TCPF_RST;
	ifindex = r->ifindex;
	bpf_map_delete_elem(&isn_syn_resend, key);
	if (!bpf_map_delete_elem(&isn_flows, key)) {
		flow_count_add(-1);
		stat_inc(STAT_FLOW_REMOVED);
	}
	stat_inc(STAT_PROXY_GAVE_UP);
	if (!resend_frame(skb, key, macs + 6, macs, key->local_addr, key->remote_addr, words,
			  synhdr_words(words, &h)))
		bpf_clone_redirect(skb, ifindex, 0);
}

enum resend_head {
	RESEND_WAIT,	/* nothing of the queue to take now: the next queue */
	RESEND_TAKEN,	/* a slot taken: the queue's next */
};

/*
 * The head of step's queue: RESEND_WAIT when the queue is empty, its head
 * not due (nor, then, any behind it), or not written yet by a CPU that
 * took it; else it is taken (RESEND_TAKEN), by this run or, racing, by
 * another, and its flow resent or given up (resend_flow). A slot whose
 * record went or names another slot is dropped, as is one never written
 * (the slots were all in use).
 */
static __always_inline int resend_next(struct __sk_buff *skb, __u32 step, __u64 now)
{
	struct resend_slot_key sk = { .netns_ino = netns_ino };
	struct resend_queues *q;
	struct resend_slot *slot;
	struct flow_state *st;
	struct syn_resend *r;
	struct flow_key key;
	__u32 head, tail, written;

	q = bpf_map_lookup_elem(&isn_resend_queues, (const void *)&netns_ino);
	if (!q)
		return RESEND_WAIT;
	barrier_var(step);	/* as in resend_slot_take */
	step &= SYNPROXY_RESEND_STEPS - 1;
	/* written first: every slot before tail is done with when the two agree (resend_slot_take). */
	written = __sync_fetch_and_add(&q->written[step], 0);
	tail = __sync_fetch_and_add(&q->tail[step], 0);
	head = q->head[step];
	if (head == tail)
		return RESEND_WAIT;
	sk.step = step;
	sk.pos = head;
	slot = bpf_map_lookup_elem(&isn_resend_slots, &sk);
	if (slot) {
		if ((__s64)(now - slot->due_ns) < 0)
			return RESEND_WAIT;
		__builtin_memcpy(&key, &slot->key, sizeof(key));
	} else if (written != tail) {
		return RESEND_WAIT;	/* its CPU has not written it yet: the next run looks again */
	}
	if (__sync_val_compare_and_swap(&q->head[step], head, head + 1) != head || !slot)
		return RESEND_TAKEN;	/* another run took it; or never written */
	/* slot is not read after this: a deleted element is reused at once. */
	bpf_map_delete_elem(&isn_resend_slots, &sk);
	r = bpf_map_lookup_elem(&isn_syn_resend, &key);
	if (!r || r->netns_ino != netns_ino || r->resends != step || r->queue_pos != head)
		return RESEND_TAKEN;
	st = bpf_map_lookup_elem(&isn_flows, &key);
	if (!resend_live(r, st)) {
		bpf_map_delete_elem(&isn_syn_resend, &key);	/* the server answered, or the entry went */
		return RESEND_TAKEN;
	}
	resend_flow(skb, q, &key, r, st, step, now);
	return RESEND_TAKEN;
}

/*
 * The carrier again, for the run that goes on from this one: an IGMPv2
 * general query (RFC 2236 2), as the bridge's querier sends, without the
 * Router Alert, to the tick device's own ingress. netif_rx queues it behind
 * the SYNs this run sent, on this CPU.
 */
static __always_inline void resend_chain(struct __sk_buff *skb)
{
	static const __u8 query[ETH_HLEN + IPV4_HLEN_MIN + 8] = {
		0x01, 0x00, 0x5e, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0xd9, 0xdf,
		0x00, 0x00, 0x00, 0x00, 0xe0, 0x00, 0x00, 0x01,
		IGMP_HOST_MEMBERSHIP_QUERY, 0x00, 0xee, 0xff, 0x00, 0x00, 0x00, 0x00,
	};
	__u8 frame[sizeof(query)];

	__builtin_memcpy(frame, query, sizeof(frame));
	if (skb->protocol != bpf_htons(ETH_P_IP) &&
	    bpf_skb_change_proto(skb, bpf_htons(ETH_P_IP), 0))
		return;
	if (bpf_skb_change_tail(skb, sizeof(frame), 0) ||
	    bpf_skb_store_bytes(skb, 0, frame, sizeof(frame), 0))
		return;
	stat_inc(STAT_RESEND_CHAINED);
	bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
}

/* A tick run's progress: the queue it is at, the slots it took. */
struct resend_run {
	__u64 start;	/* bpf_ktime_get_ns at the run's start */
	__u64 now;	/* the records' clock (bpf_ktime_get_coarse_ns) */
	__u32 step;	/* the queue: SYNPROXY_RESEND_STEPS once all are done */
	__u32 taken;
	__u32 more;	/* stopped by RESEND_BATCH or the clock: due slots may be left */
	__u32 pad;
};

/*
 * One step of a run: the head of its queue taken, or the queue left for the
 * next. 1 when the run is over. A global function, verified once: the
 * run's loop then costs the verifier a call a round.
 */
__noinline int resend_step(struct __sk_buff *skb, struct resend_run *run)
{
	if (!run || run->step >= SYNPROXY_RESEND_STEPS)
		return 1;
	if (resend_next(skb, run->step, run->now) == RESEND_WAIT)
		return ++run->step >= SYNPROXY_RESEND_STEPS;
	run->taken++;
	if (run->taken >= RESEND_BATCH ||
	    (!(run->taken & (RESEND_CLOCK_EVERY - 1)) &&
	     bpf_ktime_get_ns() - run->start >= RESEND_RUN_CUT_NS)) {
		run->more = 1;
		return 1;
	}
	return 0;
}

/*
 * The tick device's ingress: an IGMP query (the querier's, once a second,
 * or a run's own, resend_chain) carries the due resends, each a clone of it
 * rewritten; then it is dropped. Anything else passes. The queues are taken
 * in step order, up to RESEND_BATCH slots or RESEND_RUN_CUT_NS; a run
 * stopped so hands over to the next.
 */
static __always_inline int resend_tick(struct __sk_buff *skb)
{
	struct ctx c = { .ctx = skb, .kind = CTX_SKB };
	struct resend_run run = {};
	struct iphdr *ip;
	__u8 *type;
	__u64 ns;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	ip = ctx_ptr(&c, ETH_HLEN, IPV4_HLEN_MIN);
	if (!ip || ip->protocol != IPPROTO_IGMP)
		return TC_ACT_UNSPEC;
	type = ctx_ptr(&c, ETH_HLEN + ip->ihl * 4, 1);
	if (!type || *type != IGMP_HOST_MEMBERSHIP_QUERY)
		return TC_ACT_UNSPEC;
	run.start = bpf_ktime_get_ns();
	run.now = bpf_ktime_get_coarse_ns();
	/* Each step takes a slot or ends a queue: the run is over before the bound. */
	for (__u32 i = 0; i < RESEND_BATCH + SYNPROXY_RESEND_STEPS; i++)
		if (resend_step(skb, &run))
			break;
	if (run.more)
		resend_chain(skb);
	ns = bpf_ktime_get_ns() - run.start;
	stat_inc(STAT_RESEND_RUNS);
	stat_add(STAT_RESEND_SLOTS, run.taken);
	stat_add(STAT_RESEND_NS, ns);
	if (ns > RESEND_LONG_RUN_NS)
		stat_inc(STAT_RESEND_LONG_RUNS);
	return TC_ACT_SHOT;
}

#endif /* ISNGUARD_BPF_RESEND_H */
