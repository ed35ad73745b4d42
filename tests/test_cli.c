// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * build/isnguard isn: output for fixed inputs and errors for bad ones.
 * Expected F values were computed once by an independent Python
 * implementation (SipHash-2-4 written from the paper, MD5 from hashlib).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf_run.h"
#include "cli_run.h"
#include "harness.h"

#define KEY_SEQ "000102030405060708090a0b0c0d0e0f"
#define KEY_RND "3f5a9c0e71d2b8a4e6c1097d5b3f8a26"

static void read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

/* Declared in cli_run.h for the other CLI tests (test_cli_state.c) and test_harness.c. */
bool run_build_binary(struct cli_result *res, const char *name, const char *const *args,
		      int stop_after_ms)
{
	const char *argv[32] = { name };
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 }, status;
	const char *bin = build_path(name);
	char bin_copy[4096];
	pid_t pid;
	int n = 1;

	snprintf(bin_copy, sizeof(bin_copy), "%s", bin);
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	if (pipe(out_pipe) || pipe(err_pipe) || (pid = fork()) < 0) {
		FAIL("run %s: %s", name, strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (out_pipe[i] >= 0)
				close(out_pipe[i]);
			if (err_pipe[i] >= 0)
				close(err_pipe[i]);
		}
		return false;
	}
	if (pid == 0) {
		dup2(out_pipe[1], 1);
		dup2(err_pipe[1], 2);
		close(out_pipe[0]);
		close(err_pipe[0]);
		execv(bin_copy, (char *const *)argv);
		_exit(127);
	}
	close(out_pipe[1]);
	close(err_pipe[1]);
	if (stop_after_ms > 0) {
		usleep((useconds_t)stop_after_ms * 1000);
		kill(pid, SIGTERM);
	}
	/* Outputs here are small: reading one pipe then the other cannot deadlock. */
	read_all(out_pipe[0], res->out, sizeof(res->out));
	read_all(err_pipe[0], res->err, sizeof(res->err));
	close(out_pipe[0]);
	close(err_pipe[0]);
	waitpid(pid, &status, 0);
	res->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return true;
}

bool run_cli_stopped_after(struct cli_result *res, const char *const *args, int stop_after_ms)
{
	return run_build_binary(res, "isnguard", args, stop_after_ms);
}

bool run_cli(struct cli_result *res, const char *const *args)
{
	return run_cli_stopped_after(res, args, 0);
}

