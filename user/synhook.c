// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where a device's SYN cookies are answered, and the resend tick: a native
 * XDP_TX on a veth reaches the peer only if the peer runs XDP, so there the
 * SYN proxy answers at tc; the tick program is pinned beside the state so
 * that apply and synproxy can put the tick back without a load.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "hooks.h"
#include "isnguard.h"
#include "json_writer.h"
#include "loader.h"
#include "netdev.h"
#include "pinned.h"
#include "policy.h"
#include "state.h"
#include "synproxy.h"
#include "tick.h"
#include "isnguard.skel.h"

bool synhook_proxy_on(struct isnguard *skel)
{
	struct synproxy_config cfg;
	uint32_t zero = 0;

	return !bpf_map_lookup_elem(bpf_map__fd(skel->maps.isn_synproxy), &zero, &cfg) &&
	       cfg.mode != SYNPROXY_OFF;
}

void synhook_pin_tick_prog(struct isnguard *skel)
{
	char path[256];

	if (pin_path(path, sizeof(path), ISN_PIN_TICK_PROG))
		return;
	unlink(path);
	if (bpf_obj_pin(bpf_program__fd(skel->progs.isnguard_tc_tick), path))
		fprintf(stderr, "%s: warning: pin %s: %s ('apply' cannot put the resend tick back "
			"without an attach)\n", PROG_NAME, path, strerror(errno));
}

/* The pinned state's SYN proxy is on (a restart over kept state). */
bool synhook_kept_proxy_on(void)
{
	static uint64_t ports[SYNPROXY_PORT_WORDS];
	struct synproxy_config cfg;

	return !synproxy_read_pinned(&cfg, ports) && cfg.mode != SYNPROXY_OFF;
}

/*
 * Where SYN cookies are answered on this device. A native XDP_TX on a veth
 * reaches the peer only if the peer has an XDP program; without one every
 * cookie SYN-ACK is dropped. There, unless the hooks were named, SYNs are
 * answered at tc (--ingress tc --syn-hook tc), and attach says so; where
 * they were named, attach refuses in one line that names the fix.
 */
int synhook_choose(struct attach_request *req, int ifindex)
{
	static struct netdev devs[NETDEV_MAX];
	const struct netdev *dev;
	char peer[16] = "";
	uint32_t prog_id = 0;
	int n;

	req->synproxy_kept = !req->synproxy && synhook_kept_proxy_on();
	if ((!req->synproxy && !req->synproxy_kept) || req->syn_tc || req->xdp_skb)
		return 0;
	n = netdev_list(devs, NETDEV_MAX);
	dev = n > 0 ? netdev_find(devs, n, ifindex) : NULL;
	/* Not a veth, a peer with XDP, or one that cannot be looked at: XDP_TX as asked. */
	if (!dev || netdev_veth_peer_xdp(dev, &prog_id, peer) != 0)
		return 0;
	if (req->syn_hook_given || (req->ingress_given && req->ingress != LINK_INGRESS_TC)) {
		/* Every port only watched (monitor mode): XDP answers none, the hook asked for will do. */
		if (req->synproxy && !policy_request_answers(req->policy, req->synproxy->ports))
			return 0;
		cli_error("attach %s: the veth peer %s has no XDP program, so the SYN cookies' "
			  "native XDP_TX would reach nobody: use --ingress tc --syn-hook tc, "
			  "--xdp-mode skb, or load an XDP program on %s (XDP_PASS will do)",
			  req->ifname, peer, peer);
		return -EOPNOTSUPP;
	}
	req->ingress = LINK_INGRESS_TC;
	req->syn_tc = true;
	fprintf(stderr, "%s: attach %s: note: the veth peer %s has no XDP program, where an "
		"XDP_TX SYN-ACK is dropped: SYN cookies are answered at tc (--ingress tc "
		"--syn-hook tc)\n", PROG_NAME, req->ifname, peer);
	return 0;
}

bool loader_tick_sync(void)
{
	char path[256];
	int tick = (int)if_nametoindex(ISN_TICK_DEV), fd;
	bool missing;

	if (!synhook_kept_proxy_on() || links_here() <= 0)
		return false;
	missing = tick <= 0 || !tick_filter_present(tick);
	if (!missing || pin_path(path, sizeof(path), ISN_PIN_TICK_PROG))
		return false;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	missing = !attach_tick_prog(fd, "tick");
	close(fd);
	return missing;
}
