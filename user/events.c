// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The datapath's events (bpf/events.h). A BPF ring buffer has one consumer
 * position, so each reader has a ring of its own (enum isn_event_reader)
 * and says it is there by its pid in isn_event_state; the datapath writes
 * only into the rings of readers there. A reader that died leaves its pid:
 * the next one takes the ring over once that pid is gone.
 */
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "counters.h"
#include "events.h"
#include "loader.h"
#include "pinned.h"
#include "isnguard.skel.h"

static const char *const type_names[ISN_EVENT_TYPE_COUNT] = {
	[ISN_EVENT_AUTO_ON] = "auto_on",
	[ISN_EVENT_AUTO_OFF] = "auto_off",
	[ISN_EVENT_FLOOD_START] = "flood_start",
	[ISN_EVENT_FLOOD_END] = "flood_end",
	[ISN_EVENT_TABLE_FULL] = "table_full",
	[ISN_EVENT_KEY_ROTATED] = "key_rotated",
	[ISN_EVENT_DROP] = "drop",
};

static const char *const table_names[ISN_TABLE_COUNT] = {
	[ISN_TABLE_FLOWS] = "flows",
	[ISN_TABLE_PROXY] = "translate",
};

static const char *const reader_names[ISN_EVENT_READERS] = {
	[ISN_EVENT_READER_MONITOR] = "monitor",
	[ISN_EVENT_READER_EXPORTER] = "exporter",
};

static const char *const ring_names[ISN_EVENT_READERS] = {
	[ISN_EVENT_READER_MONITOR] = ISN_MAP_EVENTS,
	[ISN_EVENT_READER_EXPORTER] = ISN_MAP_EVENTS_LOG,
};

const char *event_type_name(__u32 type)
{
	return type < ISN_EVENT_TYPE_COUNT && type_names[type] ? type_names[type] : "unknown";
}

const char *event_table_name(__u32 table)
{
	return table < ISN_TABLE_COUNT && table_names[table] ? table_names[table] : "unknown";
}

int event_priority(__u32 type)
{
	switch (type) {
	case ISN_EVENT_FLOOD_START:
	case ISN_EVENT_TABLE_FULL:
		return LOG_WARNING;
	case ISN_EVENT_FLOOD_END:
	case ISN_EVENT_AUTO_ON:
	case ISN_EVENT_AUTO_OFF:
		return LOG_NOTICE;
	default:
		return LOG_INFO;	/* a key rotated, a sampled drop */
	}
}

void events_pin_key_prog(struct isnguard *skel)
{
	char path[256];

	if (pin_path(path, sizeof(path), ISN_PIN_EVENT_KEY_PROG))
		return;
	unlink(path);
	if (bpf_obj_pin(bpf_program__fd(skel->progs.isnguard_event_key), path))
		fprintf(stderr, "%s: warning: pin %s: %s (a key written makes no event)\n",
			PROG_NAME, path, strerror(errno));
}

void events_key_written(void)
{
	unsigned char frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	char path[256];
	int fd;

	if (pin_path(path, sizeof(path), ISN_PIN_EVENT_KEY_PROG))
		return;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;	/* a state from before events */
	if (bpf_prog_test_run_opts(fd, &opts) || opts.retval)
		fprintf(stderr, "%s: warning: key: the key-rotation event was not made\n", PROG_NAME);
	close(fd);
}

/* A realtime clock reading minus how long ago ts_ns (CLOCK_MONOTONIC) was. */
void event_time_iso(__u64 ts_ns, char *buf, size_t len)
{
	struct timespec mono, real;
	__u64 now_mono, now_real, wall;
	time_t secs;
	struct tm tm;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	now_mono = (__u64)mono.tv_sec * 1000000000ULL + (__u64)mono.tv_nsec;
	now_real = (__u64)real.tv_sec * 1000000000ULL + (__u64)real.tv_nsec;
	wall = now_real - (now_mono > ts_ns ? now_mono - ts_ns : 0);
	secs = (time_t)(wall / 1000000000ULL);
	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(wall % 1000000000ULL / 1000000ULL));
}

/* The device's name where it is in this network namespace, else "". */
static void event_ifname(const struct isn_event *ev, char name[IF_NAMESIZE])
{
	name[0] = '\0';
	if (ev->ifindex && ev->netns_ino == netns_inode() && !if_indextoname(ev->ifindex, name))
		name[0] = '\0';
}

