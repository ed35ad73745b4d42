#!/usr/bin/env bash
# Installs the Debian packages isnguard's build, tests and demo need, when missing.
# `deps.sh kernels` installs instead the extra ones of make test-kernels: Debian's
# own kernel and what boots it under qemu (scripts/test-kernels.sh);
# `deps.sh clang19` a newer clang, for the datapath built with CLANG=clang-19.
set -euo pipefail

packages=(
	make gcc libc6-dev pkg-config	# userspace build
	clang llvm			# BPF objects
	bpftool				# skeletons, vmlinux.h, map inspection
	libbpf-dev libelf-dev zlib1g-dev	# libbpf and what it links
	libxdp-dev xdp-tools		# XDP attach through the dispatcher
	libssl-dev			# OpenSSL reference MD5/SipHash
	libinih-dev			# the config file (user/config.c)
	libmicrohttpd-dev libsystemd-dev	# the exporter's HTTP server, its readiness to systemd
	prometheus			# promtool checks /metrics and the rules; a real server scrapes in the e2e tests
	systemd				# systemd-analyze verify of the unit in the end-to-end tests
	iproute2 tcpdump nftables	# namespaces, veth, captures, packet loss in end-to-end tests
	util-linux openssl ethtool	# nsenter; openssl cross-checks test streams; ethtool forces software checksums
	nginx wrk apache2-utils curl	# real server and clients: end-to-end tests, the connection-rate bench
	jq man-db			# JSON in the end-to-end tests and the doc test; the manual rendered
)
kernels_packages=(
	linux-image-cloud-amd64		# Debian 12's kernel (6.1) and its modules
	qemu-system-x86			# boots it (TCG)
	busybox-static cpio		# the guest's initramfs
)
clang19_packages=(
	clang-19 llvm-19		# the other compiler CI builds the datapath with
)
hint="sudo make deps"
case ${1:-} in
"") ;;
kernels) packages=("${kernels_packages[@]}") hint="sudo scripts/deps.sh kernels" ;;
clang19) packages=("${clang19_packages[@]}") hint="sudo scripts/deps.sh clang19" ;;
*) echo "usage: $0 [kernels|clang19]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null; then
	echo "deps: not a Debian system; install the equivalents of: ${packages[*]}" >&2
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run '$hint')" >&2
	exit 1
fi
echo "  DEPS     installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
