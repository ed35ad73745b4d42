// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /metrics in Prometheus' text exposition format (version 0.0.4), as the
 * exporter serves it and `exporter --once` prints it, from the pinned maps
 * read afresh: the counters' families are user/counters.c's table, each
 * interface's own series labelled; the gauges (flows, the table's fill,
 * the key generation, the SYN proxy's mode and ports, the sweeper, the
 * links) are here. What cannot be read is left out, and said once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "config.h"
#include "counters.h"
#include "exporter.h"
#include "loader.h"
#include "maps.h"
#include "parse.h"
#include "pinned.h"
#include "ref/isn_ref.h"
#include "synproxy.h"
#include "version.h"

/* Per-port series of the SYN proxy's auto mode for at most this many protected ports. */
#define EXPORTER_MAX_PORT_SERIES 256

/* ---- the text format ---- */

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with the format's three escapes. */
static void label_value(FILE *out, const char *value)
{
	for (; *value; value++) {
		if (*value == '\\' || *value == '"')
			fputc('\\', out);
		if (*value == '\n') {
			fputs("\\n", out);
			continue;
		}
		fputc(*value, out);
	}
}

static void gauge(FILE *out, const char *name, const char *help, double value)
{
	family(out, name, "gauge", help);
	fprintf(out, "%s %.17g\n", name, value);
}

/* One series of a state set: 1 for the state in force, 0 for the others. */
static void state_set(FILE *out, const char *name, const char *help, const char *label,
		      const char *const *states, const char *current)
{
	family(out, name, "gauge", help);
	for (; *states; states++)
		fprintf(out, "%s{%s=\"%s\"} %d\n", name, label, *states, !strcmp(*states, current));
}

static void counter_value(FILE *out, const struct metric_family *f, __u64 value)
{
	if (f->nanoseconds)
		fprintf(out, " %llu.%09llu\n", (unsigned long long)(value / 1000000000ULL),
			(unsigned long long)(value % 1000000000ULL));
	else
		fprintf(out, " %llu\n", (unsigned long long)value);
}

/*
 * One counter's series for a slot of isn_stats: labelled with the slot's
 * interface and network namespace (inode), or, for slot 0 (counted by no
 * interface's load), without them.
 */
static void counter_series(FILE *out, const struct stats_sample *s, int slot,
			   const struct counter_desc *d)
{
	const struct metric_family *f = d->family;
	const struct stat_slot *owner = &s->slot_owner[slot];
	const char *sep = "";

	fputs(f->name, out);
	if (f->label || slot)
		fputc('{', out);
	if (slot) {
		fputs("interface=\"", out);
		label_value(out, owner->ifname);
		fprintf(out, "\",netns=\"%llu\"", (unsigned long long)owner->owner.netns_ino);
		sep = ",";
	}
	if (f->label) {
		fprintf(out, "%s%s=\"", sep, f->label);
		label_value(out, d->label_value);
		fputc('"', out);
	}
	if (f->label || slot)
		fputc('}', out);
	counter_value(out, f, s->slot_counters[slot][d->stat]);
}

/*
 * Each family of counter_descs once, where it first appears, with all its
 * series: one per attached interface (sum() over interface gives the
 * totals stats shows), and the unlabelled one of what no interface's load
 * counted.
 */
static void write_counters(FILE *out, const struct stats_sample *s)
{
	for (int i = 0; i < STAT_COUNT; i++) {
		const struct metric_family *f = counter_descs[i].family;
		bool seen = false;

		for (int j = 0; j < i && f; j++)
			seen |= counter_descs[j].family == f;
		if (!f || seen)
			continue;
		family(out, f->name, "counter", f->help);
		for (int slot = 0; slot < ISN_STATS_SLOTS; slot++) {
			if (!stats_slot_shown(s, slot))
				continue;
			for (int j = i; j < STAT_COUNT; j++)
				if (counter_descs[j].family == f)
					counter_series(out, s, slot, &counter_descs[j]);
		}
	}
}

/* ---- the state's other maps, each optional: what cannot be read is left out ---- */

static int open_layout(const char *name, enum bpf_map_type type, __u32 key, __u32 value)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = pinned_map_open(name);

	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != type ||
	    info.key_size != key || info.value_size != value) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

static bool read_array0(const char *name, void *value, __u32 size)
{
	int fd = open_layout(name, BPF_MAP_TYPE_ARRAY, sizeof(__u32), size);
	__u32 zero = 0;
	bool ok;

	if (fd < 0)
		return false;
	ok = !bpf_map_lookup_elem(fd, &zero, value);
	close(fd);
	return ok;
}

