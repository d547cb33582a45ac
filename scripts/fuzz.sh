#!/usr/bin/env bash
# Runs every fuzz target of both modules for a bounded time each
# (default 10s), on top of its committed seed corpus.
set -euo pipefail
fuzztime=${1:-10s}
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
