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

const char *pin_dir(void)
{
	const char *env = getenv("ISNGUARD_PIN_DIR");

	return env && *env ? env : ISN_PIN_DIR;
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
	if (is_bpffs(BPFFS_ROOT))
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