static void write_config(FILE *out, const struct stats_sample *s)
{
	static const char *const hashes[] = { "siphash", "md5", "none", NULL };
	static const char *const phases[] = { "opening", "established", "closing", "closed" };
	struct isn_config cfg;
	__s64 entries;

	if (read_array0(ISN_MAP_FLOW_COUNT, &entries, sizeof(entries)) && s->flows_max)
		gauge(out, "isnguard_flow_table_fill_ratio",
		      "Connections in the flow table over --max-flows; at 1 new connections go "
		      "unprotected.", (double)(entries > 0 ? entries : 0) / (double)s->flows_max);
	if (!read_array0(ISN_MAP_CONFIG, &cfg, sizeof(cfg)))
		return;
	gauge(out, "isnguard_key_generation", "Key generation: each key rotate adds one.",
	      cfg.key_gen);
	state_set(out, "isnguard_new_flow_hash", "The hash of new flows' ISNs.", "hash", hashes,
		  isn_hash_name(cfg.hash));
	family(out, "isnguard_flow_timeout_seconds", "gauge",
	       "Idle timeout of a flow by its phase (closed: as set, before a filling table "
	       "shortens it).");
	for (int i = 0; i < 4; i++) {
		__u32 t[] = { cfg.timeout_opening, cfg.timeout_established, cfg.timeout_closing,
			      cfg.timeout_closed };

		fprintf(out, "isnguard_flow_timeout_seconds{phase=\"%s\"} %u\n", phases[i], t[i]);
	}
}

static void write_sweeper(FILE *out)
{
	static const char *const queues[SWEEP_QUEUES] = { "flows", "opening", "long" };
	struct flow_sweeper sw;

	if (!read_array0(ISN_MAP_SWEEPER, &sw, sizeof(sw)))
		return;
	gauge(out, "isnguard_sweeper_run_max_seconds", "The sweeper's longest run.",
	      (double)sw.run_ns_max / 1e9);
	gauge(out, "isnguard_sweeper_interval_seconds",
	      "How often the sweeper looks at each flow again.", (double)sw.interval_ms / 1e3);
	gauge(out, "isnguard_flow_closed_timeout_seconds",
	      "The closed timeout as the sweeper applies it, shortened past 60% of --max-flows.",
	      (double)sw.closed_ms / 1e3);
	family(out, "isnguard_sweeper_queue_slots", "gauge", "Sweep slots taken, by queue.");
	for (int q = 0; q < SWEEP_QUEUES; q++)
		fprintf(out, "isnguard_sweeper_queue_slots{queue=\"%s\"} %llu\n", queues[q],
			(unsigned long long)(sw.tail[q] - sw.head[q]));
	family(out, "isnguard_sweeper_queue_capacity", "gauge", "Sweep slots, by queue.");
	for (int q = 0; q < SWEEP_QUEUES; q++)
		fprintf(out, "isnguard_sweeper_queue_capacity{queue=\"%s\"} %u\n", queues[q],
			sw.size[q]);
}

/*
 * Auto mode's state of each protected port (isn_syn_rate's active: set and
 * cleared by the port's SYNs, so a flood that stopped leaves it on until
 * the next SYN). A port per series up to EXPORTER_MAX_PORT_SERIES ports.
 */
static void write_auto_ports(FILE *out, const struct synproxy_config *cfg,
			     const uint64_t *ports, unsigned int protected)
{
	int fd = open_layout(ISN_MAP_SYN_RATE, BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			     sizeof(struct syn_rate));
	unsigned int active = 0;
	bool per_port = protected <= EXPORTER_MAX_PORT_SERIES;
	struct syn_rate rate;

	if (fd < 0)
		return;
	if (per_port)
		family(out, "isnguard_synproxy_port_cookies_active", "gauge",
		       "Whether a protected port's SYNs get cookies now (auto mode switches them).");
	for (__u32 port = 0; port < 65536; port++) {
		bool on;

		if (!synproxy_port_is_set(ports, port))
			continue;
		on = cfg->mode == SYNPROXY_ALWAYS ||
		     (cfg->mode == SYNPROXY_AUTO && !bpf_map_lookup_elem(fd, &port, &rate) &&
		      rate.active);
		active += on;
		if (per_port)
			fprintf(out, "isnguard_synproxy_port_cookies_active{port=\"%u\"} %d\n", port, on);
	}
	close(fd);
	gauge(out, "isnguard_synproxy_ports_cookies_active",
	      "Protected ports whose SYNs get cookies now.", active);
}

