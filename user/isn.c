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

static int key_option(struct cli_parser *p, const struct cli_option *o,
		      int argc __attribute__((unused)), char **argv __attribute__((unused)),
		      const char *arg)
{
	const char *why;

	if (parse_key_hex(arg, o->dest, &why))
		return cli_usage_error(p, "bad key: %s", why);
	return 0;
}

static int endpoint_option(struct cli_parser *p, const struct cli_option *o,
			   int argc __attribute__((unused)), char **argv __attribute__((unused)),
			   const char *arg)
{
	const char *why;

	if (parse_endpoint(arg, o->dest, &why))
		return cli_usage_error(p, "bad --%s '%s': %s", o->name, arg, why);
	return 0;
}

static struct isn_params isn_prm = { .hash = ISN_HASH_SIPHASH };

static const struct cli_option isn_options[] = {
	CLI_OPT_CHOICE("hash", 'H', "MODE", &isn_prm.hash, "hash", isn_hash_choices,
		       "siphash (default), md5 or none"),
	CLI_OPT_CUSTOM("key", required_argument, 'k', "HEX32", &isn_prm.key, key_option,
		       "128-bit key as 32 hex digits (not needed for none)",
		       .given = &isn_prm.have_key),
	CLI_OPT_CUSTOM("local", required_argument, 'l', "ADDR:PORT", &isn_prm.local,
		       endpoint_option, "the protected host's end; IPv6 as [ADDR]:PORT",
		       .given = &isn_prm.have_local),
	CLI_OPT_CUSTOM("remote", required_argument, 'r', "ADDR:PORT", &isn_prm.remote,
		       endpoint_option, "the peer's end", .given = &isn_prm.have_remote),
	CLI_OPT_U32("ticks", 't', "M", &isn_prm.ticks, 0, UINT32_MAX,
		    "4-us clock value M (default: now, CLOCK_MONOTONIC)",
		    .given = &isn_prm.have_ticks),
	CLI_JSON_ROW(&isn_prm.json, "print one JSON object {hash, f, m, isn}"),
	CLI_HELP_ROW,
	{ 0 },
};

static int parse_isn_args(struct cli_parser *p, int argc, char **argv,
			  const struct isn_params *prm)
{
	int err = cli_parse(p, argc, argv);

	if (err)
		return err;
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
	struct isn_params prm;
	struct flow_key fk;
	uint32_t f, isn;
	int err;

	isn_prm = (struct isn_params){ .hash = ISN_HASH_SIPHASH };
	err = parse_isn_args(&p, argc, argv, &isn_prm);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	prm = isn_prm;
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
