/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whether what the pinned state asks for is served (user/health.c): each
 * recorded link looked at live, in its own network namespace where that can
 * be entered, the SYN proxy's ports against the hooks that answer them, and
 * the resend tick. `status` prints it and exits with its verdict; `synproxy`
 * refuses to switch cookies on where nothing would answer them.
 */
#ifndef ISNGUARD_HEALTH_H
#define ISNGUARD_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "isnguard.h"
#include "loader.h"

/* The verdict, which is also `status`'s exit code. */
enum health_verdict {
	HEALTH_OK = 0,			/* everything the configuration asks for is served */
	HEALTH_NOT_ATTACHED = 3,	/* no interface attached (state kept, or none) */
	HEALTH_DEGRADED = 4,		/* attached, but something asked for is not served */
};

#define HEALTH_MAX_PROBLEMS 16

struct link_health {
	struct link_key key;
	struct link_info info;
	bool checked;		/* looked at live: here, or in a namespace entered by name */
	char netns[256];		/* "" for this namespace, else its name in /run/netns, or "" */
	struct attachment live;
	const char *state;	/* attached, partly-attached, detached, gone, unchecked */
	const char *syn_hook;	/* xdp, tc, none: where SYNs would be answered */
	bool cookies_served;	/* the SYN proxy's SYNs get an answer that reaches the peer */
	bool syns_watched;	/* a SYN hook runs here: monitor mode's SYNs are counted */
	bool synproxy_served;	/* what the settings ask of it: answers, watching, or both */
	char peer[16];		/* a veth's peer device, when known */
	int peer_xdp;		/* 1/0: the veth peer has an XDP program; -1 not a veth or unknown */
};

struct health {
	bool state;			/* pinned state exists */
	bool synproxy_on;		/* ports get SYN cookies (always or auto), or are watched */
	bool synproxy_answers;		/* some of them are answered */
	bool synproxy_watches;		/* some only watched (monitor mode) */
	char answered[256];		/* the ports answered, as a list */
	char watched[256];		/* the ports only watched */
	bool tick_ok;			/* the resend tick device and its filter are here */
	int links;
	struct link_health link[ISN_MAX_LINKS];
	enum health_verdict verdict;
	int problems;
	char problem[HEALTH_MAX_PROBLEMS][200];
};

/* Reads it all; never fails (what cannot be read is a problem in the report). */
void health_read(struct health *h);
/*
 * Before SYN cookies are switched on: refused (EXIT_RUNTIME after a one-line
 * error) where no attached interface would answer them; a warning where
 * some would not, or where none is attached. 0 otherwise.
 */
int health_check_cookie_hooks(void);
/* "ok", "not-attached", "degraded". */
const char *health_verdict_name(enum health_verdict v);
/* The one-line summary that status prints first. */
void health_summary(const struct health *h, char *buf, size_t len);

#endif /* ISNGUARD_HEALTH_H */
