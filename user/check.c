// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard check: a preflight that changes nothing (as bpftool feature probe
 * and xdp-loader features): what the kernel offers (BTF, the reqsk kfunc,
 * the sysctls of this namespace) and, per interface, native XDP, the XDP
 * programs already there (a libxdp dispatcher or another tool's), the clsact
 * qdisc, and a veth's peer, on which a native XDP_TX depends.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "loader.h"
#include "netdev.h"
#include "pinned.h"
#include "synproxy.h"

struct xdp_seen {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN];
	const char *mode;	/* native, skb, hw */
};

struct iface_check {
	const struct netdev *dev;
	int features_err;
	uint64_t features;
	int nxdp;
	struct xdp_seen xdp[3];
	int filters;		/* on clsact ingress and egress, or -errno */
	int peer_xdp;		/* 1/0, or -errno (not a veth: -EOPNOTSUPP) */
	uint32_t peer_prog;
	char peer[16];
	struct attachment ours;
	int notes;
	char note[4][200];
};

static void prog_name(uint32_t id, char *name, size_t len)
{
	struct bpf_prog_info info = { 0 };
	uint32_t info_len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	snprintf(name, len, "?");
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &info_len))
		snprintf(name, len, "%s", info.name);
	close(fd);
}

static void add_note(struct iface_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_note(struct iface_check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->notes >= 4)
		return;
	va_start(ap, fmt);
	vsnprintf(c->note[c->notes++], sizeof(c->note[0]), fmt, ap);
	va_end(ap);
}

static void check_iface(struct iface_check *c)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	const struct { uint32_t *id; const char *mode; } slots[] = {
		{ &q.drv_prog_id, "native" }, { &q.skb_prog_id, "skb" }, { &q.hw_prog_id, "hw" },
	};
	int ifindex = c->dev->ifindex;

	c->features_err = netdev_xdp_features(ifindex, &c->features);
	if (!bpf_xdp_query(ifindex, 0, &q))
		for (size_t i = 0; i < 3; i++)
			if (*slots[i].id) {
				struct xdp_seen *x = &c->xdp[c->nxdp++];

				x->id = *slots[i].id;
				x->mode = slots[i].mode;
				prog_name(x->id, x->name, sizeof(x->name));
			}
	c->filters = netdev_has_clsact(ifindex) == 1 ? netdev_clsact_filters(ifindex) : -ENOENT;
	c->peer_xdp = netdev_veth_peer_xdp(c->dev, &c->peer_prog, c->peer);
	loader_query(ifindex, &c->ours);
	if (!c->features_err && !(c->features & NETDEV_XDP_ACT_BASIC))
		add_note(c, "no native XDP in this driver: attach --xdp-mode skb, or --ingress tc "
			    "--syn-hook tc");
	for (int i = 0; i < c->nxdp; i++)
		if (strncmp(c->xdp[i].name, "xdp_dispatcher", 14) &&
		    strncmp(c->xdp[i].name, "isnguard", 8))
			add_note(c, "XDP program %u (%s, %s) is another tool's, attached without "
				    "libxdp's dispatcher: isnguard's XDP attach would fail (EBUSY); "
				    "use --ingress tc --syn-hook tc, or reload it through libxdp "
				    "(xdp-loader)", c->xdp[i].id, c->xdp[i].name, c->xdp[i].mode);
	if (c->peer_xdp == 0)
		add_note(c, "veth peer %s has no XDP program: a native XDP_TX (SYN cookie) is "
			    "dropped there, so --synproxy answers at tc (--ingress tc --syn-hook tc)",
			 c->peer);
}

static const char *yes_no_unknown(int err, bool yes)
{
	return err ? "unknown" : yes ? "yes" : "no";
}

static void print_iface_text(const struct iface_check *c)
{
	printf("%s (%s, ifindex %d)\n", c->dev->name, c->dev->kind[0] ? c->dev->kind : "device",
	       c->dev->ifindex);
	printf("  native XDP       %s%s\n", yes_no_unknown(c->features_err,
						     c->features & NETDEV_XDP_ACT_BASIC),
	       c->features_err == -ENOENT ? " (this kernel does not say: before 6.3)" : "");
	if (!c->nxdp)
		printf("  XDP programs     none\n");
	for (int i = 0; i < c->nxdp; i++)
		printf("  XDP program      %u %s (%s)%s\n", c->xdp[i].id, c->xdp[i].name,
		       c->xdp[i].mode, !strncmp(c->xdp[i].name, "xdp_dispatcher", 14)
					? ": libxdp's dispatcher, shared" : "");
	if (c->filters < 0)
		printf("  tc clsact        none\n");
	else
		printf("  tc clsact        %d filter%s\n", c->filters, c->filters == 1 ? "" : "s");
	if (c->peer_xdp >= 0)
		printf("  veth peer        %s, %s\n", c->peer,
		       c->peer_xdp ? "with an XDP program" : "without an XDP program");
	printf("  isnguard         %s\n", c->ours.ingress || c->ours.egress ? "attached"
									: "not attached");
	for (int i = 0; i < c->notes; i++)
		printf("  note: %s\n", c->note[i]);
}

