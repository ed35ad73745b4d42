// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard exporter: serves /metrics in Prometheus' text exposition format
 * (version 0.0.4) over libmicrohttpd. Every scrape opens the pinned maps
 * afresh and reads them (user/metrics.c writes what they hold): a purge and
 * a new attach make new maps, which an fd kept from an earlier scrape would
 * never see. Its options, the HTTP server and the journal's thread
 * (user/journal.c) are here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <microhttpd.h>
#include <systemd/sd-daemon.h>

#include "cli.h"
#include "commands.h"
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

#define EXPORTER_CONNECTIONS 16
#define EXPORTER_TIMEOUT_S 10
#define CONTENT_TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"

static struct exporter_params prm;

static const struct cli_option exporter_options[] = {
	CLI_OPT_STRING("listen", 'l', "ADDR:PORT", &prm.listen,
		       "serve on ADDR:PORT ([ADDR]:PORT for IPv6; default " EXPORTER_DEFAULT_LISTEN ")"),
	CLI_OPT_FLAG("once", 256, &prm.once,
		     "print the metrics once on stdout and exit (node_exporter's textfile collector)"),
	CLI_HELP_ROW,
	{ 0 },
};

void exporter_parser(struct cli_parser *p)
{
	*p = (struct cli_parser){
		.cmd = "exporter",
		.args = "",
		.summary = "Serve the datapath's counters and state at /metrics in Prometheus' text\n"
			   "format, read from the pinned maps at each scrape, until SIGTERM. The\n"
			   "address is --listen, else the config file's [exporter] listen, else\n"
			   EXPORTER_DEFAULT_LISTEN ". isnguard_up is 0 while no state is pinned.\n"
			   "The datapath's events (as 'isnguard monitor' prints them) go to the\n"
			   "journal meanwhile: SYSLOG_IDENTIFIER=isnguard-exporter, ISNGUARD_EVENT=...",
		.options = exporter_options,
	};
}

struct exporter_params *exporter_params_current(void)
{
	return &prm;
}

/* ---- HTTP ---- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int status,
			       const char *type, char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	char *body = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&body, &len);
	int err;

	if (!out)
		return MHD_NO;
	err = metrics_write(out);
	fclose(out);
	if (err) {
		free(body);
		return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
			       "could not write the metrics\n", 28, false);
	}
	return respond(conn, MHD_HTTP_OK, CONTENT_TYPE_METRICS, body, len, true);
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size,
				      void **req_cls)
{
	static int first_call;
	static char index[] = "isnguard exporter: the metrics are at /metrics\n";
	static char not_found[] = "not found: the metrics are at /metrics\n";
	static char not_allowed[] = "only GET and HEAD\n";

	(void)cls;
	(void)version;
	(void)upload_data;
	/* The first call only says a request came; its headers are whole at the second. */
	if (!*req_cls) {
		*req_cls = &first_call;
		return MHD_YES;
	}
	if (*upload_data_size)
		*upload_data_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_allowed,
			       strlen(not_allowed), false);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(conn);
	if (!strcmp(url, "/"))
		return respond(conn, MHD_HTTP_OK, "text/plain", index, strlen(index), false);
	return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found, strlen(not_found), false);
}

/* libmicrohttpd's messages: kept for the one-line error of a failed start, else logged. */
static char mhd_message[256];
static bool mhd_started;

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	vsnprintf(mhd_message, sizeof(mhd_message), fmt, ap);
	mhd_message[strcspn(mhd_message, "\n")] = '\0';
	if (mhd_started)
		cli_error("exporter: %s", mhd_message);
}

/* --listen, else the config file's [exporter] listen (when the file exists), else the default. */
static int listen_address(struct cli_parser *p, const char **listen)
{
	static struct config cfg;
	const char *path = config_default_path();
	int err;

	*listen = prm.listen;
	if (*listen)
		return 0;
	*listen = EXPORTER_DEFAULT_LISTEN;
	if (access(path, F_OK))
		return 0;
	err = config_load(path, &cfg);
	if (err)
		return err;
	if (cfg.exporter_listen[0])
		*listen = cfg.exporter_listen;
	(void)p;
	return 0;
}

static int sockaddr_of(struct cli_parser *p, const char *listen, struct sockaddr_storage *sa)
{
	struct endpoint ep;
	const char *why = NULL;

	if (parse_endpoint(listen, &ep, &why) || !ep.port)
		return cli_usage_error(p, "bad --listen '%s': %s", listen,
				       why ? why : "expected ADDR:PORT with a port from 1");
	memset(sa, 0, sizeof(*sa));
	if (ep.family == FLOW_FAMILY_IPV6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(ep.port);
		memcpy(&in6->sin6_addr, ep.addr, 16);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		in->sin_family = AF_INET;
		in->sin_port = htons(ep.port);
		memcpy(&in->sin_addr, ep.addr, 4);
	}
	return 0;
}

static int serve(const char *listen, const struct sockaddr_storage *sa)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *daemon;
	sigset_t stop;
	int sig = 0;

	if (sa->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* Blocked before the server's thread starts, so it inherits the mask and sigwait takes them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	daemon = MHD_start_daemon(flags, ntohs(((const struct sockaddr_in *)sa)->sin_port), NULL,
				  NULL, handle_request, NULL,
				  MHD_OPTION_SOCK_ADDR, sa,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)EXPORTER_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)EXPORTER_TIMEOUT_S,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_END);
	if (!daemon) {
		cli_error("exporter: listen on %s: %s", listen,
			  mhd_message[0] ? mhd_message : "the HTTP server did not start");
		return EXIT_RUNTIME;
	}
	mhd_started = true;
	if (journal_start())
		fprintf(stderr, "%s: exporter: warning: no journal of events: %s\n", PROG_NAME,
			strerror(errno));
	fprintf(stderr, "%s: exporter: serving http://%s/metrics\n", PROG_NAME, listen);
	sd_notifyf(0, "READY=1\nSTATUS=serving http://%s/metrics", listen);
	while (sigwait(&stop, &sig))
		;
	sd_notify(0, "STOPPING=1");
	journal_stop();
	MHD_stop_daemon(daemon);
	return 0;
}

int do_exporter(int argc, char **argv)
{
	struct cli_parser p;
	struct sockaddr_storage sa;
	const char *listen = NULL;
	int err;

	exporter_parser(&p);
	prm = (struct exporter_params){ 0 };
	err = cli_parse(&p, argc, argv);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	if (optind < argc)
		return cli_usage_error(&p, "unexpected argument '%s'", argv[optind]);
	if (prm.once && prm.listen)
		return cli_usage_error(&p, "--once prints to stdout: it takes no --listen");
	if (!prm.once) {
		err = listen_address(&p, &listen);
		if (!err)
			err = sockaddr_of(&p, listen, &sa);
		if (err)
			return err;
	}
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	if (prm.once)
		return metrics_write(stdout) ? EXIT_RUNTIME : 0;
	return serve(listen, &sa);
}
