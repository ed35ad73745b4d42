// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What kind of device an interface is, and which devices are stacked on it
 * or under it, from an rtnetlink link dump of this network namespace (sysfs
 * would show the namespace it was mounted in, not ours, under nsenter).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_sched.h>
#include <linux/genetlink.h>
#include <sys/socket.h>

#include "netdev.h"

#define NETDEV_BUF (32 * 1024)

static void parse_linkinfo(struct rtattr *info, int len, struct netdev *dev)
{
	for (struct rtattr *a = info; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_INFO_KIND)
			snprintf(dev->kind, sizeof(dev->kind), "%s", (char *)RTA_DATA(a));
}

static void parse_link(struct nlmsghdr *nh, struct netdev *dev)
{
	struct ifinfomsg *ifi = NLMSG_DATA(nh);
	int len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));

	memset(dev, 0, sizeof(*dev));
	dev->ifindex = ifi->ifi_index;
	dev->type = ifi->ifi_type;
	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type) {
		case IFLA_IFNAME:
			snprintf(dev->name, sizeof(dev->name), "%s", (char *)RTA_DATA(a));
			break;
		case IFLA_MASTER:
			dev->master = *(int *)RTA_DATA(a);
			break;
		case IFLA_LINK:
			dev->link = *(int *)RTA_DATA(a);
			break;
		case IFLA_LINK_NETNSID:
			dev->link_other_netns = true;
			dev->link_netnsid = *(int *)RTA_DATA(a);
			break;
		case IFLA_LINKINFO:
			parse_linkinfo(RTA_DATA(a), (int)RTA_PAYLOAD(a), dev);
			break;
		}
	}
}

/*
 * Sends one rtnetlink request and hands each answer to visit, until the
 * dump ends or the kernel answers with an error (returned, -errno).
 */
static int rtnl_request(const void *req, size_t len, void (*visit)(struct nlmsghdr *, void *),
			void *ctx)
{
	char *buf = malloc(NETDEV_BUF);
	bool dump = ((const struct nlmsghdr *)req)->nlmsg_flags & NLM_F_DUMP;
	int fd, err = 0;
	bool done = false;

	if (!buf)
		return -ENOMEM;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0 || send(fd, req, len, 0) < 0) {
		err = -errno;
		goto out;
	}
	while (!done) {
		ssize_t got = recv(fd, buf, NETDEV_BUF, 0);

		if (got < 0) {
			err = -errno;
			break;
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)got);
		     nh = NLMSG_NEXT(nh, got)) {
			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
				done = true;
				break;
			}
			visit(nh, ctx);
			/* A request for one link has one answer, no NLMSG_DONE. */
			done |= !dump;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

struct link_dump {
	struct netdev *devs;
	int n, max;
};

static void add_link(struct nlmsghdr *nh, void *ctx)
{
	struct link_dump *d = ctx;

	if (nh->nlmsg_type == RTM_NEWLINK && d->n < d->max)
		parse_link(nh, &d->devs[d->n++]);
}

int netdev_list(struct netdev *devs, int max)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	struct link_dump d = { .devs = devs, .max = max };
	int err = rtnl_request(&req, sizeof(req), add_link, &d);

	return err ? err : d.n;
}

const struct netdev *netdev_find(const struct netdev *devs, int n, int ifindex)
{
	for (int i = 0; i < n; i++)
		if (devs[i].ifindex == ifindex)
			return &devs[i];
	return NULL;
}

struct peer_answer {
	bool seen;
	uint32_t prog_id;
	char name[16];
};

static void read_peer(struct nlmsghdr *nh, void *ctx)
{
	struct peer_answer *peer = ctx;
	struct ifinfomsg *ifi = NLMSG_DATA(nh);
	int len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));

	if (nh->nlmsg_type != RTM_NEWLINK)
		return;
	peer->seen = true;
	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME)
			snprintf(peer->name, sizeof(peer->name), "%s", (char *)RTA_DATA(a));
		if (a->rta_type != IFLA_XDP)
			continue;
		int xlen = (int)RTA_PAYLOAD(a);

		for (struct rtattr *x = RTA_DATA(a); RTA_OK(x, xlen); x = RTA_NEXT(x, xlen))
			if (x->rta_type == IFLA_XDP_PROG_ID)
				peer->prog_id = *(uint32_t *)RTA_DATA(x);
	}
}

