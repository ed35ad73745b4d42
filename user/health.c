// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Whether what the pinned state asks for is served, looked at live: the
 * recorded links (in their own namespaces, entered through /run/netns), the
 * SYN proxy's ports against the hooks that answer them (a native XDP_TX on
 * a veth reaches its peer only if the peer has an XDP program), and the
 * resend tick. A report, never a failure: what cannot be read is a problem.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "health.h"
#include "hooks.h"
#include "netdev.h"
#include "pinned.h"
#include "policy.h"
#include "synproxy.h"

#define NETNS_RUN_DIR "/run/netns"

static void problem(struct health *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct health *h, const char *fmt, ...)
{
	va_list ap;

	if (h->problems >= HEALTH_MAX_PROBLEMS)
		return;
	va_start(ap, fmt);
	vsnprintf(h->problem[h->problems++], sizeof(h->problem[0]), fmt, ap);
	va_end(ap);
}

const char *health_verdict_name(enum health_verdict v)
{
	switch (v) {
	case HEALTH_OK:
		return "ok";
	case HEALTH_NOT_ATTACHED:
		return "not-attached";
	default:
		return "degraded";
	}
}

/* The name under /run/netns (ip netns) of the namespace with that inode: an open fd, or -1. */
static int netns_open_by_inode(uint64_t ino, char *name, size_t len)
{
	DIR *dir = opendir(NETNS_RUN_DIR);
	struct dirent *e;
	int fd = -1;

	if (!dir)
		return -1;
	while (fd < 0 && (e = readdir(dir))) {
		struct stat st;

		if (e->d_name[0] == '.' || fstatat(dirfd(dir), e->d_name, &st, 0) ||
		    (uint64_t)st.st_ino != ino)
			continue;
		fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			snprintf(name, len, "%s", e->d_name);
	}
	closedir(dir);
	return fd;
}

/* One link, in the namespace the process is in now. */
static void link_check(struct link_health *l)
{
	static struct netdev devs[NETDEV_MAX];
	int n = netdev_list(devs, NETDEV_MAX);
	const struct netdev *dev = n > 0 ? netdev_find(devs, n, (int)l->key.ifindex) : NULL;
	bool syn_tc = l->info.flags & LINK_F_SYN_TC, xdp_answers;
	uint32_t peer_prog = 0;

	l->checked = true;
	l->peer_xdp = -1;
	if (!dev || strcmp(dev->name, l->info.ifname)) {
		l->state = "gone";
		l->syn_hook = "none";
		return;
	}
	loader_query((int)l->key.ifindex, &l->live);
	l->state = l->live.ingress && l->live.egress ? "attached"
		   : l->live.ingress || l->live.egress ? "partly-attached" : "detached";
	l->syn_hook = link_syn_hook(&l->info, l->live.cookie_prog_id);
	if (!strcmp(dev->kind, "veth"))
		l->peer_xdp = netdev_veth_peer_xdp(dev, &peer_prog, l->peer);
	if (l->peer_xdp < 0)
		l->peer_xdp = -1;
	/*
	 * SYNs are answered at tc (--syn-hook tc), or in XDP: by isnguard_xdp
	 * itself, its cookie ACKs taken by the tc filter beside it, or by the
	 * cookie program beside tc ingress (cookie_prog_id: the other half,
	 * either way). A native XDP_TX on a veth is dropped unless the peer
	 * runs XDP; generic XDP transmits an skb, which reaches it.
	 */
	xdp_answers = l->live.ingress && l->live.cookie_prog_id;
	if (syn_tc)
		l->cookies_served = l->live.ingress;
	else
		l->cookies_served = xdp_answers && !(l->live.xdp_native && l->peer_xdp == 0);
	/* Monitor mode sends nothing: any SYN hook will do, whatever the peer. */
	l->syns_watched = syn_tc ? l->live.ingress : xdp_answers;
}

/* What the settings ask of a link: answers for the ports answered, a SYN hook for those watched. */
static void link_served(const struct health *h, struct link_health *l)
{
	l->synproxy_served = (!h->synproxy_answers || l->cookies_served) &&
			     (!h->synproxy_watches || l->syns_watched);
}