static void event_addr(const struct isn_event *ev, const __u8 *addr, char *buf, size_t len)
{
	if (!inet_ntop(ev->family == FLOW_FAMILY_IPV6 ? AF_INET6 : AF_INET, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

void event_text(const struct isn_event *ev, char *buf, size_t len)
{
	char ifname[IF_NAMESIZE], where[64] = "", src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	const char *type = event_type_name(ev->type);

	event_ifname(ev, ifname);
	if (ifname[0])
		snprintf(where, sizeof(where), " dev %s", ifname);
	else if (ev->ifindex)
		snprintf(where, sizeof(where), " ifindex %u netns %llu", ev->ifindex,
			 (unsigned long long)ev->netns_ino);
	switch (ev->type) {
	case ISN_EVENT_AUTO_ON:
	case ISN_EVENT_AUTO_OFF:
	case ISN_EVENT_FLOOD_START:
	case ISN_EVENT_FLOOD_END:
		snprintf(buf, len, "%s port %u rate %u/s threshold %u/s%s", type, ntohs(ev->dport),
			 ev->rate, ev->threshold, where);
		break;
	case ISN_EVENT_TABLE_FULL:
		if (ev->threshold)
			snprintf(buf, len, "%s table %s limit %u%s", type, event_table_name(ev->reason),
				 ev->threshold, where);
		else
			snprintf(buf, len, "%s table %s%s", type, event_table_name(ev->reason), where);
		break;
	case ISN_EVENT_KEY_ROTATED:
		snprintf(buf, len, "%s generation %u", type, ev->key_gen);
		break;
	case ISN_EVENT_DROP:
		if (!ev->family) {
			snprintf(buf, len, "%s reason %s%s", type, counter_name(ev->reason), where);
			break;
		}
		event_addr(ev, ev->saddr, src, sizeof(src));
		event_addr(ev, ev->daddr, dst, sizeof(dst));
		snprintf(buf, len, ev->family == FLOW_FAMILY_IPV6
			 ? "%s reason %s tcp [%s]:%u -> [%s]:%u%s" : "%s reason %s tcp %s:%u -> %s:%u%s",
			 type, counter_name(ev->reason), src, ntohs(ev->sport), dst, ntohs(ev->dport),
			 where);
		break;
	default:
		snprintf(buf, len, "%s type %u", type, ev->type);
	}
}

void event_json(struct json_writer *jw, const struct isn_event *ev)
{
	char when[40], ifname[IF_NAMESIZE], addr[INET6_ADDRSTRLEN];

	event_time_iso(ev->ts_ns, when, sizeof(when));
	event_ifname(ev, ifname);
	jw_start_object(jw);
	jw_string_field(jw, "time", when);
	jw_string_field(jw, "event", event_type_name(ev->type));
	switch (ev->type) {
	case ISN_EVENT_AUTO_ON:
	case ISN_EVENT_AUTO_OFF:
	case ISN_EVENT_FLOOD_START:
	case ISN_EVENT_FLOOD_END:
		jw_uint_field(jw, "port", ntohs(ev->dport));
		jw_uint_field(jw, "rate", ev->rate);
		jw_uint_field(jw, "threshold", ev->threshold);
		break;
	case ISN_EVENT_TABLE_FULL:
		jw_string_field(jw, "table", event_table_name(ev->reason));
		if (ev->threshold)
			jw_uint_field(jw, "limit", ev->threshold);
		break;
	case ISN_EVENT_KEY_ROTATED:
		jw_uint_field(jw, "key_generation", ev->key_gen);
		break;
	case ISN_EVENT_DROP:
		jw_string_field(jw, "reason", counter_name(ev->reason));
		if (ev->family) {
			jw_uint_field(jw, "family", ev->family);
			event_addr(ev, ev->saddr, addr, sizeof(addr));
			jw_string_field(jw, "src", addr);
			jw_uint_field(jw, "sport", ntohs(ev->sport));
			event_addr(ev, ev->daddr, addr, sizeof(addr));
			jw_string_field(jw, "dst", addr);
			jw_uint_field(jw, "dport", ntohs(ev->dport));
		}
		break;
	}
	if (ev->ifindex) {
		if (ifname[0])
			jw_string_field(jw, "interface", ifname);
		jw_uint_field(jw, "ifindex", ev->ifindex);
		jw_uint_field(jw, "netns", ev->netns_ino);
	}
	jw_uint_field(jw, "monotonic_ns", ev->ts_ns);
	jw_end_object(jw);
}

static bool pinned_exists(const char *name)
{
	int fd = pinned_map_open(name);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int ring_sample(void *ctx, void *data, size_t size)
{
	struct event_reader *r = ctx;
	struct isn_event ev = { 0 };

	if (r->discard)
		return 0;
	memcpy(&ev, data, size < sizeof(ev) ? size : sizeof(ev));
	return r->fn(r->ctx, &ev);
}

int event_reader_open(struct event_reader *r, enum isn_event_reader who, const char *cmd,
		      int (*fn)(void *ctx, const struct isn_event *ev), void *ctx)
{
	int ring_fd, err;
	__u32 pid;

	memset(r, 0, sizeof(*r));
	r->who = who;
	r->fn = fn;
	r->ctx = ctx;
	r->state_fd = pinned_map_open(ISN_MAP_EVENT_STATE);
	if (r->state_fd == -ENOENT && pinned_exists(ISN_MAP_CONFIG)) {
		if (cmd)
			cli_error("%s: the pinned state is from an isnguard without events "
				  "(no %s): attach with this build first", cmd, ISN_MAP_EVENT_STATE);
		return EXIT_RUNTIME;
	}
	if (r->state_fd < 0) {
		if (cmd)
			report_open_error(cmd, ISN_MAP_EVENT_STATE, r->state_fd);
		return EXIT_RUNTIME;
	}
	r->state = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED,
			r->state_fd, 0);
	if (r->state == MAP_FAILED) {
		r->state = NULL;
		if (cmd)
			cli_error("%s: map %s: %s", cmd, ISN_MAP_EVENT_STATE, strerror(errno));
		event_reader_close(r);
		return EXIT_RUNTIME;
	}
	pid = __atomic_load_n(&r->state->reader_pid[who], __ATOMIC_RELAXED);
	if (pid && pid != (__u32)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
		if (cmd)
			cli_error("%s: another %s (pid %u) reads the events: one at a time",
				  cmd, reader_names[who], pid);
		munmap(r->state, (size_t)sysconf(_SC_PAGESIZE));
		r->state = NULL;
		event_reader_close(r);
		return EXIT_RUNTIME;
	}
	ring_fd = pinned_map_open(ring_names[who]);
	if (ring_fd < 0) {
		if (cmd)
			report_open_error(cmd, ring_names[who], ring_fd);
		event_reader_close(r);
		return EXIT_RUNTIME;
	}
	r->ring = ring_buffer__new(ring_fd, ring_sample, r, NULL);
	err = r->ring ? 0 : -errno;
	close(ring_fd);
	if (err) {
		if (cmd)
			cli_error("%s: ring buffer %s: %s", cmd, ring_names[who], strerror(-err));
		event_reader_close(r);
		return EXIT_RUNTIME;
	}
	/* What a reader before this one left: not this reader's to show. */
	r->discard = true;
	ring_buffer__consume(r->ring);
	r->discard = false;
	__atomic_store_n(&r->state->reader_pid[who], (__u32)getpid(), __ATOMIC_RELAXED);
	return 0;
}

int event_reader_poll(struct event_reader *r, int timeout_ms)
{
	int n = ring_buffer__poll(r->ring, timeout_ms);

	return n == -EINTR ? 0 : n;
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.id : 0;
}

bool event_reader_current(const struct event_reader *r)
{
	int fd = pinned_map_open(ISN_MAP_EVENT_STATE);
	bool same = fd >= 0 && map_id(fd) == map_id(r->state_fd);

	if (fd >= 0)
		close(fd);
	return same;
}

void event_reader_close(struct event_reader *r)
{
	if (r->state) {
		__u32 me = (__u32)getpid();

		__atomic_compare_exchange_n(&r->state->reader_pid[r->who], &me, 0, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		munmap(r->state, (size_t)sysconf(_SC_PAGESIZE));
		r->state = NULL;
	}
	if (r->ring)
		ring_buffer__free(r->ring);
	r->ring = NULL;
	if (r->state_fd >= 0)
		close(r->state_fd);
	r->state_fd = -1;
}
