#!/usr/bin/env bash
# Runs every fuzz target of both modules for a bounded time each
# (default 10s), on top of its committed seed corpus.
set -euo pipefail
fuzztime=${1:-10s}
# Go 1.26's fuzz coordinator can fail a target that found nothing with
# "context deadline exceeded" when -fuzztime ends while a worker is busy
# (go.dev/issue/75804, fixed in Go 1.27.0). The go command fetches this
# toolchain from the module proxy like a module; the module stays on 1.26.
export GOTOOLCHAIN=go1.27.3
cd "$(dirname "$0")/.."
status=0
for module in . test/kubelet; do
	[ -f "$module/go.mod" ] || continue
	for file in $(cd "$module" && grep -rlE --include='*_test.go' '^func Fuzz' . || true); do
		pkg=./$(dirname "${file#./}")
		for target in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$module/$file"); do
			echo "fuzz: $module $pkg $target ($fuzztime)"
			(cd "$module" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg") || status=1
		done
	done
done
exit $status
