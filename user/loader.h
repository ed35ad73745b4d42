/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Loading and attaching the datapath: the XDP program through libxdp (so it
 * shares the interface with other XDP programs via the dispatcher), the tc
 * egress program on clsact, and the maps pinned with BTF under pin_dir().
 * Every function undoes its partial work on failure.
 */
#ifndef ISNGUARD_LOADER_H
#define ISNGUARD_LOADER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "isnguard.h"
#include "synproxy.h"

struct policy_request;

/* tc filter identity on clsact egress, so detach removes ours and nobody else's. */
#define ISN_TC_HANDLE 0x15a9
#define ISN_TC_PRIORITY 0x1a9
/* libxdp dispatcher run priority: before the default (50), to see the peer's segments first. */
#define ISN_XDP_RUN_PRIO 10

/* Idle timeouts by flow phase (isn_config's timeout_*), each set only where given. */
enum { ISN_TIMEOUT_OPENING, ISN_TIMEOUT_ESTABLISHED, ISN_TIMEOUT_CLOSING, ISN_TIMEOUT_CLOSED,
       ISN_TIMEOUTS };
#define ISN_MAX_TIMEOUT_S (365U * 24 * 3600)

struct attach_timeouts {
	uint32_t seconds[ISN_TIMEOUTS];
	bool given[ISN_TIMEOUTS];
};

struct attach_request {
	const char *ifname;
	int hash;			/* enum isn_hash, or -1 to keep/default */
	enum link_ingress ingress;
	bool xdp_skb;			/* generic XDP, for the XDP program beside tc ingress too */
	bool ingress_given;		/* --ingress or --xdp-mode said; else a veth may pick tc */
	bool syn_tc;			/* --syn-hook tc: SYNs answered at tc ingress, no XDP */
	bool syn_hook_given;
	uint32_t max_flows;		/* 0: keep the existing table's size, or the default */
	const struct synproxy_request *synproxy;	/* --synproxy, or NULL */
	const struct policy_request *policy;	/* the SYN policy's options, or NULL */
	bool json;			/* what was done as one JSON object */
	struct attach_timeouts timeouts;	/* written into isn_config where given */
	bool quiet;			/* print nothing when it succeeds (apply says it) */
	bool replace;			/* --replace: this build's programs in place, atomically */
	/* set by loader_attach: the kept state has the SYN proxy on, so its programs load too */
	bool synproxy_kept;
};

struct attachment {
	bool ingress;			/* our ingress program is attached (XDP or tc) */
	bool egress;			/* our filter is on clsact egress */
	enum link_ingress ingress_kind;
	uint32_t ingress_prog_id;
	uint32_t egress_prog_id;
	/*
	 * The SYN proxy's other half: beside XDP, the tc ingress filter that
	 * takes cookie ACKs; beside tc ingress, the XDP program that answers
	 * SYNs (only with --synproxy at attach). 0 when absent.
	 */
	uint32_t cookie_prog_id;
	bool xdp_native;		/* an XDP program of ours runs in native (driver) mode */
};

/* Errors are reported on stderr as one line; returns 0 or -errno. */
int loader_attach(const struct attach_request *req);
/* How a detach reports what it did: a line, one JSON object, or nothing (its caller says it). */
enum detach_output { DETACH_TEXT, DETACH_JSON, DETACH_QUIET };
int loader_detach(const char *ifname, bool keep_state, enum detach_output out);
/* This build's identity: the SHA-256 of its BPF object (ISN_BUILD_ID_LEN bytes). */
void loader_build_id(unsigned char *id);
/* ifname's index, or -errno after "CMD IFNAME: no such interface" (or too long). */
int loader_resolve_ifindex(const char *cmd, const char *ifname);
/* The pinned state removed, and the resend tick of this namespace; 0 or -errno. */
int loader_purge(void);
/*
 * The resend tick made (or its filter put back) where the state has the SYN
 * proxy on and this namespace has an attachment: true when it was missing.
 */
bool loader_tick_sync(void);
/* What of isnguard is attached to ifindex in this network namespace. */
int loader_query(int ifindex, struct attachment *att);
/* "xdp-native", "xdp-skb" or "tc". */
const char *link_ingress_name(uint32_t ingress);
/*
 * Where SYN cookies are answered on a link: "tc" (LINK_F_SYN_TC), "xdp"
 * where cookie_prog (the link has the SYN proxy's companion program, or is
 * in another namespace), else "none".
 */
const char *link_syn_hook(const struct link_info *info, bool cookie_prog);
/* Inode of this process's network namespace. */
uint64_t netns_inode(void);
/*
 * Each libbpf message, before any is printed: the loader keeps the name of
 * the program libbpf last said it failed to load, to name it in its error.
 */
void loader_libbpf_note(const char *fmt, va_list ap);

#endif /* ISNGUARD_LOADER_H */