static void expect_json(const char *const *args, const char *expected)
{
	struct cli_result res;
	char want[256];

	snprintf(want, sizeof(want), "%s\n", expected);
	if (!ASSERT_TRUE(run_cli(&res, args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "exit status");
	ASSERT_STREQ(res.out, want, "stdout");
	ASSERT_STREQ(res.err, "", "stderr");
}

TEST(test_cli_isn_siphash_ipv4_json)
{
	const char *args[] = { "isn", "--hash", "siphash", "--key", KEY_SEQ, "--local", "10.0.0.1:80",
			       "--remote", "10.0.0.2:40000", "--ticks", "0", "--json", NULL };

	expect_json(args, "{\"hash\":\"siphash\",\"f\":3287547870,\"m\":0,\"isn\":3287547870}");
}

TEST(test_cli_isn_md5_ipv4_json)
{
	const char *args[] = { "isn", "--hash", "md5", "--key", KEY_SEQ, "--local", "10.0.0.1:80",
			       "--remote", "10.0.0.2:40000", "--ticks", "0", "--json", NULL };

	expect_json(args, "{\"hash\":\"md5\",\"f\":2217800923,\"m\":0,\"isn\":2217800923}");
}

/* M + F wraps mod 2^32. */
TEST(test_cli_isn_siphash_ipv6_wraps)
{
	const char *args[] = { "isn", "--key", KEY_RND, "--local", "[2001:db8::1]:443",
			       "--remote", "[2001:db8::2]:5555", "--ticks", "4294967295", "--json", NULL };

	expect_json(args, "{\"hash\":\"siphash\",\"f\":3387318246,\"m\":4294967295,\"isn\":3387318245}");
}

TEST(test_cli_isn_md5_ipv6_json)
{
	const char *args[] = { "isn", "-H", "md5", "-k", KEY_SEQ, "-l", "[2001:db8::1]:443",
			       "-r", "[2001:db8::2]:5555", "-t", "100", "-j", NULL };

	expect_json(args, "{\"hash\":\"md5\",\"f\":1485054829,\"m\":100,\"isn\":1485054929}");
}

TEST(test_cli_isn_md5_other_key_hex_ticks)
{
	const char *args[] = { "isn", "--hash", "md5", "--key", "3F5A9C0E71D2B8A4E6C1097D5B3F8A26",
			       "--local", "192.168.1.10:22", "--remote", "203.0.113.7:51234",
			       "--ticks", "0x75bcd15", "--json", NULL };

	expect_json(args, "{\"hash\":\"md5\",\"f\":897475689,\"m\":123456789,\"isn\":1020932478}");
}

TEST(test_cli_isn_none_needs_no_key)
{
	const char *args[] = { "isn", "--hash", "none", "--local", "192.168.1.10:22",
			       "--remote", "203.0.113.7:51234", "--ticks", "42", "--json", NULL };

	expect_json(args, "{\"hash\":\"none\",\"f\":0,\"m\":42,\"isn\":42}");
}

TEST(test_cli_isn_text_output)
{
	const char *args[] = { "isn", "--key", KEY_SEQ, "--local", "10.0.0.1:80",
			       "--remote", "10.0.0.2:40000", "--ticks", "16", NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(run_cli(&res, args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "exit status");
	ASSERT_STREQ(res.out,
		     "hash    siphash\n"
		     "local   10.0.0.1:80\n"
		     "remote  10.0.0.2:40000\n"
		     "f       0xc3f3ffde  3287547870\n"
		     "m       0x00000010  16\n"
		     "isn     0xc3f3ffee  3287547886\n", "stdout");
}

/* Without --ticks, M is the clock now: it must lie between readings around the call. */
TEST(test_cli_isn_default_ticks_is_monotonic_clock)
{
	const char *args[] = { "isn", "--hash", "none", "--local", "10.0.0.1:1",
			       "--remote", "10.0.0.2:2", "--json", NULL };
	struct cli_result res;
	struct timespec ts;
	uint32_t before, after;
	unsigned long m = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (uint32_t)(((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) / 4000);
	if (!ASSERT_TRUE(run_cli(&res, args), "run isnguard"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = (uint32_t)(((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) / 4000);
	ASSERT_EQ(res.status, 0, "exit status");
	if (!ASSERT_EQ(sscanf(res.out, "{\"hash\":\"none\",\"f\":0,\"m\":%lu", &m), 1, "parse m"))
		return;
	ASSERT_TRUE((uint32_t)((uint32_t)m - before) <= (uint32_t)(after - before),
		    "m within the clock around the call");
}

/*
 * An interface no host has: were a check between options ever lost, the
 * attach rows below would fail on it, not attach to the machine's own NIC.
 */
#define NO_DEV "isng-nodev0"

/* Each bad input: exit 2, nothing on stdout, exactly one line on stderr naming the problem. */
static const struct {
	const char *desc;
	const char *args[16];
	const char *err_contains;
} bad_inputs[] = {
	{ "short key", { "isn", "--key", "0011", "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2" }, "bad key" },
	{ "long key", { "isn", "--key", KEY_SEQ "00", "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2" }, "bad key" },
	{ "non-hex key", { "isn", "--key", "000102030405060708090a0b0c0d0e0g", "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2" }, "not a hex digit" },
	{ "unknown hash", { "isn", "--hash", "sha1", "--key", KEY_SEQ, "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2" }, "unknown hash 'sha1'" },
	{ "bad IPv4", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.256:1", "--remote", "1.2.3.5:2" }, "bad --local" },
	{ "port too large", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:65536", "--remote", "1.2.3.5:2" }, "port" },
	{ "port not a number", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:http", "--remote", "1.2.3.5:2" }, "port" },
	{ "missing port", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4", "--remote", "1.2.3.5:2" }, "ADDR:PORT" },
	{ "empty port", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:", "--remote", "1.2.3.5:2" }, "port" },
	{ "unbracketed IPv6", { "isn", "--key", KEY_SEQ, "--local", "::1:80", "--remote", "[::2]:2" }, "brackets" },
	{ "bad IPv6", { "isn", "--key", KEY_SEQ, "--local", "[::g]:80", "--remote", "[::2]:2" }, "bad IPv6" },
	{ "mixed families", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:1", "--remote", "[::2]:2" }, "IPv4 or both IPv6" },
	{ "missing remote", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:1" }, "--remote" },
	{ "missing key", { "isn", "--hash", "md5", "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2" }, "--key is required" },
	{ "negative ticks", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2", "--ticks", "-1" }, "bad --ticks" },
	{ "ticks too large", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2", "--ticks", "4294967296" }, "bad --ticks" },
	{ "unknown option", { "isn", "--frobnicate" }, "unknown option" },
	{ "option without argument", { "isn", "--key" }, "needs an argument" },
	{ "stray argument", { "isn", "--key", KEY_SEQ, "--local", "1.2.3.4:1", "--remote", "1.2.3.5:2", "extra" }, "unexpected argument" },
	{ "unknown command", { "frobnicate" }, "unknown command" },
	{ "attach without interface", { "attach" }, "missing interface name" },
	{ "attach two interfaces", { "attach", NO_DEV, "eth1" }, "unexpected argument 'eth1'" },
	{ "attach zero flows", { "attach", "--max-flows", "0", NO_DEV }, "bad --max-flows" },
	{ "attach huge flow table", { "attach", "--max-flows", "4294967295", NO_DEV }, "bad --max-flows" },
	{ "attach unknown XDP mode", { "attach", "--xdp-mode", "offload", NO_DEV }, "unknown XDP mode" },
	{ "attach unknown ingress hook", { "attach", "--ingress", "nic", NO_DEV }, "unknown ingress hook" },
	{ "attach unknown hash", { "attach", "--hash", "sha1", NO_DEV }, "unknown hash 'sha1'" },
	{ "detach without interface", { "detach" }, "missing interface name" },
	{ "attach name too long", { "attach", "isng-name-too-long0" }, "too long (at most 15" },
	{ "detach name too long", { "detach", "isng-name-too-long0" }, "too long (at most 15" },
	{ "status with an argument", { "status", "eth0" }, "unexpected argument" },
	{ "watch interval too short", { "stats", "--watch", "0.01" }, "bad --watch '0.01'" },
	{ "short watch attached", { "stats", "-w0.01" }, "bad --watch '0.01'" },
	{ "watch then stray word", { "stats", "--watch", "eth0" }, "unexpected argument 'eth0'" },
	{ "synproxy unknown mode", { "synproxy", "--mode", "sometimes" }, "unknown mode 'sometimes': use always or auto" },
	{ "synproxy zero threshold", { "synproxy", "--syn-threshold", "0" }, "bad --syn-threshold '0': must be 1-100000000" },
	{ "synproxy bad ports", { "synproxy", "80,70000" }, "bad port list" },
	{ "synproxy two arguments", { "synproxy", "80", "off" }, "unexpected argument 'off'" },
	{ "synproxy unknown path", { "synproxy", "--path", "remote" }, "unknown path 'remote': use auto, local or translate" },
	{ "attach unknown synproxy path", { "attach", "--synproxy", "80", "--synproxy-path", "nat", NO_DEV }, "unknown --synproxy-path 'nat'" },
	{ "attach synproxy path alone", { "attach", "--synproxy-path", "translate", NO_DEV }, "go with --synproxy PORTS" },
	{ "attach syn hook tc beside xdp", { "attach", "--syn-hook", "tc", NO_DEV }, "--syn-hook tc goes with --ingress tc" },
	{ "attach unknown syn hook", { "attach", "--ingress", "tc", "--syn-hook", "nic", NO_DEV }, "unknown --syn-hook 'nic'" },
	{ "attach xdp mode with the syn hook at tc", { "attach", "--ingress", "tc", "--syn-hook", "tc", "--synproxy", "80", "--xdp-mode", "skb", NO_DEV }, "--xdp-mode: no XDP program with --ingress tc" },
	{ "attach xdp mode with tc ingress alone", { "attach", "--ingress", "tc", "--xdp-mode", "native", NO_DEV }, "--xdp-mode: no XDP program with --ingress tc" },
	{ "flows unknown option", { "flows", "--colour", "blue" }, "unknown option --colour" },
	{ "flows unknown family", { "flows", "--family", "ipx" }, "unknown family 'ipx'" },
	{ "flows bad address", { "flows", "--addr", "10.0.0" }, "bad --addr '10.0.0'" },
	{ "flows port zero", { "flows", "--port", "0" }, "bad --port '0'" },
	{ "exporter listen on a name", { "exporter", "--listen", "localhost:9" }, "bad --listen 'localhost:9'" },
	{ "exporter listen without port", { "exporter", "--listen", "127.0.0.1" }, "bad --listen '127.0.0.1'" },
	{ "exporter once and listen", { "exporter", "--once", "--listen", "127.0.0.1:9" }, "takes no --listen" },
	{ "exporter stray argument", { "exporter", "now" }, "unexpected argument 'now'" },
};

TEST(test_cli_isn_bad_inputs_exit_2_with_one_line)
{
	for (size_t i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		struct cli_result res;
		char *nl;

		if (!ASSERT_TRUE(run_cli(&res, bad_inputs[i].args), bad_inputs[i].desc))
			return;
		ASSERT_EQ(res.status, 2, bad_inputs[i].desc);
		ASSERT_STREQ(res.out, "", bad_inputs[i].desc);
		nl = strchr(res.err, '\n');
		if (!nl || nl[1] != '\0' || strncmp(res.err, "isnguard: ", 10))
			FAIL("%s: stderr is not one 'isnguard: ...' line: \"%s\"", bad_inputs[i].desc, res.err);
		if (!strstr(res.err, bad_inputs[i].err_contains))
			FAIL("%s: stderr \"%s\" lacks \"%s\"", bad_inputs[i].desc, res.err,
			     bad_inputs[i].err_contains);
	}
}

/* Runtime failures: exit 1, one line naming what failed, and nothing changed. */
TEST(test_cli_attach_detach_of_missing_interface_exit_1)
{
	const char *const cmds[][3] = {
		{ "attach", "isng-no-such0" }, { "detach", "isng-no-such0" },
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct cli_result res;

		if (!ASSERT_TRUE(run_cli(&res, cmds[i]), "run isnguard"))
			return;
		ASSERT_EQ(res.status, 1, cmds[i][0]);
		ASSERT_TRUE(strstr(res.err, "isng-no-such0: no such interface") &&
			    strchr(res.err, '\n') == res.err + strlen(res.err) - 1,
			    "one line: no such interface");
	}
}

/* Under --json an error is one JSON object on stdout, with the same exit code as without. */
TEST(test_cli_errors_under_json_are_json_with_the_same_exit_code)
{
	static const struct {
		const char *args[5];
		int status;
		const char *out;
	} cases[] = {
		{ { "attach", "isng-no-such0", "--json" }, 1,
		  "{\"error\":\"attach isng-no-such0: no such interface\"}\n" },
		{ { "detach", "--json", "isng-no-such0" }, 1,
		  "{\"error\":\"detach isng-no-such0: no such interface\"}\n" },
		{ { "attach", "--bogus", "--json" }, 2,
		  "{\"error\":\"attach: unknown option --bogus\"}\n" },
		{ { "synproxy", "80,x", "--json" }, 2,
		  "{\"error\":\"synproxy: bad port list '80,x': a port is 1-65535, a range LOW-HIGH\"}\n" },
		{ { "mode", "sha1", "--json" }, 2,
		  "{\"error\":\"mode: unknown hash 'sha1': use siphash, md5 or none\"}\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cli_result res;

		if (!ASSERT_TRUE(run_cli(&res, cases[i].args), "run isnguard"))
			return;
		ASSERT_EQ(res.status, cases[i].status, cases[i].args[0]);
		ASSERT_STREQ(res.out, cases[i].out, cases[i].args[0]);
		ASSERT_STREQ(res.err, "", "nothing on stderr");
	}
}

TEST(test_cli_help_on_every_command)
{
	const char *const cmds[][3] = {
		{ "--help" }, { "help" }, { "isn", "--help" }, { "attach", "--help" },
		{ "detach", "--help" }, { "status", "--help" }, { "stats", "--help" },
		{ "flows", "--help" }, { "mode", "--help" }, { "key", "--help" },
		{ "synproxy", "--help" }, { "apply", "--help" }, { "config", "--help" },
		{ "purge", "--help" }, { "version", "--help" }, { "exporter", "--help" },
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct cli_result res;

		if (!ASSERT_TRUE(run_cli(&res, cmds[i]), "run isnguard"))
			return;
		ASSERT_EQ(res.status, 0, cmds[i][0]);
		ASSERT_TRUE(strstr(res.out, "Usage: isnguard"), "usage printed");
	}
}

TEST(test_cli_version_json_is_one_object_and_dash_V_prints_it)
{
	const char *const json_args[] = { "version", "--json", NULL };
	const char *const short_args[] = { "-V", NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(run_cli(&res, json_args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "version --json: exit status");
	ASSERT_TRUE(!strncmp(res.out, "{\"name\":\"isnguard\",\"version\":\"", 30),
		    "version --json: starts with name and version");
	ASSERT_TRUE(strstr(res.out, "\"libbpf\":\"v") && strstr(res.out, "\"commit\":\""),
		    "version --json: libbpf and commit");
	ASSERT_TRUE(strlen(res.out) > 2 && !strcmp(res.out + strlen(res.out) - 2, "}\n"),
		    "version --json: one object, one line");
	if (!ASSERT_TRUE(run_cli(&res, short_args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "-V: exit status");
	ASSERT_TRUE(!strncmp(res.out, "isnguard ", 9) && strstr(res.out, "libxdp"), "-V: version line");
}

TEST(test_cli_help_command_prints_that_commands_usage)
{
	const char *const args[] = { "help", "attach", NULL };
	const char *const bad[] = { "help", "nosuch", NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(run_cli(&res, args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "exit status");
	ASSERT_TRUE(!strncmp(res.out, "Usage: isnguard attach", 22), "attach's usage");
	ASSERT_TRUE(strstr(res.out, "--synproxy-path") != NULL, "attach's options");
	if (!ASSERT_TRUE(run_cli(&res, bad), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 2, "unknown command: exit status");
}

static bool write_config(char *path, size_t len, const char *text)
{
	int fd;

	snprintf(path, len, "/tmp/isng-config-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return false;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

TEST(test_config_check_reports_each_error_with_its_line)
{
	const char *text = "[global]\n"
			   "hash = siphash\n"
			   "max-flows = lots\n"
			   "[interface eth0]\n"
			   "synproxy = 80\n"
			   "colour = blue\n"
			   "ingress = tc\n";
	char path[64], want[96];
	const char *args[] = { "config", "check", path, NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(write_config(path, sizeof(path), text), "config file"))
		return;
	if (ASSERT_TRUE(run_cli(&res, args), "run isnguard")) {
		ASSERT_EQ(res.status, 2, "exit status");
		ASSERT_STREQ(res.out, "", "stdout");
		for (int line = 3; line <= 7; line++) {
			snprintf(want, sizeof(want), "isnguard: %s:%d: ", path, line);
			/* 3: bad value; 5: a global key in [interface]; 6: unknown key */
			ASSERT_EQ(strstr(res.err, want) != NULL, line == 3 || line == 5 || line == 6,
				  want);
		}
	}
	unlink(path);
}

/* [exporter]'s keys are the exporter's options: listen, checked as --listen is. */
TEST(test_config_check_reads_the_exporter_section)
{
	const char *text = "[exporter]\n"
			   "listen = 127.0.0.1:10946\n"
			   "colour = blue\n"
			   "listen = nowhere\n"
			   "listen = [::1]:10946\n"
			   "[exporters]\n";
	char path[64], want[96];
	const char *args[] = { "config", "check", path, NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(write_config(path, sizeof(path), text), "config file"))
		return;
	if (ASSERT_TRUE(run_cli(&res, args), "run isnguard")) {
		ASSERT_EQ(res.status, 2, "exit status");
		for (int line = 2; line <= 6; line++) {
			snprintf(want, sizeof(want), "isnguard: %s:%d: ", path, line);
			/* 3: unknown key; 4: no address; 6: unknown section */
			ASSERT_EQ(strstr(res.err, want) != NULL, line == 3 || line == 4 || line == 6,
				  want);
		}
	}
	unlink(path);
}

/* Without --listen the exporter serves on the config file's [exporter] listen. */
TEST(test_exporter_listens_where_the_config_file_says)
{
	char path[64], text[96], want[96];
	const char *args[] = { "exporter", NULL };
	struct cli_result res;
	int port = 20000 + getpid() % 10000;

	snprintf(text, sizeof(text), "[exporter]\nlisten = 127.0.0.1:%d\n", port);
	if (!ASSERT_TRUE(write_config(path, sizeof(path), text), "config file"))
		return;
	setenv("ISNGUARD_CONFIG", path, 1);
	if (ASSERT_TRUE(run_cli_stopped_after(&res, args, 300), "run isnguard")) {
		snprintf(want, sizeof(want), "isnguard: exporter: serving http://127.0.0.1:%d/metrics\n",
			 port);
		ASSERT_EQ(res.status, 0, "exit status after SIGTERM");
		ASSERT_STREQ(res.err, want, "stderr");
	}
	unsetenv("ISNGUARD_CONFIG");
	unlink(path);
}

TEST(test_config_example_passes_config_check)
{
	const char *example_args[] = { "config", "example", NULL };
	char path[64], want[96];
	const char *args[] = { "config", "check", path, NULL };
	struct cli_result res;

	if (!ASSERT_TRUE(run_cli(&res, example_args), "run isnguard"))
		return;
	ASSERT_EQ(res.status, 0, "config example: exit status");
	if (!ASSERT_TRUE(write_config(path, sizeof(path), res.out), "config file"))
		return;
	if (ASSERT_TRUE(run_cli(&res, args), "run isnguard")) {
		snprintf(want, sizeof(want), "%s: ok, 0 interfaces\n", path);
		ASSERT_EQ(res.status, 0, "config check: exit status");
		ASSERT_STREQ(res.out, want, "config check: stdout");
		ASSERT_STREQ(res.err, "", "config check: stderr");
	}
	unlink(path);
}
