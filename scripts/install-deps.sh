#!/usr/bin/env bash
# Installs the Debian packages that the build, the linters, the tests and
# the demo use for real: make and git for the Makefile, a C toolchain for the
# race detector (go test -race needs cgo), protoc with the well-known protos
# for scripts/generate.sh, a Docker engine, DPDK's testpmd with its memif
# driver, the libraries and xz that the prebuilt VPP runtime
# (scripts/vpp.sh) needs, and for the cluster suites and the demo (a real
# node) runc, the CNI plugins, Debian's containerd 1.6 as the old runtime
# (containerd 2.x, Kubernetes and etcd come from scripts/peers.sh),
# nsenter/unshare and ip.
#
# Each package is checked by a file it ships, not by a command on PATH: a
# docker client elsewhere on PATH is no engine, and protoc without
# libprotobuf-dev cannot read google/protobuf/timestamp.proto. Does nothing
# when every file is there.
set -euo pipefail

# file (a glob is fine) and the Debian 12 package that ships it.
required=(
	/usr/bin/make make
	/usr/bin/git git
	/usr/bin/gcc gcc
	/usr/include/stdlib.h libc6-dev
	/usr/bin/setsid util-linux
	/usr/bin/protoc protobuf-compiler
	/usr/include/google/protobuf/timestamp.proto libprotobuf-dev
	/usr/sbin/dockerd docker.io
	/usr/bin/docker docker.io
	/usr/bin/containerd containerd
	/usr/sbin/runc runc
	/usr/lib/cni/bridge containernetworking-plugins
	/usr/lib/cni/host-local containernetworking-plugins
	/usr/bin/nsenter util-linux
	/usr/bin/unshare util-linux
	/bin/ip iproute2
	/usr/bin/dpdk-testpmd dpdk-dev
	'/usr/lib/*/dpdk/pmds-*/librte_net_memif.so*' librte-net-memif23
	'/usr/lib/*/libunwind.so.8' libunwind8
	'/usr/lib/*/libssl.so.3' libssl3
	/usr/bin/xz xz-utils
)

need=()
missing=()
for ((i = 0; i < ${#required[@]}; i += 2)); do
	file=${required[i]} pkg=${required[i + 1]}
	# shellcheck disable=SC2086 # the glob must expand
	if ! compgen -G $file >/dev/null; then
		missing+=("$file")
		[[ " ${need[*]} " == *" $pkg "* ]] || need+=("$pkg")
	fi
done

if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
echo "install-deps: missing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install ${need[*]}: run as root (sudo scripts/install-deps.sh)" >&2
	exit 1
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

for ((i = 0; i < ${#required[@]}; i += 2)); do
	# shellcheck disable=SC2086
	if ! compgen -G ${required[i]} >/dev/null; then
		echo "install-deps: ${required[i + 1]} is installed but ${required[i]} is still missing" >&2
		exit 1
	fi
done
