// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tick device (ISN_TICK_DEV, bpf/resend.h): a bridge with no ports and
 * its IGMP querier on, querying once a second, made and removed over
 * rtnetlink (libbpf makes clsact hooks, not links). Its MLD queries (IPv6)
 * pass: the IGMP query alone is the tick.
 */
#include <errno.h>
#include <net/if.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "isnguard.h"
#include "tick.h"

/* Intervals in centiseconds, as the bridge's netlink attributes take them (clock_t). */
#define TICK_QUERY_INTERVAL_CS 100
#define TICK_RESPONSE_INTERVAL_CS 50

struct nl_msg {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[512];
};

static struct rtattr *attr_put(struct nl_msg *m, unsigned short type, const void *data,
			       size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)m + NLMSG_ALIGN(m->nh.nlmsg_len));

	if (NLMSG_ALIGN(m->nh.nlmsg_len) + RTA_SPACE(len) > sizeof(*m))
		return NULL;
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	m->nh.nlmsg_len = NLMSG_ALIGN(m->nh.nlmsg_len) + RTA_SPACE(len);
	return rta;
}

/* Closes a nest opened by attr_put(m, type, NULL, 0). */
static void attr_end(struct nl_msg *m, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)m + m->nh.nlmsg_len - (char *)nest);
}

/* Sends m and reads the kernel's acknowledgement: 0 or -errno. */
static int nl_talk(struct nl_msg *m)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[1024];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	int fd, err;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	m->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	m->nh.nlmsg_seq = 1;
	if (sendto(fd, m, m->nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	err = n < 0 ? -errno : -EPROTO;
	if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) && nh->nlmsg_type == NLMSG_ERROR)
		err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
	close(fd);
	return err;
}

static void msg_init(struct nl_msg *m, unsigned short type, unsigned short flags)
{
	memset(m, 0, sizeof(*m));
	m->nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	m->nh.nlmsg_type = type;
	m->nh.nlmsg_flags = flags;
	m->ifi.ifi_family = AF_UNSPEC;
}

int tick_ensure(void)
{
	uint8_t one = 1;
	uint64_t query = TICK_QUERY_INTERVAL_CS, response = TICK_RESPONSE_INTERVAL_CS;
	uint32_t startup_count = 1;
	struct rtattr *info, *data;
	struct nl_msg m;
	int ifindex = (int)if_nametoindex(ISN_TICK_DEV), err;

	if (ifindex > 0)
		return ifindex;
	msg_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	m.ifi.ifi_flags = IFF_UP;
	m.ifi.ifi_change = IFF_UP;
	if (!attr_put(&m, IFLA_IFNAME, ISN_TICK_DEV, sizeof(ISN_TICK_DEV)))
		return -E2BIG;
	if (!(info = attr_put(&m, IFLA_LINKINFO | NLA_F_NESTED, NULL, 0)) ||
	    !attr_put(&m, IFLA_INFO_KIND, "bridge", sizeof("bridge")) ||
	    !(data = attr_put(&m, IFLA_INFO_DATA | NLA_F_NESTED, NULL, 0)) ||
	    !attr_put(&m, IFLA_BR_MCAST_SNOOPING, &one, 1) ||
	    !attr_put(&m, IFLA_BR_MCAST_QUERIER, &one, 1) ||
	    !attr_put(&m, IFLA_BR_MCAST_QUERY_INTVL, &query, sizeof(query)) ||
	    !attr_put(&m, IFLA_BR_MCAST_STARTUP_QUERY_INTVL, &query, sizeof(query)) ||
	    !attr_put(&m, IFLA_BR_MCAST_STARTUP_QUERY_CNT, &startup_count, sizeof(startup_count)) ||
	    !attr_put(&m, IFLA_BR_MCAST_QUERY_RESPONSE_INTVL, &response, sizeof(response)))
		return -E2BIG;
	attr_end(&m, data);
	attr_end(&m, info);
	err = nl_talk(&m);
	if (err && err != -EEXIST)
		return err;
	ifindex = (int)if_nametoindex(ISN_TICK_DEV);
	return ifindex > 0 ? ifindex : -ENODEV;
}

int tick_remove(void)
{
	struct nl_msg m;
	int ifindex = (int)if_nametoindex(ISN_TICK_DEV);

	if (ifindex <= 0)
		return 0;
	msg_init(&m, RTM_DELLINK, 0);
	m.ifi.ifi_index = ifindex;
	return nl_talk(&m);
}
