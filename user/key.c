// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * isnguard mode and isnguard key: what new flows get their ISNs from. Each
 * flow keeps the seq_delta it was created with, so neither command disturbs
 * a live connection.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <openssl/sha.h>

#include "cli.h"
#include "commands.h"
#include "events.h"
#include "json_writer.h"
#include "maps.h"
#include "parse.h"
#include "pinned.h"
#include "ref/isn_ref.h"
#include "keyfile.h"

/* --- mode ---------------------------------------------------------------- */

static bool mode_json;

static const struct cli_option mode_options[] = {
	CLI_JSON_ROW(&mode_json, "print {hash, previous}"),
	CLI_HELP_ROW,
	{ 0 },
};

static int parse_mode_args(struct cli_parser *p, int argc, char **argv, enum isn_hash *hash)
{
	int found, err = cli_parse(p, argc, argv);

	if (err)
		return err;
	if (optind >= argc)
		return cli_usage_error(p, "which hash? use siphash, md5 or none");
	if (optind + 1 < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind + 1]);
	found = isn_hash_from_name(argv[optind]);
	if (found < 0)
		return cli_usage_error(p, "unknown hash '%s': use siphash, md5 or none", argv[optind]);
	*hash = (enum isn_hash)found;
	return 0;
}

/* Read-modify-write of the one config entry: only .hash changes, the timeouts stay. */
static int config_set_hash(int fd, enum isn_hash hash, __u32 *previous)
{
	struct isn_config config;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &config))
		return -errno;
	*previous = config.hash;
	config.hash = hash;
	if (bpf_map_update_elem(fd, &zero, &config, BPF_EXIST))
		return -errno;
	return 0;
}

static void print_mode(enum isn_hash hash, __u32 previous, bool json)
{
	struct json_writer jw;

	if (!json) {
		printf("hash for new flows: %s (was %s)\n", isn_hash_name(hash),
		       isn_hash_name(previous));
		return;
	}
	jw_init(&jw, stdout);
	jw_start_object(&jw);
	jw_string_field(&jw, "hash", isn_hash_name(hash));
	jw_string_field(&jw, "previous", isn_hash_name(previous));
	jw_end_object(&jw);
	jw_finish(&jw);
}

int do_mode(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "mode",
		.args = "siphash|md5|none",
		.summary = "Switch the hash that makes the ISNs of new flows. Live flows keep the\n"
			   "translation they started with.",
		.options = mode_options,
	};
	enum isn_hash hash = ISN_HASH_SIPHASH;
	__u32 previous = 0;
	bool json;
	int fd, err;

	mode_json = false;
	err = parse_mode_args(&p, argc, argv, &hash);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	json = mode_json;
	if (require_root(p.cmd))
		return EXIT_RUNTIME;
	fd = map_open_checked(p.cmd, &isn_config_layout, NULL);
	if (fd < 0)
		return EXIT_RUNTIME;
	err = config_set_hash(fd, hash, &previous);
	close(fd);
	if (err) {
		cli_error("mode: update %s: %s", ISN_MAP_CONFIG, strerror(-err));
		return EXIT_RUNTIME;
	}
	print_mode(hash, previous, json);
	return 0;
}

/* --- key ----------------------------------------------------------------- */

struct key_params {
	const char *from_file;
	bool json;
};

static struct key_params key_prm;

static const struct cli_option key_options[] = {
	CLI_OPT_STRING("from-file", 'f', "FILE", &key_prm.from_file,
		       "with set: 32 hex digits from FILE ('-' for stdin)"),
	CLI_JSON_ROW(&key_prm.json, "print {key: rotated|set}"),
	CLI_HELP_ROW,
	{ 0 },
};

/* Room for the key and generous whitespace; anything longer is not a key file. */
#define KEY_FILE_MAX 256

/* Fills key for an action; returns 0 or an exit code, after printing why. */
typedef int (*key_source_fn)(const struct cli_parser *p, const struct key_params *prm,
			     struct isn_key *key);

struct key_action {
	const char *name;
	key_source_fn make_key;
	bool needs_file;
	const char *json_value;
};

static int random_key(const struct cli_parser *p, const struct key_params *prm,
		      struct isn_key *key)
{
	ssize_t n;

	(void)p;
	(void)prm;
	/* Up to 256 bytes from the (initialised) pool never come short; check anyway. */
	n = getrandom(key->bytes, sizeof(key->bytes), 0);
	if (n != (ssize_t)sizeof(key->bytes)) {
		cli_error("key: getrandom: %s", n < 0 ? strerror(errno) : "short read");
		return EXIT_RUNTIME;
	}
	return 0;
}

static ssize_t read_up_to(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap && (r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n += (size_t)r;
	}
	return (ssize_t)n;
}

