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

int bpffs_ensure(void)
{
	if (is_bpffs(BPFFS_ROOT))
		return 0;
	if (mkdir(BPFFS_ROOT, 0700) && errno != EEXIST)
		return -errno;
	if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
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
	if (err == -ENOENT)
		cli_error("%s: not attached (no %s)", cmd, path);
	else
		cli_error("%s: open %s: %s", cmd, path, strerror(-err));
}