int netdev_veth_peer_xdp(const struct netdev *dev, uint32_t *prog_id, char *peer_name)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr netnsid;
		int32_t netnsid_value;
	} req = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			.nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC, .ifi_index = dev->link },
		.netnsid = { .rta_len = RTA_LENGTH(sizeof(int32_t)), .rta_type = IFLA_TARGET_NETNSID },
		.netnsid_value = dev->link_netnsid,
	};
	struct peer_answer peer = { 0 };
	int err;

	if (strcmp(dev->kind, "veth") || dev->link <= 0)
		return -EOPNOTSUPP;
	/* The peer's ifindex is one of its own namespace's (IFLA_LINK_NETNSID). */
	if (dev->link_other_netns)
		req.nh.nlmsg_len = sizeof(req);
	err = rtnl_request(&req, req.nh.nlmsg_len, read_peer, &peer);
	if (!err && !peer.seen)
		err = -ENODEV;
	if (err)
		return err;
	*prog_id = peer.prog_id;
	if (peer_name)
		snprintf(peer_name, 16, "%s", peer.name);
	return peer.prog_id != 0;
}

unsigned long long netdev_ether_mac(const char *ifname)
{
	struct ifreq ifr = { 0 };
	unsigned long long mac = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr) && ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER)
		for (int i = 0; i < 6; i++)
			mac = mac << 8 | (unsigned char)ifr.ifr_hwaddr.sa_data[i];
	close(fd);
	return mac;
}

bool netdev_is_l3(const struct netdev *dev)
{
	/* No link-layer header: tun, WireGuard (NONE), ipip/sit/ip6tnl/gre tunnels. */
	switch (dev->type) {
	case ARPHRD_NONE:
	case ARPHRD_TUNNEL:
	case ARPHRD_TUNNEL6:
	case ARPHRD_SIT:
	case ARPHRD_IPGRE:
	case ARPHRD_IP6GRE:
	case ARPHRD_RAWIP:
		return true;
	}
	return false;
}

/* Devices that carry their lower device's very frames (its traffic, tagged or not). */
static bool is_stacking_kind(const char *kind)
{
	return !strcmp(kind, "vlan") || !strcmp(kind, "macvlan") || !strcmp(kind, "macvtap") ||
	       !strcmp(kind, "ipvlan") || !strcmp(kind, "ipvtap");
}


/*
 * Whether the same packets pass both a and b: one is the master (bond,
 * bridge, team) of the other, or a VLAN/macvlan/ipvlan on it, at any depth.
 * Sets *relation to how b stands to a.
 */
static bool below(const struct netdev *devs, int n, const struct netdev *upper, int lower_index)
{
	for (int depth = 0; upper && depth < 8; depth++) {
		int next = 0;

		if (upper->link && !upper->link_other_netns && is_stacking_kind(upper->kind))
			next = upper->link;
		if (next == lower_index)
			return true;
		upper = next ? netdev_find(devs, n, next) : NULL;
	}
	return false;
}

static bool mastered_by(const struct netdev *devs, int n, const struct netdev *port, int master)
{
	for (int depth = 0; port && port->master && depth < 8; depth++) {
		if (port->master == master)
			return true;
		port = netdev_find(devs, n, port->master);
	}
	return false;
}

const char *netdev_relation(const struct netdev *devs, int n, int a, int b)
{
	const struct netdev *da = netdev_find(devs, n, a), *db = netdev_find(devs, n, b);

	if (!da || !db || a == b)
		return NULL;
	if (below(devs, n, da, b))
		return "its lower device";
	if (below(devs, n, db, a))
		return "an upper device on it";
	if (mastered_by(devs, n, da, b))
		return "its master";
	if (mastered_by(devs, n, db, a))
		return "a port of it";
	return NULL;
}

static void count_filter(struct nlmsghdr *nh, void *ctx)
{
	*(int *)ctx += nh->nlmsg_type == RTM_NEWTFILTER;
}

struct qdisc_find {
	int ifindex;
	bool found;
};

static void find_clsact(struct nlmsghdr *nh, void *ctx)
{
	struct qdisc_find *q = ctx;
	struct tcmsg *tc = NLMSG_DATA(nh);
	int len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*tc)));

	if (nh->nlmsg_type != RTM_NEWQDISC || tc->tcm_ifindex != q->ifindex)
		return;
	for (struct rtattr *a = TCA_RTA(tc); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == TCA_KIND && !strcmp(RTA_DATA(a), "clsact"))
			q->found = true;
}

int netdev_has_clsact(int ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct tcmsg tc;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETQDISC,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex },
	};
	struct qdisc_find q = { .ifindex = ifindex };
	int err = rtnl_request(&req, sizeof(req), find_clsact, &q);

	return err ? err : q.found;
}

