#!/usr/bin/env bash
# Builds the memif-agent image (docker/Dockerfile) without any registry:
# static binaries first, then `docker build` of a FROM scratch image.
#
# Engine: DOCKER_HOST when set; otherwise a private dockerd started under a
# temporary directory (scripts/dockerd.sh) and stopped afterwards. Either way
# the image is also saved as a tarball for `docker load` or `ctr image import`.
#
# The image is tagged with the checkout's version (scripts/version.sh: git
# describe --tags --always --dirty), which memif-agent --version also
# prints, and with dev, the tag the manifests in k8s/ name; IMAGE names it
# instead of both.
#
# Environment: IMAGE (default memif-agent:<version> and memif-agent:dev),
# OUT_DIR (default _out).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$("$root/scripts/version.sh")
ldflags="-s -w $("$root/scripts/version.sh" ldflags)"
images=("${IMAGE:-memif-agent:$version}")
[ -n "${IMAGE:-}" ] || [ "$version" = dev ] || images+=(memif-agent:dev)
image=${images[0]}
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
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$ctx/bin/$b" "./cmd/$b")
done
echo "image: built ${binaries[*]} (static)"

if [ -z "${DOCKER_HOST:-}" ]; then
	engine_dir=$(mktemp -d "${TMPDIR:-/tmp}/memif-image-dockerd.XXXXXX")
	DOCKER_HOST=$("$root/scripts/dockerd.sh" start "$engine_dir")
	export DOCKER_HOST
	echo "image: started a private dockerd at $DOCKER_HOST"
fi

tags=()
for name in "${images[@]}"; do tags+=(-t "$name"); done
if ! docker build -f "$root/docker/Dockerfile" "${tags[@]}" --label "org.opencontainers.image.version=$version" \
	--label "org.opencontainers.image.revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" \
	"$ctx" >"$out/image-build.log" 2>&1; then
	echo "image: docker build failed; $out/image-build.log says:" >&2
	tail -n 20 "$out/image-build.log" >&2
	exit 1
fi
docker save -o "$out/memif-agent-image.tar" "${images[@]}"
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "image: ${images[*]} ($((size / 1024 / 1024)) MiB) saved to $out/memif-agent-image.tar"
