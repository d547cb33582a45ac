#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo drive for real:
# a Docker engine, DPDK's testpmd with its memif driver, protoc, and a C
# toolchain for the race detector (go test -race needs cgo).
# Does nothing when they are already there.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -e /usr/include/stdlib.h ] || need+=(libc6-dev)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v dpdk-testpmd >/dev/null 2>&1 || need+=(dpdk-dev)
ls /usr/lib/*/dpdk/pmds-*/librte_net_memif.so* >/dev/null 2>&1 || need+=(librte-net-memif23)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)

if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install: ${need[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
