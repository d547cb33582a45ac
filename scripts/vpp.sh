#!/usr/bin/env bash
# Makes a VPP available and prints its prefix (the directory holding
# bin/vpp, bin/vppctl, the memif plugin and share/vpp/api/*.api.json).
# Tests, make demo and CI run VPP from that prefix.
#
#   scripts/vpp.sh            print the prefix, extracting or building first
#
# Where the VPP comes from, first match wins:
#   1. VPP_PREFIX, an installed VPP's prefix (a node's own VPP);
#   2. the cache, keyed by VPP commit and the tarball's checksum:
#      $MEMIF_AGENT_CACHE/vpp/<commit>-<sha256 prefix> (default
#      ~/.cache/memif-agent), filled once from
#   3. the prebuilt relocatable runtime tarball in VPP_DIST (default
#      shared/vpp beside the clone), or
#   4. the source tarball there, built with its build.sh and the plugins the
#      runtime tarball carries (about 45 min);
#   5. a `vpp` on PATH (a distribution package: prefix /usr).
# The runtime needs Debian's libunwind8 and libssl3 (scripts/install-deps.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shared/ lies beside the clone; a git worktree elsewhere finds it beside
# the main checkout.
dist=${VPP_DIST:-$root/../shared/vpp}
if [ -z "${VPP_DIST:-}" ] && [ ! -d "$dist" ]; then
	common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
	[ -n "$common" ] && dist=$(dirname "$common")/../shared/vpp
fi
cache=${MEMIF_AGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memif-agent}/vpp

usable() { [ -x "$1/bin/vpp" ] && [ -x "$1/bin/vppctl" ]; }

if [ -n "${VPP_PREFIX:-}" ]; then
	usable "$VPP_PREFIX" || { echo "vpp.sh: VPP_PREFIX=$VPP_PREFIX has no bin/vpp and bin/vppctl" >&2; exit 1; }
	echo "$VPP_PREFIX"
	exit 0
fi

# The tarballs are named vpp-[src-]<version>-g<commit>...; the commit and
# the tarball's checksum key the cache: a tarball rebuilt with other plugins
# keeps its name and commit, and a cache extracted from the older one lacks
# those plugins.
runtime=$(ls "$dist"/vpp-v*-amd64.tar.xz 2>/dev/null | head -n1 || true)
source=$(ls "$dist"/vpp-src-*.tar.xz 2>/dev/null | head -n1 || true)
tarball=${runtime:-$source}
if [ -n "$tarball" ]; then
	commit=$(basename "$tarball" | sed -n 's/.*-g\([0-9a-f]\{7,40\}\).*/\1/p')
	[ -n "$commit" ] || { echo "vpp.sh: cannot read the VPP commit from $tarball" >&2; exit 1; }
	sum=$(sha256sum "$tarball" | cut -c1-16)
	prefix=$cache/$commit-$sum
	if usable "$prefix"; then
		echo "$prefix"
		exit 0
	fi
	mkdir -p "$cache"
	# Concurrent callers (parallel test binaries) wait for one extraction.
	exec 9>"$cache/.lock"
	flock 9
	if ! usable "$prefix"; then
		partial=$(mktemp -d "$cache/.partial.XXXXXX")
		if [ -n "$runtime" ]; then
			echo "vpp.sh: extracting $runtime into $prefix" >&2
			tar -xJf "$runtime" -C "$partial"
		else
			echo "vpp.sh: building VPP from $source into $prefix (about 45 min)" >&2
			PLUGINS=memif,ping,af_packet,vxlan,acl bash "$dist/build.sh" "$partial" >&2
		fi
		rm -rf "$prefix"
		mv "$partial" "$prefix"
	fi
	echo "$prefix"
	exit 0
fi

if installed=$(command -v vpp 2>/dev/null); then
	prefix=$(dirname "$(dirname "$(readlink -f "$installed")")")
	usable "$prefix" && { echo "$prefix"; exit 0; }
fi

echo "vpp.sh: no VPP: set VPP_PREFIX to an installed VPP, put the VPP tarballs in $dist (VPP_DIST), or install VPP so that vpp is on PATH" >&2
exit 1
