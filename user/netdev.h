/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Interfaces and settings of this network namespace (user/netdev.c). */
#ifndef ISNGUARD_NETDEV_H
#define ISNGUARD_NETDEV_H

#include <stdbool.h>
#include <stdint.h>

#define NETDEV_MAX 1024

struct netdev {
	int ifindex;
	unsigned short type;		/* ARPHRD_* */
	int master;			/* IFLA_MASTER: bond, bridge, team, vrf; 0 if none */
	int link;			/* IFLA_LINK: a VLAN's parent, a veth's peer, ... */
	bool link_other_netns;		/* link is an ifindex of another namespace */
	int link_netnsid;		/* IFLA_LINK_NETNSID: that namespace, as ours numbers it */
	char name[16];			/* IFNAMSIZ */
	char kind[16];			/* IFLA_INFO_KIND: "vlan", "bond", "veth", ... */
};

/* Every link of this namespace into devs; returns how many, or -errno. */
int netdev_list(struct netdev *devs, int max);
/* The device of ifindex among devs, or NULL. */
const struct netdev *netdev_find(const struct netdev *devs, int n, int ifindex);
/*
 * Whether a veth's peer has an XDP program: an XDP_TX (a SYN cookie's
 * SYN-ACK) on a veth reaches its peer only then, and is dropped otherwise.
 * 1 with its *prog_id, 0 without one, or -errno where it cannot be told (not
 * a veth: -EOPNOTSUPP; the peer in a namespace we cannot look into). The
 * peer's name goes to peer_name (16 bytes) when not NULL.
 */
int netdev_veth_peer_xdp(const struct netdev *dev, uint32_t *prog_id, char *peer_name);
/* 1 when the device has a clsact qdisc, 0 when not, or -errno. */
int netdev_has_clsact(int ifindex);
/* Filters on a device's clsact ingress and egress, anyone's: how many, or -errno. */
int netdev_clsact_filters(int ifindex);
/* XDP actions a driver supports (linux/netdev.h's NETDEV_XDP_ACT_*, Linux 6.3). */
#define NETDEV_XDP_ACT_BASIC 1		/* native XDP: pass, drop, TX */
#define NETDEV_XDP_ACT_REDIRECT 2
#define NETDEV_XDP_ACT_NDO_XMIT 4	/* takes redirected frames */
#define NETDEV_XDP_ACT_RX_SG 32		/* multi-buffer frames */
/*
 * The device's XDP features from the kernel ("netdev" generic netlink), or
 * -errno: -ENOENT on a kernel without that family (before 6.3).
 */
int netdev_xdp_features(int ifindex, uint64_t *features);
/* No link-layer header: the IP header is the first byte of every frame. */
bool netdev_is_l3(const struct netdev *dev);
/*
 * An Ethernet device's own MAC address, its six bytes in the low 48 bits
 * (the datapath's dev_mac); 0 for any other kind of device or on error.
 */
unsigned long long netdev_ether_mac(const char *ifname);
/*
 * How interface b stands to a when the same packets pass both ("its lower
 * device", "an upper device on it", "its master", "a port of it"), else NULL.
 */
const char *netdev_relation(const struct netdev *devs, int n, int a, int b);

/*
 * Up to max numbers of the sysctl net.NAME (NAME as under /proc/sys/net,
 * "ipv4/tcp_rmem"), as this network namespace has them: how many, or -errno.
 */
int read_sysctl(const char *name, unsigned long *values, int max);
/* The first number of net.NAME, or fallback when it cannot be read. */
unsigned long sysctl_or(const char *name, unsigned long fallback);
/* Whether this namespace forwards IPv4 or IPv6 (a router, a gateway). */
bool netns_forwards(void);

#endif /* ISNGUARD_NETDEV_H */
