// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "isnguard.h"
#include "pinned.h"

#define BPFFS_ROOT "/sys/fs/bpf"
/* Ancestors looked at for the mount namespace a command was started from. */
#define MAX_ANCESTORS 8

static bool is_bpffs(const char *path);

static int parent_of(int pid)
{
	char path[64], buf[512], *close_paren;
	int ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* pid (comm) state ppid ...: comm may hold spaces and parentheses */
	if (fgets(buf, sizeof(buf), f) && (close_paren = strrchr(buf, ')')))
		sscanf(close_paren + 1, " %*c %d", &ppid);
	fclose(f);
	return ppid;
}

static bool same_link(const char *a, const char *b)
{
	char ta[64], tb[64];
	ssize_t la = readlink(a, ta, sizeof(ta) - 1), lb = readlink(b, tb, sizeof(tb) - 1);

	return la > 0 && lb > 0 && la == lb && !memcmp(ta, tb, (size_t)la);
}

/*
 * Where the bpffs that holds the state is. `ip netns exec` runs each command
 * in a mount namespace of its own with a fresh /sys and no bpffs on it. The
 * bpffs where attach pinned the state is still there through the root of
 * the process that started the command (the shell, in the mount namespace
 * `ip netns exec` left). So every command reaches the same state whether it
 * runs under `ip netns exec` or `nsenter --net`; libxdp is pointed there too.
 */
const char *bpffs_root(void)
{
	static char found[64];
	static const char *root;
	int pid = getpid();

	if (root)
		return root;
	root = BPFFS_ROOT;
	if (is_bpffs(BPFFS_ROOT))
		return root;
	for (int i = 0; i < MAX_ANCESTORS && (pid = parent_of(pid)) > 1; i++) {
		char ns[64], dir[64];

		snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", pid);
		if (same_link("/proc/self/ns/mnt", ns))
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/root%s", pid, BPFFS_ROOT);
		if (!is_bpffs(dir))
			break;
		snprintf(found, sizeof(found), "%s", dir);
		root = found;
		setenv("LIBXDP_BPFFS", root, 0);
		break;
	}
	return root;
}

/* The state directory: $ISNGUARD_PIN_DIR or ISN_PIN_DIR, on the bpffs of bpffs_root(). */
const char *pin_dir(void)
{
	static char path[512];
	const char *env = getenv("ISNGUARD_PIN_DIR");
	const char *dir = env && *env ? env : ISN_PIN_DIR;
	const char *root = bpffs_root();

	if (strcmp(root, BPFFS_ROOT) && !strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1)) {
		snprintf(path, sizeof(path), "%s%s", root, dir + strlen(BPFFS_ROOT));
		return path;
	}
	return dir;
}

int pin_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", pin_dir(), name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* Set when this process had to mount the bpffs itself. */
static bool mounted_bpffs;

int bpffs_ensure(void)
{
	if (is_bpffs(bpffs_root()))
		return 0;
	if (mkdir(BPFFS_ROOT, 0700) && errno != EEXIST)
		return -errno;
	if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700"))
		return -errno;
	mounted_bpffs = true;
	return 0;
}

/* False only when this is provably the init mount namespace. */
static bool maybe_private_mount_ns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/mnt", &self) || stat("/proc/1/ns/mnt", &init))
		return true;
	return self.st_ino != init.st_ino;
}

/*
 * Whether the state directory sits on a bpffs this process mounted in a
 * private mount namespace, as under `ip netns exec`: it gives each command a
 * fresh /sys, and the pins in its bpffs go away with the command.
 */
bool pin_dir_is_private(void)
{
	if (strncmp(pin_dir(), BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1))
		return false;
	return mounted_bpffs && maybe_private_mount_ns();
}

int pinned_map_open(const char *name)
{
	/* The secret is only ever written: open it so this process cannot read it either. */
	LIBBPF_OPTS(bpf_obj_get_opts, opts,
		.file_flags = strcmp(name, ISN_MAP_KEY) ? 0 : BPF_F_WRONLY);
	char path[256];
	int err = pin_path(path, sizeof(path), name);
	int fd;

	if (err)
		return err;
	bpffs_ensure();
	fd = bpf_obj_get_opts(path, &opts);
	return fd < 0 ? -errno : fd;
}

bool pinned_state_exists(void)
{
	char path[256];

	bpffs_ensure();
	return pin_path(path, sizeof(path), ISN_MAP_FLOWS) == 0 && access(path, F_OK) == 0;
}

int require_root(const char *cmd)
{
	if (geteuid() == 0)
		return 0;
	cli_error("%s: needs root (CAP_BPF and CAP_NET_ADMIN)", cmd);
	return -EPERM;
}

void report_open_error(const char *cmd, const char *name, int err)
{
	char path[256];

	pin_path(path, sizeof(path), name);
	if (err == -ENOENT && pin_dir_is_private())
		cli_error("%s: not attached (no %s in the private bpffs of this mount namespace: "
			  "use 'nsenter --net=/run/netns/NAME' rather than 'ip netns exec')", cmd, path);
	else if (err == -ENOENT)
		cli_error("%s: not attached (no %s)", cmd, path);
	else
		cli_error("%s: open %s: %s", cmd, path, strerror(-err));
}
