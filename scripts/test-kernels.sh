#!/usr/bin/env bash
# make test-kernels: boots the Debian cloud kernel installed on this machine
# (linux-image-cloud-amd64, Debian 12's 6.1) under qemu and runs the unit suite,
# the verifier budget table, the CLI on lo (tests/kernel_cli.sh) and a core of
# the end-to-end suite with real TCP between two namespaces (tests/kernel_e2e.sh:
# keyed ISNs, the SYN proxy, a SYN flood) there, so we know whether isnguard
# loads, attaches and works on the kernel Debian ships, whatever kernel the host
# itself runs. The guest is a busybox initramfs holding the build's binaries,
# iproute2's ip, the libraries they link and the kernel modules listed below;
# all it prints is shown. The last line is the total, "N passed, N failed": the
# runner's and the guest scripts' own counts, the budget table as one check,
# and a guest that did not finish as one failure.
#
# KERNELS: versions to boot (default the newest installed; "all" boots each).
# TEST_ARGS filters unit tests as in make test. TIMEOUT: seconds per guest.
# KERNEL_ARGS: appended to the kernel command line (loglevel=7 shows the boot).
set -euo pipefail
build=${1:-build}
here=$(dirname "$(readlink -f "$0")")
timeout_s=${TIMEOUT:-420}
prefix=isnguard-kernels

# Modules Debian builds as such that the guest needs: the unit suite tun (a
# tap device for the martian-source test's ifindex; the rest runs on
# BPF_PROG_TEST_RUN with no device), the CLI on lo clsact and its BPF filters
# (a real system loads them on demand; the initramfs has no modprobe setup),
# the bridge the attach makes its tick device of (bpf/resend.h), and the veth
# pair of the end-to-end checks.
modules=(tun sch_ingress cls_bpf bridge veth)

die() { echo "test-kernels: $*" >&2; exit 1; }

[ -x "$build/test_runner" ] || die "no $build/test_runner (run 'make test-kernels')"
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64 (run 'sudo scripts/deps.sh kernels')"
command -v cpio >/dev/null || die "no cpio (run 'sudo scripts/deps.sh kernels')"
busybox=$(command -v busybox || true)
# The initramfs has no libc of its own for busybox: it must be the static one.
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	die "no static busybox: install the package busybox-static"
fi

mapfile -t installed < <(find /boot -maxdepth 1 -name 'vmlinuz-*-cloud-amd64' | sed 's|^/boot/vmlinuz-||' | sort -V)
[ ${#installed[@]} -gt 0 ] || die "no Debian cloud kernel in /boot: install the package linux-image-cloud-amd64"
case ${KERNELS:-} in
"") kernels=("${installed[-1]}") ;;
all) kernels=("${installed[@]}") ;;
*) read -ra kernels <<<"$KERNELS" ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The budget table (make check-verifier) and the harness's self-test, beside the runner.
budget=$build/verifier_budget
[ -x "$budget" ] || die "no $budget (run 'make test-kernels')"
[ -x "$build/harness_selftest" ] || die "no $build/harness_selftest (run 'make test-kernels')"
# The end-to-end checks' traffic tools, and iproute2's ip for namespaces,
# veths and an XDP program (busybox's ip has none of them).
for f in "$build/tcp_xfer" "$build/syn_flood"; do
	[ -x "$f" ] || die "no $f (run 'make test-kernels')"
done
iproute2_ip=$(command -v ip || true)
if [ -z "$iproute2_ip" ] || ! "$iproute2_ip" -V 2>&1 | grep -q iproute2; then
	die "no iproute2 ip: install the package iproute2"
fi
binaries=("$build/test_runner" "$build/harness_selftest" "$build/isnguard" "$budget"
	"$build/tcp_xfer" "$build/syn_flood")

# Copies a file to the same path under the root, following symlinks.
put() { mkdir -p "$root$(dirname "$2")" && cp -L "$1" "$root$2"; }

