#!/usr/bin/env bash
# Builds the memif-agent image (docker/Dockerfile) without any registry:
# static binaries first, then `docker build` of a FROM scratch image.
#
# Engine: DOCKER_HOST when set; otherwise a private dockerd started under a
# temporary directory (scripts/dockerd.sh) and stopped afterwards. Either way
# the image is also saved as a tarball for `docker load` or `ctr image import`.
#
# Environment: IMAGE (default memif-agent:dev), OUT_DIR (default _out).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
image=${IMAGE:-memif-agent:dev}
out=$(realpath -m "${OUT_DIR:-$root/_out}")
binaries=(memif-agent memifctl)

ctx=$(mktemp -d "${TMPDIR:-/tmp}/memif-image.XXXXXX")
engine_dir=""
cleanup() {
	if [ -n "$engine_dir" ]; then
		"$root/scripts/dockerd.sh" stop "$engine_dir" || true
		rm -rf "$engine_dir"
	fi
	rm -rf "$ctx"
}
trap cleanup EXIT

mkdir -p "$ctx/bin" "$out"
for b in "${binaries[@]}"; do
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/bin/$b" "./cmd/$b")
done
echo "image: built ${binaries[*]} (static)"

if [ -z "${DOCKER_HOST:-}" ]; then
	engine_dir=$(mktemp -d "${TMPDIR:-/tmp}/memif-image-dockerd.XXXXXX")
	DOCKER_HOST=$("$root/scripts/dockerd.sh" start "$engine_dir")
	export DOCKER_HOST
	echo "image: started a private dockerd at $DOCKER_HOST"
fi

if ! docker build -f "$root/docker/Dockerfile" -t "$image" "$ctx" >"$out/image-build.log" 2>&1; then
	echo "image: docker build failed; $out/image-build.log says:" >&2
	tail -n 20 "$out/image-build.log" >&2
	exit 1
fi
docker save -o "$out/memif-agent-image.tar" "$image"
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "image: $image ($((size / 1024 / 1024)) MiB) saved to $out/memif-agent-image.tar"
