#!/usr/bin/env bash
# Runs test packages many times in a row, with -race, to find the flaky
# ones: each package on its own (`go test -race -count=N -p 1 -v`), one
# after the other, with the environment make test gives them (CI=true, so a
# missing peer fails instead of skipping; the agent binary from bin/).
# Several of these beside each other are the load the sweeps in
# BENCHMARKS.md ("Flake sweeps") ran under.
#
#   scripts/repeat.sh [-n COUNT] [PACKAGE...]
#
# PACKAGE is a path from the repository root (plugins/devicemanager/manager,
# test/kubelet/node); none means every package of both modules. COUNT
# defaults to 30. Each package's full output is kept in
# _out/repeat/<UTC time>-<pid>/<package>.log; one line per package goes to
# stdout and to summary.tsv beside the logs:
#
#   package  result  runs  failed  seconds
#
# where runs counts the complete runs (every test of the package passed
# that many times), failed the failing top-level tests, and result is go
# test's own verdict (ok, FAIL, or "no tests"). The exit code is 1 when
# any package failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
count=30
if [ "${1:-}" = "-n" ]; then
	count=$2
	shift 2
fi
export CI=true MEMIF_AGENT_BIN=$root/bin
out=$root/_out/repeat/$(date -u +%Y%m%dT%H%M%SZ)-$$
mkdir -p "$out"

packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
	mapfile -t packages < <(
		go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | sed "s#^$(go list -m)/##"
		cd test/kubelet && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | sed "s#^$(go list -m)/#test/kubelet/#"
	)
fi
make -s deps peers build >/dev/null

# complete_runs LOG prints how many times every top-level test of the
# package passed: the smallest pass count over its tests (examples run once
# whatever -count says, so they are left out).
complete_runs() {
	grep -E '^--- PASS: (Test|Fuzz)' "$1" | awk '{print $3}' | sort | uniq -c | awk 'NR == 1 || $1 < min {min = $1} END {print min + 0}'
}

status=0
printf 'package\tresult\truns\tfailed\tseconds\n' >"$out/summary.tsv"
for pkg in "${packages[@]}"; do
	module=.
	rel=./$pkg
	if [[ $pkg == test/kubelet/* ]]; then
		module=test/kubelet
		rel=./${pkg#test/kubelet/}
	fi
	log=$out/$(echo "$pkg" | tr / _).log
	start=$SECONDS
	(cd "$module" && go test -race -count="$count" -p 1 -v -timeout 6h "$rel") >"$log" 2>&1 || true
	result=$(grep -E '^(ok|FAIL|\?)[[:space:]]' "$log" | tail -1 | awk '{print $1}')
	case $result in
	ok) ;;
	'?') result="no tests" ;;
	*) result=FAIL status=1 ;;
	esac
	line=$(printf '%s\t%s\t%s\t%s\t%s' "$pkg" "$result" "$(complete_runs "$log")" "$(grep -c '^--- FAIL: ' "$log" || true)" "$((SECONDS - start))")
	echo "$line" | tee -a "$out/summary.tsv"
done
exit $status