# Kernel modules with what they depend on, dependencies first (modules.dep).
module_closure() {
	local dir=$1 name=$2 line dep
	line=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$dir/modules.dep") ||
		{ grep -qE "(^|/)$name\.ko" "$dir/modules.builtin" && return; die "module $name not in $dir"; }
	for dep in ${line#*:}; do
		module_closure "$dir" "$(basename "${dep%%.ko*}")"
	done
	printf '%s\n' "${line%%:*}"
}

# The guest's /init: mounts, modules, each command between markers the host reads, poweroff.
write_init() {
	cat >"$root/init" <<-EOF
	#!/bin/sh
	export PATH=/sbin:/bin:/usr/sbin:/usr/bin
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	mount -t bpf bpf /sys/fs/bpf
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t tmpfs tmpfs /tmp
	mount -t tmpfs tmpfs /run
	echo "$prefix: kernel \$(uname -r), init at \$(cut -d' ' -f1 /proc/uptime) s"
	for m in \$(cat /modules.load); do insmod "\$m" || echo "$prefix: insmod \$m failed"; done
	ip link set lo up
	dmesg -c >/tmp/boot.log	# the boot's messages; KERNEL_ARGS=loglevel=7 shows them
	# NAME CMD...: the command's output, then its exit code and the kernel's messages meanwhile.
	run() {
		name=\$1; shift
		start=\$(cut -d' ' -f1 /proc/uptime)
		echo "$prefix: begin \$name: \$*"
		"\$@"
		rc=\$?
		echo "$prefix: end \$name exit \$rc after \$(awk -v s=\$start '{ print \$1 - s }' /proc/uptime) s"
		dmesg -c | sed 's/^/kernel: /'
	}
	cd /isnguard
	run test_runner ./test_runner ${TEST_ARGS:-}
	run verifier_budget ./$(basename "$budget") isnguard.bpf.o
	run kernel_cli sh ./kernel_cli.sh
	run kernel_e2e sh ./kernel_e2e.sh
	echo "$prefix: done"
	poweroff -f
	EOF
	chmod 0755 "$root/init"
}

build_initramfs() {
	local version=$1 moddir=/lib/modules/$1 f lib m load
	root=$work/root-$version
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,isnguard,modules}
	cp "$busybox" "$root/bin/busybox"
	while read -r f; do
		[ -e "$root/$f" ] || ln -s /bin/busybox "$root/$f"
	done < <("$busybox" --list-full)
	for f in "${binaries[@]}" "$build"/*.bpf.o "$here/../tests/kernel_cli.sh" \
		"$here/../tests/kernel_e2e.sh"; do
		cp "$f" "$root/isnguard/"
	done
	# Beside them: busybox's sh runs its own applet for a bare "ip".
	cp "$iproute2_ip" "$root/isnguard/ip"
	# Every library ldd names, and the dynamic loader, at the paths it names.
	for lib in $(ldd "${binaries[@]}" "$iproute2_ip" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*[^:]$/ { print $1 }' | sort -u); do
		put "$lib" "$lib"
	done
	# libxdp's dispatcher program, which it loads from its object path on attach.
	for f in /usr/lib/*/bpf/xdp-dispatcher.o /usr/lib/bpf/xdp-dispatcher.o; do
		[ -e "$f" ] && put "$f" "$f"
	done
	: >"$root/modules.load"
	if [ ${#modules[@]} -gt 0 ]; then
		[ -f "$moddir/modules.dep" ] || die "no $moddir/modules.dep: install linux-image-$version"
		load=$(for f in "${modules[@]}"; do module_closure "$moddir" "$f"; done | awk '!seen[$0]++')
		for m in $load; do
			f=/modules/$(basename "${m%.ko*}").ko
			case $m in
			*.ko) cp "$moddir/$m" "$root$f" ;;
			*.ko.xz) xz -dc "$moddir/$m" >"$root$f" ;;
			*.ko.zst) zstd -qdc "$moddir/$m" >"$root$f" ;;
			*) die "module $m: unknown compression" ;;
			esac
			echo "$f" >>"$root/modules.load"
		done
	fi
	write_init
	# Uncompressed: the kernel unpacks it as fast as it reads it, and building it takes no time.
	(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$work/initramfs-$version.cpio"
}

# shellcheck source=scripts/results.sh
. "$here/results.sh"

# VERSION NAME WHAT: adds the closing line of the guest's section NAME.
count_section() {
	sed -n "/^$prefix: begin $2:/,/^$prefix: end $2 /p" "$log" >"$work/$2.log"
	results_add "$work/$2.log" "test-kernels: $1: $3"
}

# One guest: boots it, shows its output, counts what it reported.
run_kernel() {
	local version=$1 kernel=/boot/vmlinuz-$1 rc=0 begin end line name
	log=$work/guest-$1.log
	[ -e "$kernel" ] || die "no $kernel (installed: ${installed[*]})"
	[ -r "$kernel" ] || die "cannot read $kernel (run as root)"
	build_initramfs "$version"
	echo "== Debian kernel $version (qemu, TCG; at most $timeout_s s)"
	begin=$(date +%s)
	timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 \
		-display none -monitor none -serial stdio -no-reboot \
		-kernel "$kernel" -initrd "$work/initramfs-$version.cpio" \
		-append "console=ttyS0 panic=-1 quiet ${KERNEL_ARGS:-}" </dev/null |
		tr -d '\r' | tee "$log" || rc=${PIPESTATUS[0]}
	end=$(date +%s)
	echo "== Debian kernel $version: qemu exited $rc after $((end - begin)) s"

	if ! grep -q "^$prefix: done$" "$log"; then
		[ "$rc" -eq 124 ] && echo "test-kernels: $version: the guest did not finish in $timeout_s s" >&2 ||
			echo "test-kernels: $version: the guest stopped before its end marker" >&2
		failed=$((failed + 1))
		status=1
	fi
	for name in test_runner verifier_budget kernel_cli kernel_e2e; do
		line=$(grep -E "^$prefix: end $name exit [0-9]+" "$log" | tail -n 1 || true)
		if [ -z "$line" ]; then
			echo "test-kernels: $version: $name did not finish" >&2
			status=1
		elif [ "$(awk '{ print $5 }' <<<"$line")" != 0 ]; then
			echo "test-kernels: $version: $name ${line#*end "$name" }" >&2
			status=1
		fi
	done
	count_section "$version" test_runner "the unit suite"
	count_section "$version" kernel_cli "the CLI checks (tests/kernel_cli.sh)"
	count_section "$version" kernel_e2e "the end-to-end checks (tests/kernel_e2e.sh)"
	if grep -qE "^$prefix: end verifier_budget exit 0( |$)" "$log"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
}

for version in "${kernels[@]}"; do
	run_kernel "$version"
done

results_end
