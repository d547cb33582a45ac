#!/usr/bin/env bash
# Runs CI as it runs on a fresh machine: `CI=true bash .ci/run` in a fresh
# clone, inside a bare Debian 12 root that has only what such a machine comes
# with (Go in /usr/local/go and the machine's CA bundle) and whatever
# scripts/install-deps.sh installs there. It shows that the install steps are
# complete without removing packages from the machine it runs on.
#
#   scripts/fresh-machine.sh DIR [REF [COMMAND]]
#
# DIR keeps a pristine root made by debootstrap (DIR/base, made once and
# reused) and a copy of it for this run (DIR/run, made anew each run). REF
# (default main) is the commit of this repository to clone; shared/ beside
# the repository, when there, is copied beside the clone as CI has it.
# COMMAND (default: CI=true bash .ci/run) runs in the clone, for a quicker
# check such as scripts/install-deps.sh alone. The root gets its own mount
# and PID namespaces and becomes their / (pivot_root): /proc, /sys (with
# the cgroup file system that dockerd needs) and /dev are mounted into it,
# and every process left in it ends with the run. The log is DIR/ci.log
# (DIR/again.log with AGAIN=1); the exit code is COMMAND's. Needs root,
# debootstrap and the Debian mirror of /etc/apt/sources.list.d/debian.sources
# (or MIRROR). Heavy: run it under nice on a shared machine.
#
# With AGAIN=1 the root of the last run (DIR/run) is kept as that run left
# it, installed packages and built caches included, and only the clone is
# made anew: the second command on the same fresh machine, for example
# `AGAIN=1 scripts/fresh-machine.sh DIR main "make demo"` after a CI run.
set -euo pipefail

[ $# -ge 1 ] && [ $# -le 3 ] || { echo "usage: $0 DIR [REF [COMMAND]]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: needs root (debootstrap, namespaces, mounts)" >&2; exit 1; }
dir=$(realpath -m "$1")
ref=${2:-main}
command=${3:-CI=true bash .ci/run}
repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
repo=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir)/..
repo=$(realpath "$repo")
base=$dir/base
run=$dir/run
log=$dir/ci.log
[ "${AGAIN:-}" = 1 ] && log=$dir/again.log
mkdir -p "$dir"

if [ ! -e "$base/.debootstrap-complete" ]; then
	command -v debootstrap >/dev/null || {
		echo "fresh-machine: debootstrap not found: apt-get install debootstrap" >&2
		exit 1
	}
	mirror=${MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}
	mirror=${mirror:-http://deb.debian.org/debian}
	rm -rf "$base"
	echo "fresh-machine: debootstrap bookworm (minbase) from $mirror into $base"
	debootstrap --variant=minbase bookworm "$base" "$mirror" >"$dir/debootstrap.log" 2>&1 || {
		echo "fresh-machine: debootstrap failed; see $dir/debootstrap.log" >&2
		exit 1
	}
	touch "$base/.debootstrap-complete"
fi

if [ "${AGAIN:-}" = 1 ] && [ -d "$run/work" ]; then
	echo "fresh-machine: again in the root of the last run, $run"
	rm -rf "$run/work"
else
	echo "fresh-machine: copying the pristine root to $run"
	rm -rf "$run"
	cp -a "$base" "$run"
	# What a fresh machine of this kind comes with besides Debian: Go, the
	# machine's trust store, its resolver and apt sources.
	cp -a /usr/local/go "$run/usr/local/go"
	mkdir -p "$run/etc/ssl"
	cp /etc/ssl/certs/ca-certificates.crt "$run/etc/ssl/ca-certificates.crt"
	cp /etc/resolv.conf "$run/etc/resolv.conf"
	if [ -e /etc/apt/sources.list.d/debian.sources ]; then
		cp /etc/apt/sources.list.d/debian.sources "$run/etc/apt/sources.list.d/"
		rm -f "$run/etc/apt/sources.list"
	fi
fi
mkdir -p "$run/work"
git clone --quiet --no-hardlinks "$repo" "$run/work/main"
git -C "$run/work/main" checkout --quiet --detach "$ref"
if [ -d "$repo/../shared" ]; then
	cp -a "$repo/../shared" "$run/work/shared"
fi
echo "fresh-machine: $(git -C "$run/work/main" log --oneline -1) in $run/work/main"

start=$(date +%s)
set +e
unshare --mount --pid --fork --propagation private -- bash -c '
	set -e
	run=$1
	# The root must be a mount point, as a machine'"'"'s / is: dockerd
	# remounts / when it unpacks an image, and pivot_root needs one.
	mount --bind "$run" "$run"
	mount -t proc proc "$run/proc"
	mount --rbind /sys "$run/sys"
	mount --rbind /dev "$run/dev"
	mount -t tmpfs -o mode=0755 tmpfs "$run/run"
	# pivot_root, not chroot: a process that joins a mount namespace
	# (runc exec, nsenter) lands on the namespace'"'"'s root, which a chroot
	# leaves at the host'"'"'s /; a container'"'"'s files were then not found.
	cd "$run"
	mkdir -p .host-root
	pivot_root . .host-root
	umount -l /.host-root
	rmdir /.host-root
	exec /usr/bin/env -i HOME=/root TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		SSL_CERT_FILE=/etc/ssl/ca-certificates.crt \
		bash -c "cd /work/main && $2"
' fresh-machine "$run" "$command" >"$log" 2>&1 </dev/null
status=$?
set -e
elapsed=$(($(date +%s) - start))
echo "fresh-machine: $command exited $status after ${elapsed}s; log in $log"
tail -n 5 "$log"
exit "$status"