static void print_iface_json(struct json_writer *jw, const struct iface_check *c)
{
	jw_start_object(jw);
	jw_string_field(jw, "ifname", c->dev->name);
	jw_uint_field(jw, "ifindex", (unsigned)c->dev->ifindex);
	jw_string_field(jw, "kind", c->dev->kind);
	jw_string_field(jw, "native_xdp", yes_no_unknown(c->features_err,
							  c->features & NETDEV_XDP_ACT_BASIC));
	jw_name(jw, "xdp_programs");
	jw_start_array(jw);
	for (int i = 0; i < c->nxdp; i++) {
		jw_start_object(jw);
		jw_uint_field(jw, "id", c->xdp[i].id);
		jw_string_field(jw, "name", c->xdp[i].name);
		jw_string_field(jw, "mode", c->xdp[i].mode);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_bool_field(jw, "clsact", c->filters >= 0);
	jw_uint_field(jw, "tc_filters", c->filters > 0 ? (unsigned)c->filters : 0);
	if (c->peer_xdp >= 0) {
		jw_string_field(jw, "veth_peer", c->peer);
		jw_bool_field(jw, "veth_peer_xdp", c->peer_xdp);
	}
	jw_bool_field(jw, "isnguard_attached", c->ours.ingress || c->ours.egress);
	jw_name(jw, "notes");
	jw_start_array(jw);
	for (int i = 0; i < c->notes; i++)
		jw_string(jw, c->note[i]);
	jw_end_array(jw);
	jw_end_object(jw);
}

struct host_check {
	char kernel[65];
	bool btf, kfunc, bpffs, forwards;
	long syncookies;	/* -1: unreadable */
};

static void check_host(struct host_check *h)
{
	struct utsname u;
	unsigned long v;

	snprintf(h->kernel, sizeof(h->kernel), "%s", uname(&u) ? "?" : u.release);
	h->btf = !access("/sys/kernel/btf/vmlinux", R_OK);
	h->kfunc = h->btf && synproxy_kernel_supported();
	h->bpffs = bpffs_root() != NULL;	/* mounted, or mountable by attach */
	h->forwards = netns_forwards();
	h->syncookies = read_sysctl("ipv4/tcp_syncookies", &v, 1) == 1 ? (long)v : -1;
}

int do_check(int argc, char **argv)
{
	static bool json;
	const struct cli_option options[] = CLI_JSON_HELP_TABLE(&json, "print one JSON object");
	struct cli_parser p = {
		.cmd = "check",
		.args = "[IFACE...]",
		.summary = "A preflight that changes nothing: the kernel's BTF and reqsk kfunc,\n"
			   "net.ipv4.tcp_syncookies, and per interface (default: every one but lo)\n"
			   "native XDP, the XDP programs already there (libxdp's dispatcher or\n"
			   "another tool's), the clsact qdisc, a veth's peer (a native XDP_TX\n"
			   "reaches it only if it has an XDP program), and whether isnguard is\n"
			   "attached. Exit 1 when an interface named does not exist or the kernel\n"
			   "has no BTF.",
		.options = options,
	};
	static struct netdev devs[NETDEV_MAX];
	static struct iface_check checks[NETDEV_MAX];
	struct host_check host;
	struct json_writer jw;
	int n, count = 0, err;

	json = false;
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (require_root("check"))
		return EXIT_RUNTIME;
	n = netdev_list(devs, NETDEV_MAX);
	if (n < 0) {
		cli_error("check: list the interfaces: %s", strerror(-n));
		return EXIT_RUNTIME;
	}
	for (int i = optind; i < argc; i++) {
		int found = -1;

		for (int j = 0; j < n; j++)
			if (!strcmp(devs[j].name, argv[i]))
				found = j;
		if (found < 0) {
			cli_error("check %s: no such interface", argv[i]);
			return EXIT_RUNTIME;
		}
		checks[count++].dev = &devs[found];
	}
	for (int j = 0; optind >= argc && j < n; j++)
		if (strcmp(devs[j].name, "lo") && strcmp(devs[j].name, ISN_TICK_DEV))
			checks[count++].dev = &devs[j];
	check_host(&host);
	for (int i = 0; i < count; i++)
		check_iface(&checks[i]);
	if (json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "kernel", host.kernel);
		jw_bool_field(&jw, "btf", host.btf);
		jw_bool_field(&jw, "reqsk_kfunc", host.kfunc);
		jw_bool_field(&jw, "bpffs", host.bpffs);
		jw_bool_field(&jw, "forwarding", host.forwards);
		jw_name(&jw, "tcp_syncookies");
		jw_int(&jw, host.syncookies);
		jw_name(&jw, "interfaces");
		jw_start_array(&jw);
		for (int i = 0; i < count; i++)
			print_iface_json(&jw, &checks[i]);
		jw_end_array(&jw);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		printf("kernel           %s, BTF %s\n", host.kernel, host.btf ? "yes" : "no (isnguard "
		       "needs /sys/kernel/btf/vmlinux)");
		printf("reqsk kfunc      %s\n", host.kfunc ? "yes: the SYN proxy's local path"
			: "no: the SYN proxy translates (Linux 6.9 has it)");
		printf("tcp_syncookies   %ld%s\n", host.syncookies,
		       host.syncookies == 1 || host.syncookies == 2 ? ""
		       : " (the local path needs 1 or 2: sysctl -w net.ipv4.tcp_syncookies=1)");
		printf("forwarding       %s\n", host.forwards ? "on: --ingress tc keeps partial "
		       "checksums right" : "off");
		for (int i = 0; i < count; i++)
			print_iface_text(&checks[i]);
	}
	return host.btf ? 0 : EXIT_RUNTIME;
}