/* Strips surrounding whitespace in place; returns the start of what is left. */
static char *trim(char *text, size_t len)
{
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	text[len] = '\0';
	while (isspace((unsigned char)*text))
		text++;
	return text;
}

int key_file_read(const char *cmd, const char *path, bool private_only, struct isn_key *key)
{
	bool from_stdin = !strcmp(path, "-");
	char text[KEY_FILE_MAX + 2];	/* one byte past the limit tells "too long", one for NUL */
	const char *why = NULL, *name = from_stdin ? "stdin" : path;
	struct stat st;
	ssize_t len;
	int fd, err = 0;

	fd = from_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error("%s: open the key file %s: %s", cmd, path, strerror(errno));
		return EXIT_RUNTIME;
	}
	/* A fleet's shared secret in a file others can read is no secret. */
	if (private_only && !fstat(fd, &st) && (st.st_mode & 077)) {
		cli_error("%s: key file %s is readable by group or others (mode %04o): run "
			  "'chmod 600 %s'", cmd, path, (unsigned int)(st.st_mode & 07777), path);
		close(fd);
		return EXIT_RUNTIME;
	}
	len = read_up_to(fd, text, KEY_FILE_MAX + 1);
	if (!from_stdin)
		close(fd);
	if (len < 0) {
		cli_error("%s: read the key file %s: %s", cmd, name, strerror((int)-len));
		err = EXIT_RUNTIME;
	} else if (len > KEY_FILE_MAX) {
		why = "longer than a key";
	} else if (memchr(text, '\0', (size_t)len)) {
		why = "contains a NUL byte";
	} else {
		parse_key_hex(trim(text, (size_t)len), key, &why);
	}
	explicit_bzero(text, sizeof(text));
	if (why) {
		cli_error("%s: bad key in %s: %s (32 hex digits)", cmd, name, why);
		err = EXIT_USAGE;
	}
	return err;
}

static int key_from_file(const struct cli_parser *p, const struct key_params *prm,
			 struct isn_key *key)
{
	return key_file_read(p->cmd, prm->from_file, false, key);
}

static const struct key_action key_actions[] = {
	{ "rotate", random_key, false, "rotated" },
	{ "set", key_from_file, true, "set" },
	{ 0 },
};