static void link_problems(struct health *h, const struct link_health *l)
{
	const char *ports = h->answered;
	const char *name = l->info.ifname;

	if (!strcmp(l->state, "gone")) {
		problem(h, "%s: the interface is gone (ifindex %u); 'isnguard detach %s' forgets it",
			name, l->key.ifindex, name);
		return;
	}
	if (strcmp(l->state, "attached"))
		problem(h, "%s: %s (ingress %s, egress %s); attach it again", name, l->state,
			l->live.ingress ? "on" : "missing", l->live.egress ? "on" : "missing");
	if (!h->synproxy_on || l->synproxy_served || !l->live.ingress)
		return;
	if (h->synproxy_watches && !l->syns_watched)
		problem(h, "%s: SYNs to ports %s, in monitor mode, are watched by nobody: attached "
			   "with --ingress tc and no SYN hook; attach it again with --synproxy or "
			   "--syn-hook tc", name, h->watched);
	if (!h->synproxy_answers || l->cookies_served)
		return;
	if (!strcmp(l->syn_hook, "none"))
		problem(h, "%s: SYN cookies for ports %s are answered by nobody: attached with "
			   "--ingress tc and no SYN hook; attach it again with --synproxy or "
			   "--syn-hook tc", name, ports);
	else
		problem(h, "%s: SYN cookies for ports %s reach nobody: the veth peer %s has no XDP "
			   "program, so native XDP_TX drops the SYN-ACKs; attach with --ingress tc "
			   "--syn-hook tc, or load an XDP program on %s", name, ports,
			l->peer[0] ? l->peer : "(unknown)", l->peer[0] ? l->peer : "the peer");
}

static void read_links(struct health *h)
{
	struct link_key cur, next;
	void *prev = NULL;
	int fd = pinned_map_open(ISN_MAP_LINKS), self = -1;
	uint64_t here = netns_inode();

	if (fd < 0)
		return;
	while (h->links < ISN_MAX_LINKS && !bpf_map_get_next_key(fd, prev, &next)) {
		struct link_health *l = &h->link[h->links];
		int ns;

		cur = next;
		prev = &cur;
		memset(l, 0, sizeof(*l));
		if (bpf_map_lookup_elem(fd, &cur, &l->info))
			continue;
		l->key = cur;
		l->state = "unchecked";
		l->syn_hook = link_syn_hook(&l->info, true);
		l->peer_xdp = -1;
		h->links++;
		if (cur.netns_ino == here) {
			link_check(l);
			continue;
		}
		/* Another namespace: entered by its /run/netns name, if it has one. */
		ns = netns_open_by_inode(cur.netns_ino, l->netns, sizeof(l->netns));
		if (ns < 0)
			continue;
		if (self < 0)
			self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self >= 0 && !setns(ns, CLONE_NEWNET)) {
			link_check(l);
			if (setns(self, CLONE_NEWNET))
				problem(h, "cannot return to this network namespace: %s",
					strerror(errno));
		}
		close(ns);
	}
	if (self >= 0)
		close(self);
	close(fd);
}

/* The SYN proxy's ports, answered and only watched (monitor mode), into h. */
static void synproxy_enabled(struct health *h)
{
	static uint64_t bitmap[SYNPROXY_PORT_WORDS], monitor[SYNPROXY_PORT_WORDS];
	static uint64_t watched[SYNPROXY_PORT_WORDS];
	struct synproxy_config cfg;
	struct syn_policy pol = { 0 };
	size_t all, some;

	if (synproxy_read_pinned(&cfg, bitmap) || cfg.mode == SYNPROXY_OFF)
		return;
	if (policy_read_pinned(&pol, monitor))
		memset(&pol, 0, sizeof(pol));	/* a state without it: every port answered */
	some = policy_monitored_ports(&pol, bitmap, monitor, watched);
	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++)
		bitmap[i] &= ~watched[i];
	all = synproxy_format_ports(bitmap, h->answered, sizeof(h->answered));
	synproxy_format_ports(watched, h->watched, sizeof(h->watched));
	h->synproxy_answers = all > 0;
	h->synproxy_watches = some > 0;
	h->synproxy_on = all + some > 0;
}

