// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporter's journal of the datapath's events: a thread reads the
 * exporter's own ring (isn_events_log; `isnguard monitor` has another) and
 * sends each event to the journal with sd_journal_sendv: MESSAGE as
 * monitor prints it, PRIORITY by kind (user/events.c, event_priority), and
 * structured fields (ISNGUARD_EVENT=flood_start, PORT=8080 ...). While no
 * state is pinned, or after a purge made new maps, it looks again every
 * JOURNAL_RETRY_S.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <systemd/sd-journal.h>

#include "counters.h"
#include "events.h"
#include "exporter.h"

#define JOURNAL_POLL_MS 200
#define JOURNAL_RETRY_S 2
#define JOURNAL_FIELDS 20

static pthread_t journal_thread;
static volatile bool journal_stopping;
static bool journal_running;

struct journal_fields {
	struct iovec iov[JOURNAL_FIELDS];
	char text[JOURNAL_FIELDS][160];
	int n;
};

static void field(struct journal_fields *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void field(struct journal_fields *f, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (f->n >= JOURNAL_FIELDS)
		return;
	va_start(ap, fmt);
	len = vsnprintf(f->text[f->n], sizeof(f->text[f->n]), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(f->text[f->n]))
		len = (int)sizeof(f->text[f->n]) - 1;
	f->iov[f->n] = (struct iovec){ .iov_base = f->text[f->n], .iov_len = (size_t)len };
	f->n++;
}

static int journal_event(void *ctx, const struct isn_event *ev)
{
	struct journal_fields f = { .n = 0 };
	char text[256], addr[INET6_ADDRSTRLEN];
	int af = ev->family == FLOW_FAMILY_IPV6 ? AF_INET6 : AF_INET;

	(void)ctx;
	event_text(ev, text, sizeof(text));
	field(&f, "MESSAGE=%s", text);
	field(&f, "PRIORITY=%d", event_priority(ev->type));
	field(&f, "SYSLOG_IDENTIFIER=isnguard-exporter");
	field(&f, "ISNGUARD_EVENT=%s", event_type_name(ev->type));
	switch (ev->type) {
	case ISN_EVENT_AUTO_ON:
	case ISN_EVENT_AUTO_OFF:
	case ISN_EVENT_FLOOD_START:
	case ISN_EVENT_FLOOD_END:
		field(&f, "PORT=%u", ntohs(ev->dport));
		field(&f, "RATE=%u", ev->rate);
		field(&f, "THRESHOLD=%u", ev->threshold);
		break;
	case ISN_EVENT_TABLE_FULL:
		field(&f, "TABLE=%s", event_table_name(ev->reason));
		break;
	case ISN_EVENT_KEY_ROTATED:
		field(&f, "KEY_GENERATION=%u", ev->key_gen);
		break;
	case ISN_EVENT_DROP:
		field(&f, "REASON=%s", counter_name(ev->reason));
		if (ev->family && inet_ntop(af, ev->saddr, addr, sizeof(addr)))
			field(&f, "SRC=%s", addr);
		if (ev->family && inet_ntop(af, ev->daddr, addr, sizeof(addr)))
			field(&f, "DST=%s", addr);
		if (ev->family) {
			field(&f, "SPORT=%u", ntohs(ev->sport));
			field(&f, "DPORT=%u", ntohs(ev->dport));
		}
		break;
	}
	if (ev->ifindex) {
		field(&f, "IFINDEX=%u", ev->ifindex);
		field(&f, "NETNS=%llu", (unsigned long long)ev->netns_ino);
	}
	sd_journal_sendv(f.iov, f.n);
	return 0;
}

static void *journal_run(void *arg)
{
	struct event_reader reader;
	bool open = false;
	time_t checked = 0;

	(void)arg;
	while (!journal_stopping) {
		time_t now = time(NULL);

		if (open && now - checked >= JOURNAL_RETRY_S) {
			checked = now;
			if (!event_reader_current(&reader)) {
				event_reader_close(&reader);
				open = false;
			}
		}
		if (!open) {
			open = !event_reader_open(&reader, ISN_EVENT_READER_EXPORTER, NULL,
						  journal_event, NULL);
			if (!open) {
				struct timespec wait = { .tv_sec = JOURNAL_RETRY_S };

				nanosleep(&wait, NULL);
				continue;
			}
			checked = now;
		}
		if (event_reader_poll(&reader, JOURNAL_POLL_MS) < 0) {
			event_reader_close(&reader);
			open = false;
		}
	}
	if (open)
		event_reader_close(&reader);
	return NULL;
}

int journal_start(void)
{
	journal_stopping = false;
	if (pthread_create(&journal_thread, NULL, journal_run, NULL))
		return -1;
	journal_running = true;
	return 0;
}

void journal_stop(void)
{
	if (!journal_running)
		return;
	journal_stopping = true;
	pthread_join(journal_thread, NULL);
	journal_running = false;
}
