#!/bin/sh
# Says which build this checkout makes (what memif-agent --version prints,
# package internal/version):
#
#   scripts/version.sh          the version: git describe --tags --always --dirty
#                               ("dev" outside a git checkout)
#   scripts/version.sh ldflags  the go build -ldflags that set the version and
#                               the commit (the Makefile's build, scripts/image.sh)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)

case "${1:-}" in
"") echo "$version" ;;
ldflags)
	pkg=github.com/contivpp/memif-agent/internal/version
	echo "-X $pkg.version=$version -X $pkg.commit=$commit"
	;;
*)
	echo "usage: scripts/version.sh [ldflags]" >&2
	exit 2
	;;
esac