void health_read(struct health *h)
{
	int attached = 0, here = 0;
	uint64_t self = netns_inode();
	int fd = pinned_map_open(ISN_MAP_CONFIG);

	memset(h, 0, sizeof(*h));
	h->state = fd >= 0;
	if (fd >= 0)
		close(fd);
	if (!h->state) {
		h->verdict = HEALTH_NOT_ATTACHED;
		return;
	}
	synproxy_enabled(h);
	read_links(h);
	for (int i = 0; i < h->links; i++) {
		struct link_health *l = &h->link[i];

		here += l->key.netns_ino == self;
		attached += !l->checked || !strcmp(l->state, "attached") ||
			    !strcmp(l->state, "partly-attached");
		link_served(h, l);
		if (l->checked)
			link_problems(h, l);
	}
	if (h->synproxy_on && here) {
		int tick = (int)if_nametoindex(ISN_TICK_DEV);

		h->tick_ok = tick > 0 && tick_filter_present(tick);
		if (!h->tick_ok)
			problem(h, "the resend tick is missing (%s %s): a silent server's SYN is "
				   "resent only when the client retransmits; attach again with "
				   "--synproxy, or run 'isnguard apply'", ISN_TICK_DEV,
				tick > 0 ? "has no filter" : "absent");
	}
	if (!h->links || !attached)
		h->verdict = h->problems && h->links ? HEALTH_DEGRADED : HEALTH_NOT_ATTACHED;
	else
		h->verdict = h->problems ? HEALTH_DEGRADED : HEALTH_OK;
}

void health_summary(const struct health *h, char *buf, size_t len)
{
	int attached = 0;

	for (int i = 0; i < h->links; i++)
		attached += !h->link[i].checked || !strcmp(h->link[i].state, "attached");
	switch (h->verdict) {
	case HEALTH_OK:
		snprintf(buf, len, "ok: attached to %d interface%s, everything configured is served%s%s%s",
			 attached, attached == 1 ? "" : "s",
			 h->synproxy_watches ? "; SYN proxy in MONITOR mode on ports " : "",
			 h->synproxy_watches ? h->watched : "",
			 h->synproxy_watches ? " (counted and passed, none answered)" : "");
		break;
	case HEALTH_NOT_ATTACHED:
		snprintf(buf, len, "not attached: %s", h->state
			 ? "no interface; the state is kept (flows, key, settings) for the next "
			   "attach, 'isnguard purge' removes it"
			 : "no interface and no state");
		break;
	default:
		snprintf(buf, len, "degraded: %d problem%s (below)", h->problems,
			 h->problems == 1 ? "" : "s");
	}
}

/*
 * Switching cookies on where no attached interface would answer them is
 * refused (status would call it degraded); an interface that would not,
 * beside others that would, and none attached at all, are warnings.
 */
int health_check_cookie_hooks(void)
{
	static struct health h;
	const struct link_health *unserved = NULL;
	int checked = 0, served = 0;

	health_read(&h);
	for (int i = 0; i < h.links; i++) {
		const struct link_health *l = &h.link[i];

		if (!l->checked || strcmp(l->state, "attached"))
			continue;
		checked++;
		if (l->cookies_served)
			served++;
		else if (!unserved)
			unserved = l;
	}
	if (!h.links) {
		fprintf(stderr, "%s: synproxy: warning: no interface is attached; the ports apply "
			"from the next attach\n", PROG_NAME);
		return 0;
	}
	if (!unserved)
		return 0;
	if (!served) {
		cli_error("synproxy: no attached interface would answer SYN cookies (%s: %s); "
			  "attach it again with --synproxy PORTS (on a veth whose peer has no XDP "
			  "program: --ingress tc --syn-hook tc)", unserved->info.ifname,
			  strcmp(unserved->syn_hook, "none") ? "its veth peer has no XDP program"
							      : "no SYN hook");
		return EXIT_RUNTIME;
	}
	fprintf(stderr, "%s: synproxy: warning: %s would not answer SYN cookies (%s); 'isnguard "
		"status' lists it\n", PROG_NAME, unserved->info.ifname,
		strcmp(unserved->syn_hook, "none") ? "its veth peer has no XDP program"
						    : "no SYN hook");
	return 0;
}
