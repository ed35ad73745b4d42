/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Header prediction for XDP ingress, after Van Jacobson's and Linux's
 * tcp_rcv_established() fast path: most segments in are ACKs of an
 * established, rewritten flow in the layouts real stacks send. Those are
 * recognised here straight from packet pointers (Ethernet, IPv4 without
 * options or IPv6 without extension headers, TCP with no options, the
 * aligned timestamps, and NOP, NOP, SACK after them or alone) and get
 * ack and SACK edges -= delta with one checksum fix (a proxied flow's
 * TSecr and window then too). Anything else (VLAN tags, IP options,
 * fragments, SYN or RST, other option layouts, a flow still in its
 * handshake or closed, a proxied flow still opening, a proxied flow's
 * FIN) is left to the general path (parse.h, ingress.h), which handles
 * every case and gives the same bytes
 * for these; tests/test_datapath.c checks both.
 */
#ifndef ISNGUARD_BPF_FASTPATH_H
#define ISNGUARD_BPF_FASTPATH_H

#include <bpf/bpf_endian.h>
#include "csum.h"
#include "flow.h"
#include "parse.h"
#include "proxy.h"
#include "stats.h"
#include "tcpopt.h"

/* Not predicted: the general path takes the segment. */
#define FASTPATH_MISS (-1)

/*
 * Flags a predicted segment must not have. ACK it must; PSH, URG, ECE, CWR
 * and FIN may come: a FIN|ACK is translated alike and only marks the flow
 * (FLOW_F_FIN_REMOTE), one per connection that the general path took
 * before at twice the cost (make PROFILE=1, issue 18).
 */
#define FASTPATH_FLAGS_OFF (TCPF_SYN | TCPF_RST)

/*
 * struct fastpath_scratch (include/isnguard.h): the key is built there, not
 * on the stack, where it would add 40 bytes to the frame beneath XDP's
 * deepest call chain (the general path's, make check-verifier). Per CPU, it holds one
 * packet's key at a time: XDP runs with bottom halves off, so two runs of
 * this program never interleave on a CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fastpath_scratch);
} isn_fastpath SEC(".maps");

/* Adds what replacing *field with field - delta changes to the 64-bit sum. */
static __always_inline __u64 fastpath_shift(__be32 *field, __u32 delta, __u64 sum)
{
	__be32 old = *field, new = bpf_htonl(bpf_ntohl(old) - delta);

	*field = new;
	return sum + (__u32)~old + new;
}

/*
 * struct flow_key as 32-bit words. The type is only 2-byte aligned (its
 * ports), so clang would write it 2 bytes at a time; the scratch map's
 * value is 8-byte aligned, and this view lets it take whole words.
 */
struct fastpath_key {
	__u32 local[4];
	__u32 remote[4];
	__u32 ports;		/* local_port, remote_port */
	__u32 family;		/* family, pad[3]: written bytewise */
};
_Static_assert(sizeof(struct fastpath_key) == sizeof(struct flow_key), "fastpath_key");
_Static_assert(__builtin_offsetof(struct flow_key, local_port) ==
	       __builtin_offsetof(struct fastpath_key, ports), "fastpath_key ports");

/*
 * The flow key (but its ports) and TCP header of a plain IPv4 or IPv6 TCP
 * segment; NULL when the frame is anything else. *ip_payload is the IP
 * payload length.
 */
static __always_inline struct tcphdr *fastpath_headers(void *data, void *end,
						       struct fastpath_key *k, __u32 *ip_payload)
{
	struct ethhdr *eth = data;
	__u32 i;

	/* One bound for Ethernet, the IP header and the TCP header without options. */
	if (data + ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN > end)
		return NULL;
	k->family = 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);

		/* Version 4, no options, not a later fragment, TCP. */
		if (*(__u8 *)iph != 0x45 || (iph->frag_off & bpf_htons(IP_OFFSET)) ||
		    iph->protocol != IPPROTO_TCP || bpf_ntohs(iph->tot_len) < IPV4_HLEN_MIN)
			return NULL;
		((struct flow_key *)k)->family = FLOW_FAMILY_IPV4;
		k->local[0] = iph->daddr;
		k->remote[0] = iph->saddr;
		k->local[1] = k->local[2] = k->local[3] = 0;
		k->remote[1] = k->remote[2] = k->remote[3] = 0;
		*ip_payload = bpf_ntohs(iph->tot_len) - IPV4_HLEN_MIN;
		return (void *)(iph + 1);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if (data + ETH_HLEN + IPV6_HLEN + TCP_HLEN_MIN > end ||
		    (*(__u8 *)ip6h >> 4) != 6 || ip6h->nexthdr != IPPROTO_TCP)
			return NULL;
		((struct flow_key *)k)->family = FLOW_FAMILY_IPV6;
		for (i = 0; i < 4; i++) {
			k->local[i] = ip6h->daddr.in6_u.u6_addr32[i];
			k->remote[i] = ip6h->saddr.in6_u.u6_addr32[i];
		}
		*ip_payload = bpf_ntohs(ip6h->payload_len);
		return (void *)(ip6h + 1);
	}
	return NULL;
}