static const struct key_action *find_key_action(const char *name)
{
	for (const struct key_action *a = key_actions; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

static int parse_key_args(struct cli_parser *p, int argc, char **argv,
			  struct key_params *prm, const struct key_action **action)
{
	int err;

	key_prm = (struct key_params){ 0 };
	err = cli_parse(p, argc, argv);
	*prm = key_prm;
	if (err)
		return err;
	if (optind >= argc)
		return cli_usage_error(p, "missing subcommand: rotate or set");
	*action = find_key_action(argv[optind]);
	if (!*action)
		return cli_usage_error(p, "unknown subcommand '%s': use rotate or set", argv[optind]);
	if (optind + 1 < argc)
		return cli_usage_error(p, "unexpected argument '%s'", argv[optind + 1]);
	if ((*action)->needs_file && !prm->from_file)
		return cli_usage_error(p, "%s needs --from-file FILE", (*action)->name);
	if (!(*action)->needs_file && prm->from_file)
		return cli_usage_error(p, "--from-file goes with set, not %s", (*action)->name);
	return 0;
}

/*
 * The new key goes into the slot the current one does not use, then the
 * config names it current: ISNs of new flows use it from then on, SYN
 * cookies from the next cookie slot on, and the previous key's cookies stay
 * valid until the slot after this one ends (bpf/cookie.h), so no handshake
 * in flight breaks.
 */
int key_write(const struct isn_key *key)
{
	struct isn_config config;
	struct timespec now;
	__u32 zero = 0, slot;
	int key_fd, config_fd, err = 0;

	key_fd = map_open_checked("key", &isn_key_layout, NULL);
	if (key_fd < 0)
		return EXIT_RUNTIME;
	config_fd = map_open_checked("key", &isn_config_layout, NULL);
	if (config_fd < 0) {
		close(key_fd);
		return EXIT_RUNTIME;
	}
	if (bpf_map_lookup_elem(config_fd, &zero, &config)) {
		cli_error("key: read %s: %s", ISN_MAP_CONFIG, strerror(errno));
		err = EXIT_RUNTIME;
		goto out;
	}
	slot = (config.key_gen + 1) % ISN_KEY_SLOTS;
	/* isn_key is BPF_F_WRONLY: update works, lookup does not, by design. */
	if (bpf_map_update_elem(key_fd, &slot, key, BPF_ANY)) {
		cli_error("key: update %s: %s", ISN_MAP_KEY, strerror(errno));
		err = EXIT_RUNTIME;
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	config.key_gen++;
	config.key_rotated_ns = (__u64)now.tv_sec * 1000000000ULL + (__u64)now.tv_nsec;
	if (bpf_map_update_elem(config_fd, &zero, &config, BPF_EXIST)) {
		cli_error("key: update %s: %s", ISN_MAP_CONFIG, strerror(errno));
		err = EXIT_RUNTIME;
	} else {
		events_key_written();
	}
out:
	close(key_fd);
	close(config_fd);
	return err;
}

static void print_key_done(const struct key_action *action, const struct key_params *prm)
{
	struct json_writer jw;

	if (prm->json) {
		jw_init(&jw, stdout);
		jw_start_object(&jw);
		jw_string_field(&jw, "key", action->json_value);
		jw_end_object(&jw);
		jw_finish(&jw);
	} else if (prm->from_file) {
		printf("key set from %s (new flows only)\n",
		       strcmp(prm->from_file, "-") ? prm->from_file : "stdin");
	} else {
		printf("key rotated (new flows only)\n");
	}
}

int do_key(int argc, char **argv)
{
	struct cli_parser p = {
		.cmd = "key",
		.args = "rotate | set --from-file FILE",
		.summary = "Replace the 128-bit secret of the ISN hash, for new flows only:\n"
			   "  rotate  a fresh key from getrandom(2)\n"
			   "  set     the key in FILE, 32 hex digits (surrounding whitespace is fine)\n"
			   "The key is never printed and cannot be read back.",
		.options = key_options,
	};
	const struct key_action *action = NULL;
	struct key_params prm = { 0 };
	struct isn_key key;
	int err;

	err = parse_key_args(&p, argc, argv, &prm, &action);
	if (err)
		return err == CLI_HELP_SHOWN ? 0 : err;
	err = action->make_key(&p, &prm, &key);
	if (!err)
		err = require_root(p.cmd) ? EXIT_RUNTIME : key_write(&key);
	explicit_bzero(&key, sizeof(key));
	if (!err)
		print_key_done(action, &prm);
	return err;
}

/* --- a key file applied ---------------------------------------------------- */

/* ISN_MAP_KEY_SOURCE's one value: userspace's own record, no program reads it. */
struct key_source {
	unsigned char sha256[SHA256_DIGEST_LENGTH];
	__u32 key_gen;		/* isn_config.key_gen right after that key was written */
	__u32 pad;
};

static int key_source_open(bool create)
{
	char path[256];
	int fd = pinned_map_open(ISN_MAP_KEY_SOURCE);

	if (fd >= 0 || !create)
		return fd;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, ISN_MAP_KEY_SOURCE, sizeof(__u32),
			    sizeof(struct key_source), 1, NULL);
	if (fd < 0)
		return -errno;
	if (pin_path(path, sizeof(path), ISN_MAP_KEY_SOURCE) || bpf_obj_pin(fd, path)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int key_gen_now(const char *cmd, __u32 *key_gen)
{
	struct isn_config config;
	__u32 zero = 0;
	int fd = map_open_checked(cmd, &isn_config_layout, NULL), err = 0;

	if (fd < 0)
		return EXIT_RUNTIME;
	if (bpf_map_lookup_elem(fd, &zero, &config)) {
		cli_error("%s: read %s: %s", cmd, ISN_MAP_CONFIG, strerror(errno));
		err = EXIT_RUNTIME;
	}
	*key_gen = config.key_gen;
	close(fd);
	return err;
}

int key_apply_file(const char *cmd, const char *path, bool dry_run, bool *changed)
{
	struct key_source live = { 0 }, applied = { 0 };
	struct isn_key key;
	__u32 zero = 0, key_gen = 0;
	int fd, err;

	err = key_file_read(cmd, path, true, &key);
	if (!err)
		err = key_gen_now(cmd, &key_gen);
	if (err)
		goto out;
	SHA256(key.bytes, sizeof(key.bytes), applied.sha256);
	fd = key_source_open(false);
	*changed = fd < 0 || bpf_map_lookup_elem(fd, &zero, &live) ||
		   memcmp(live.sha256, applied.sha256, sizeof(live.sha256)) ||
		   live.key_gen != key_gen;
	if (fd >= 0)
		close(fd);
	if (!*changed || dry_run)
		goto out;
	err = key_write(&key);
	if (!err)
		err = key_gen_now(cmd, &applied.key_gen);
	if (err)
		goto out;
	fd = key_source_open(true);
	if (fd < 0 || bpf_map_update_elem(fd, &zero, &applied, BPF_ANY)) {
		/* The key is live; only a later apply will write it once more. */
		fprintf(stderr, "%s: warning: %s: cannot record the key applied in %s\n", PROG_NAME,
			cmd, ISN_MAP_KEY_SOURCE);
	}
	if (fd >= 0)
		close(fd);
out:
	explicit_bzero(&key, sizeof(key));
	return err;
}
