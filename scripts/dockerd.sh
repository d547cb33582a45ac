#!/usr/bin/env bash
# Starts or stops a private Docker engine whose state lives under DIR only:
# its own data root, exec root, unix socket and pid file, no bridge and no
# iptables rules, so the host's networking and any other engine are left alone.
#
#   scripts/dockerd.sh start DIR   prints the DOCKER_HOST to use once it answers
#   scripts/dockerd.sh stop DIR    stops it by its pid file and waits for it
set -euo pipefail

usage() {
	echo "usage: $0 start|stop DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$(realpath -m "$2")
sock="$dir/docker.sock"
pidfile="$dir/dockerd.pid"
log="$dir/dockerd.log"

start() {
	command -v dockerd >/dev/null || { echo "dockerd.sh: dockerd not found; run scripts/install-deps.sh" >&2; exit 1; }
	[ "$(id -u)" -eq 0 ] || { echo "dockerd.sh: dockerd needs root" >&2; exit 1; }
	mkdir -p "$dir/data" "$dir/exec"
	if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		echo "dockerd.sh: a dockerd already runs for $dir (pid $(cat "$pidfile"))" >&2
		exit 1
	fi
	# setsid: the engine must not get the caller's Ctrl-C before the caller
	# has stopped its containers; the caller stops it with "stop".
	setsid dockerd \
		--data-root "$dir/data" \
		--exec-root "$dir/exec" \
		-H "unix://$sock" \
		--pidfile "$pidfile" \
		--bridge=none --iptables=false --ip-masq=false \
		>"$log" 2>&1 </dev/null &
	local pid=$!
	for _ in $(seq 1 300); do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "dockerd.sh: dockerd exited at start; last lines of $log:" >&2
			tail -n 20 "$log" >&2
			exit 1
		fi
		if docker -H "unix://$sock" version >/dev/null 2>&1; then
			echo "unix://$sock"
			return 0
		fi
		sleep 0.1
	done
	echo "dockerd.sh: dockerd did not answer on $sock within 30s; see $log" >&2
	kill "$pid" 2>/dev/null || true
	exit 1
}

stop() {
	[ -f "$pidfile" ] || return 0
	local pid
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for _ in $(seq 1 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "dockerd.sh: dockerd (pid $pid) ignored SIGTERM for 30s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidfile"
	# Layers a killed engine leaves mounted would keep DIR from being removed.
	awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) usage ;;
esac