/*
 * A proxied flow's TSecr and window, after ack and SACK, as the general
 * path's proxy_translate does. A global function with only the context and
 * the flow for arguments: what the prediction knew would otherwise be kept
 * across its lookup on the stack, which the general path's chain needs.
 */
__noinline int fastpath_proxied(struct xdp_md *xdp, struct flow_state *st)
{
	struct ctx c = { .ctx = xdp, .kind = CTX_XDP };
	struct pkt p = {};

	if (!st || parse_packet(&c, &p, false) != PARSE_OK)
		return -1;
	return proxy_ingress(&c, &p, st);
}

/*
 * STAT_ACK_TRANSLATED for a predicted ACK of an established flow,
 * STAT_PASS_UNTRACKED for a predicted segment of no flow at all, or
 * FASTPATH_MISS. Inlined: a call costs more here than the whole
 * prediction (make bench), so only the general path makes calls.
 */
static __always_inline int fastpath_ack(struct xdp_md *xdp)
{
	void *data, *end;
	struct fastpath_scratch *scratch;
	struct flow_state *st;
	struct fastpath_key *fk;
	struct tcphdr *th;
	__be32 *opt;
	__u32 ip_payload = 0, delta, hlen, optlen, blocks, i, ports, flow_flags, zero = 0;
	__u8 flags;
	__u64 sum;

	if (l3_device)
		return FASTPATH_MISS;
	data = (void *)(long)xdp->data;
	end = (void *)(long)xdp->data_end;
	scratch = bpf_map_lookup_elem(&isn_fastpath, &zero);
	if (!scratch)
		return FASTPATH_MISS;
	fk = (struct fastpath_key *)&scratch->key;	/* at offset 0 of an 8-byte aligned value */
	th = fastpath_headers(data, end, fk, &ip_payload);
	if (!th)
		return FASTPATH_MISS;
	flags = ((__u8 *)th)[13];
	hlen = th->doff * 4;
	if (!(flags & TCPF_ACK) || (flags & FASTPATH_FLAGS_OFF) || hlen < TCP_HLEN_MIN ||
	    hlen > ip_payload || (void *)th + hlen > end)
		return FASTPATH_MISS;

	/* Options: none; timestamps; SACK after timestamps or alone (tcpopt.h's layouts). */
	opt = (void *)(th + 1);
	optlen = hlen - TCP_HLEN_MIN;
	if (optlen >= TCPOLEN_TSTAMP_ALIGNED && (void *)(opt + 1) <= end &&
	    *opt == bpf_htonl(TCPOPT_TSTAMP_HDR)) {
		opt += 3;
		optlen -= TCPOLEN_TSTAMP_ALIGNED;
	}
	blocks = 0;
	if (optlen) {
		if ((void *)(opt + 1) > end)
			return FASTPATH_MISS;
		blocks = tcpopt_sack_word(bpf_ntohl(*opt), optlen);
		if (!blocks)
			return FASTPATH_MISS;
	}

	ports = *(__u32 *)th;	/* source, dest: the key has them the other way round */
	fk->ports = ports >> 16 | ports << 16;
	st = bpf_map_lookup_elem(&isn_flows, fk);
	if (!st) {
		/* A handshake's segment goes the general way, which promotes it. */
		if (bpf_map_lookup_elem(&isn_opening, fk))
			return FASTPATH_MISS;
		return STAT_PASS_UNTRACKED;
	}
	/*
	 * A proxied flow still opening, or with isnguard's own ACK on its way,
	 * is the SYN proxy's; a closed one's segment may be a new cookie
	 * handshake's ACK (synproxy_reopen).
	 */
	flow_flags = st->flags;
	if (!(flow_flags & FLOW_F_ESTABLISHED) ||
	    (flow_flags & (FLOW_F_PROXY_OPEN | FLOW_F_PROXY_ACK)) ||
	    flow_phase_of(flow_flags) == FLOW_PHASE_CLOSED ||
	    ((flags & TCPF_FIN) && (flow_flags & FLOW_F_PROXIED)))
		return FASTPATH_MISS;

	delta = st->seq_delta;
	/* RFC 1624 eqn. 3 in one sum: ~HC, then ~m + m' for each field. */
	sum = fastpath_shift(&th->ack_seq, delta, (__u16)~th->check);
	for (i = 0; i < MAX_SACK_BLOCKS * 2; i++) {
		__be32 *edge = opt + 1 + i;

		if (i >= blocks * 2 || (void *)(edge + 1) > end)
			break;
		sum = fastpath_shift(edge, delta, sum);
	}
	th->check = (__sum16)~csum_fold32(csum_fold64(sum));
	if (blocks)
		stat_add(STAT_SACK_BLOCKS, blocks);
	if (flags & TCPF_FIN)
		flow_note_flags(st, FLOW_F_FIN_REMOTE);
	if (flow_flags & FLOW_F_PROXIED) {
		if (fastpath_proxied(xdp, st))
			return STAT_DROP_ERROR;
		/* The connection's first data: no longer a silent one (bpf/proxy.h). */
		proxy_note_data(st, (flow_flags & FLOW_F_PROXY_SILENT) && ip_payload > hlen);
	}
	scratch->predicted++;
	return STAT_ACK_TRANSLATED;
}

#endif /* ISNGUARD_BPF_FASTPATH_H */