int netdev_clsact_filters(int ifindex)
{
	static const uint32_t parents[] = {
		TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS), TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS),
	};
	int count = 0;

	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		struct {
			struct nlmsghdr nh;
			struct tcmsg tc;
		} req = {
			.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETTFILTER,
				.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
			.tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex,
				.tcm_parent = parents[i] },
		};
		int err = rtnl_request(&req, sizeof(req), count_filter, &count);

		if (err)
			return err;
	}
	return count;
}

/* --- XDP features (the "netdev" generic netlink family, Linux 6.3) ------- */

/* From linux/netdev.h, which Debian 12's headers lack. */
#define NETDEV_GENL_NAME "netdev"
#define NETDEV_CMD_DEV_GET 1
#define NETDEV_A_DEV_IFINDEX 1
#define NETDEV_A_DEV_XDP_FEATURES 3

struct genl_answer {
	int family;
	uint64_t features;
	bool seen;
};

static int genl_talk(void *req, size_t len, struct genl_answer *answer, bool family_query)
{
	char buf[4096];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC), err = -EPROTO;
	ssize_t got;

	if (fd < 0)
		return -errno;
	if (send(fd, req, len, 0) < 0 || (got = recv(fd, buf, sizeof(buf), 0)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	close(fd);
	for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)got);
	     nh = NLMSG_NEXT(nh, got)) {
		struct genlmsghdr *g = NLMSG_DATA(nh);
		struct rtattr *a = (struct rtattr *)((char *)g + GENL_HDRLEN);
		int alen = (int)(nh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));

		if (nh->nlmsg_type == NLMSG_ERROR)
			return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			if (family_query && a->rta_type == CTRL_ATTR_FAMILY_ID)
				answer->family = *(uint16_t *)RTA_DATA(a);
			if (!family_query && a->rta_type == NETDEV_A_DEV_XDP_FEATURES)
				memcpy(&answer->features, RTA_DATA(a), sizeof(answer->features));
		}
		answer->seen = true;
		err = 0;
	}
	return err;
}

int netdev_xdp_features(int ifindex, uint64_t *features)
{
	struct {
		struct nlmsghdr nh;
		struct genlmsghdr g;
		struct rtattr name;
		char name_value[8];
	} family = {
		.nh = { .nlmsg_len = sizeof(family), .nlmsg_type = GENL_ID_CTRL,
			.nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.g = { .cmd = CTRL_CMD_GETFAMILY, .version = 1 },
		.name = { .rta_len = RTA_LENGTH(sizeof(NETDEV_GENL_NAME)),
			  .rta_type = CTRL_ATTR_FAMILY_NAME },
		.name_value = NETDEV_GENL_NAME,
	};
	struct {
		struct nlmsghdr nh;
		struct genlmsghdr g;
		struct rtattr index;
		uint32_t index_value;
	} get = {
		.nh = { .nlmsg_len = sizeof(get), .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 2 },
		.g = { .cmd = NETDEV_CMD_DEV_GET, .version = 1 },
		.index = { .rta_len = RTA_LENGTH(sizeof(uint32_t)), .rta_type = NETDEV_A_DEV_IFINDEX },
		.index_value = (uint32_t)ifindex,
	};
	struct genl_answer answer = { 0 };
	int err = genl_talk(&family, sizeof(family), &answer, true);

	if (err || !answer.family)
		return err ? err : -ENOENT;
	get.nh.nlmsg_type = (uint16_t)answer.family;
	answer.seen = false;
	err = genl_talk(&get, sizeof(get), &answer, false);
	if (!err && !answer.seen)
		err = -ENODATA;
	if (!err)
		*features = answer.features;
	return err;
}

/* --- this namespace's settings --------------------------------------------- */

#define SYSCTL_DIR "/proc/sys/net/"

int read_sysctl(const char *name, unsigned long *values, int max)
{
	char path[128], buf[128], *p = buf, *end;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	while (n < max) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		values[n++] = v;
		p = end;
	}
	return n > 0 ? n : -EINVAL;
}

unsigned long sysctl_or(const char *name, unsigned long fallback)
{
	unsigned long v;

	return read_sysctl(name, &v, 1) == 1 ? v : fallback;
}

bool netns_forwards(void)
{
	return sysctl_or("ipv4/ip_forward", 0) || sysctl_or("ipv6/conf/all/forwarding", 0);
}
