// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* isnguard isn: the reference ISN of one connection, as the datapath would compute it. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "parse.h"
#include "ref/isn_ref.h"

enum { OPT_HASH = 'H', OPT_KEY = 'k', OPT_LOCAL = 'l', OPT_REMOTE = 'r',
       OPT_TICKS = 't', OPT_JSON = 'j', OPT_HELP = 'h' };

static const struct cli_option isn_options[] = {
	{ "hash", required_argument, OPT_HASH, "MODE", "siphash (default), md5 or none" },
	{ "key", required_argument, OPT_KEY, "HEX32", "128-bit key as 32 hex digits (not needed for none)" },
	{ "local", required_argument, OPT_LOCAL, "ADDR:PORT", "the protected host's end; IPv6 as [ADDR]:PORT" },
	{ "remote", required_argument, OPT_REMOTE, "ADDR:PORT", "the peer's end" },
	{ "ticks", required_argument, OPT_TICKS, "M", "4-us clock value M (default: now, CLOCK_MONOTONIC)" },
	{ "json", no_argument, OPT_JSON, NULL, "print one JSON object {hash, f, m, isn}" },
	{ "help", no_argument, OPT_HELP, NULL, "show this help" },
	{ 0 },
};

struct isn_params {
	int hash;
	struct isn_key key;
	bool have_key;
	struct endpoint local, remote;
	bool have_local, have_remote;
	uint32_t ticks;
	bool have_ticks;
	bool json;
};

static int parse_isn_args(struct cli_parser *p, int argc, char **argv,
			  struct isn_params *prm)
{
	const char *why = NULL;
	int c;

	while ((c = cli_next_option(p, argc, argv)) != -1) {
		switch (c) {
		case OPT_HASH:
			prm->hash = isn_hash_from_name(optarg);
			if (prm->hash < 0)
				return cli_usage_error(p, "unknown hash '%s': use siphash, md5 or none", optarg);
			break;
		case OPT_KEY:
			if (parse_key_hex(optarg, &prm->key, &why))
				return cli_usage_error(p, "bad key: %s", why);
			prm->have_key = true;
			break;
		case OPT_LOCAL:
			if (parse_endpoint(optarg, &prm->local, &why))
				return cli_usage_error(p, "bad --local '%s': %s", optarg, why);
			prm->have_local = true;
			break;
		case OPT_REMOTE:
			if (parse_endpoint(optarg, &prm->remote, &why))
				return cli_usage_error(p, "bad --remote '%s': %s", optarg, why);
			prm->have_remote = true;
			break;
		case OPT_TICKS:
			if (parse_u32(optarg, &prm->ticks, &why))
				return cli_usage_error(p, "bad --ticks '%s': %s", optarg, why);
			prm->have_ticks = true;
			break;
		case OPT_JSON:
			prm->json = true;
			break;
		case OPT_HELP:
			cli_usage(p, stdout);
			return -1;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind]);
	if (!prm->have_local || !prm->have_remote)
		return cli_usage_error(p, "--local and --remote are required");
	if (prm->local.family != prm->remote.family)
		return cli_usage_error(p, "--local and --remote must both be IPv4 or both IPv6");
	if (!prm->have_key && prm->hash != ISN_HASH_NONE)
		return cli_usage_error(p, "--key is required for --hash %s", isn_hash_name(prm->hash));
	return 0;
}

static uint32_t clock_ticks_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ref_isn_ticks((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

int do_isn(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "isn",
		.args = "",
		.summary = "Print the RFC 6528 ISN = M + F of one connection, computed by the\n"
			   "userspace reference (OpenSSL), as the datapath computes it.",
		.options = isn_options,
	};
	struct isn_params prm = { .hash = ISN_HASH_SIPHASH };
	struct flow_key fk;
	uint32_t f, isn;
	int err;

	cli_parser_init(&p);
	err = parse_isn_args(&p, argc, argv, &prm);
	if (err)
		return err < 0 ? 0 : err;
	if (!prm.have_ticks)
		prm.ticks = clock_ticks_now();

	flow_key_from_endpoints(&prm.local, &prm.remote, &fk);
	err = ref_isn_f(prm.hash, &prm.key, &fk, &f);
	if (err) {
		cli_error("isn: %s failed: %s", isn_hash_name(prm.hash), strerror(-err));
		return EXIT_RUNTIME;
	}
	isn = prm.ticks + f;

	if (prm.json) {
		struct json_writer jw;

		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "hash", isn_hash_name(prm.hash));
		jw_uint_field(&jw, "f", f);
		jw_uint_field(&jw, "m", prm.ticks);
		jw_uint_field(&jw, "isn", isn);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else {
		char local[64], remote[64];

		format_endpoint(&prm.local, local, sizeof(local));
		format_endpoint(&prm.remote, remote, sizeof(remote));
		printf("hash    %s\nlocal   %s\nremote  %s\n", isn_hash_name(prm.hash), local, remote);
		printf("f       0x%08x  %u\n", f, f);
		printf("m       0x%08x  %u\n", prm.ticks, prm.ticks);
		printf("isn     0x%08x  %u\n", isn, isn);
	}
	return 0;
}