static void write_synproxy(FILE *out)
{
	static const char *const modes[] = { "off", "always", "auto", NULL };
	static uint64_t ports[SYNPROXY_PORT_WORDS];
	struct synproxy_config cfg;
	int config_fd = open_layout(ISN_MAP_SYNPROXY, BPF_MAP_TYPE_ARRAY, sizeof(__u32),
				    sizeof(cfg));
	int ports_fd = open_layout(ISN_MAP_SYNPROXY_PORTS, BPF_MAP_TYPE_ARRAY, sizeof(__u32),
				   sizeof(__u64));
	unsigned int protected = 0;
	bool ok = config_fd >= 0 && ports_fd >= 0 && !synproxy_read(config_fd, ports_fd, &cfg, ports);

	if (config_fd >= 0)
		close(config_fd);
	if (ports_fd >= 0)
		close(ports_fd);
	if (!ok)
		return;
	for (int i = 0; i < SYNPROXY_PORT_WORDS; i++)
		protected += (unsigned int)__builtin_popcountll(ports[i]);
	state_set(out, "isnguard_synproxy_mode", "The SYN proxy's mode.", "mode", modes,
		  cfg.mode == SYNPROXY_ALWAYS ? "always" : cfg.mode == SYNPROXY_AUTO ? "auto" : "off");
	state_set(out, "isnguard_synproxy_path", "Where a valid cookie ACK becomes a connection.",
		  "path", synproxy_paths, synproxy_path_name(cfg.path));
	gauge(out, "isnguard_synproxy_ports", "Ports under the SYN proxy.", protected);
	gauge(out, "isnguard_synproxy_syn_threshold",
	      "Auto mode: SYNs per second to one port that switch its cookies on.",
	      cfg.syn_threshold);
	if (cfg.mode != SYNPROXY_OFF)
		write_auto_ports(out, &cfg, ports, protected);
}

/* Where the datapath is attached, in any network namespace (isn_links). */
static void write_links(FILE *out)
{
	int fd = open_layout(ISN_MAP_LINKS, BPF_MAP_TYPE_HASH, sizeof(struct link_key),
			     sizeof(struct link_info));
	struct link_key key, next;
	struct link_info info;
	int links = 0;
	void *prev = NULL;

	if (fd < 0)
		return;
	family(out, "isnguard_interface_info", "gauge",
	       "An interface isnguard is attached to: its name, network namespace (inode) and "
	       "ingress hook.");
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &info))
			continue;
		info.ifname[sizeof(info.ifname) - 1] = '\0';
		fputs("isnguard_interface_info{interface=\"", out);
		label_value(out, info.ifname);
		fprintf(out, "\",netns=\"%llu\",ingress=\"%s\"} 1\n",
			(unsigned long long)key.netns_ino, link_ingress_name(info.ingress));
		links++;
	}
	close(fd);
	gauge(out, "isnguard_attached_interfaces", "Interfaces isnguard is attached to.", links);
}

/* The error of the last failed read, said once until it changes (a daemon's log, not a flood). */
static void note_read_error(const char *what, int err)
{
	static char last[256];
	char now[256];

	snprintf(now, sizeof(now), "%s: %s", what, strerror(-err));
	if (!strcmp(now, last))
		return;
	snprintf(last, sizeof(last), "%s", now);
	cli_error("exporter: %s (isnguard_up 0)", now);
}

int metrics_write(FILE *out)
{
	struct stats_source src;
	static struct stats_sample s;
	int err = -ENOENT;

	family(out, "isnguard_build_info", "gauge", "isnguard's version and commit, as value 1.");
	fputs("isnguard_build_info{version=\"", out);
	label_value(out, ISNGUARD_VERSION);
	fputs("\",commit=\"", out);
	label_value(out, ISNGUARD_COMMIT);
	fputs("\"} 1\n", out);
	/* Nothing pinned (not attached, nor kept) is no error: up says so. */
	if (pinned_state_exists()) {
		err = stats_source_open("exporter", &src);
		if (!err)
			err = stats_read_sample("exporter", &src, &s);
		stats_source_close(&src);
		if (err)
			note_read_error("read the pinned state", err);
	}
	gauge(out, "isnguard_up", "1 when isnguard's pinned state was read, 0 when there is none "
	      "(not attached) or it could not be read.", !err);
	if (!err) {
		write_counters(out, &s);
		gauge(out, "isnguard_flows", "Entries in both flow tables (connections and handshakes).",
		      (double)s.flows_present);
		gauge(out, "isnguard_flows_max", "--max-flows: connections the flow table holds.",
		      (double)s.flows_max);
		gauge(out, "isnguard_flows_evicted",
		      "Handshakes the full LRU table evicted, estimated: created - expired - removed - "
		      "present, at least 0.", (double)stats_flows_evicted(&s));
		if (s.buckets_max) {
			gauge(out, "isnguard_synproxy_source_buckets",
			      "The SYN policy's source buckets holding a source.",
			      (double)s.buckets_held);
			gauge(out, "isnguard_synproxy_source_buckets_spending",
			      "Of them, those not full: sources sending SYNs now.",
			      (double)s.buckets_spending);
			gauge(out, "isnguard_synproxy_source_buckets_max",
			      "Source buckets the table holds.", (double)s.buckets_max);
		}
		write_config(out, &s);
		write_sweeper(out);
		write_synproxy(out);
		write_links(out);
	}
	return fflush(out) || ferror(out) ? -EIO : 0;
}
