/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The datapath's events (include/isnguard.h, struct isn_event): a reader
 * of one ring (monitor's or the exporter's), and each event as text, JSON
 * and a journal priority (user/events.c).
 */
#ifndef ISNGUARD_EVENTS_H
#define ISNGUARD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf.h>

#include "isnguard.h"
#include "json_writer.h"

struct isnguard;

struct event_reader {
	enum isn_event_reader who;
	struct ring_buffer *ring;
	struct isn_event_state *state;	/* isn_event_state, mapped */
	int state_fd;
	bool discard;			/* draining what an earlier reader left */
	int (*fn)(void *ctx, const struct isn_event *ev);
	void *ctx;
};

/* The key-event program pinned beside the state (ISN_PIN_EVENT_KEY_PROG). */
void events_pin_key_prog(struct isnguard *skel);
/* After a key write: the pinned program reports it (no pinned program: nothing). */
void events_key_written(void);

/*
 * Becomes the reader of who's ring: what is in it from before dropped,
 * then every event to fn. 0, or EXIT_RUNTIME after a one-line error (not
 * attached, an older state without events, another reader alive); with
 * cmd NULL, no error is printed.
 */
int event_reader_open(struct event_reader *r, enum isn_event_reader who, const char *cmd,
		      int (*fn)(void *ctx, const struct isn_event *ev), void *ctx);
/* Waits up to timeout_ms for events and hands them to fn: >= 0, or -errno. */
int event_reader_poll(struct event_reader *r, int timeout_ms);
void event_reader_close(struct event_reader *r);
/* Whether the pinned state is still the one r reads (a purge and attach make new maps). */
bool event_reader_current(const struct event_reader *r);

const char *event_type_name(__u32 type);
/* A TABLE_FULL event's table (enum isn_event_table): "flows", "translate". */
const char *event_table_name(__u32 table);
/* The event's time, CLOCK_MONOTONIC, as wall clock ISO 8601 in UTC with ms. */
void event_time_iso(__u64 ts_ns, char *buf, size_t len);
/* The event's words after its time: "flood_start port 8080 rate 51234/s threshold 1000". */
void event_text(const struct isn_event *ev, char *buf, size_t len);
/* The event as one JSON object, its time first. */
void event_json(struct json_writer *jw, const struct isn_event *ev);
/* Its syslog priority (LOG_WARNING: a flood, a full table; LOG_INFO: a drop ...). */
int event_priority(__u32 type);

#endif /* ISNGUARD_EVENTS_H */
