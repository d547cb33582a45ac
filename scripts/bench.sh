#!/usr/bin/env bash
# Runs every Go benchmark of both modules (the agent's and the end-to-end
# module test/kubelet, which needs root), each package with a -benchtime
# that keeps the whole run bounded (about 20 minutes on 2 cores), saves the
# raw output under _out/bench/<UTC time>/ and prints the benchmark lines.
#
# Usage: scripts/bench.sh [package-pattern]
#   package-pattern  only packages whose path matches this extended regexp
#                    (for example 'deviceplugin|podtracking').
# Environment:
#   BENCH_COUNT  -count for the in-process benchmarks (default 5); the
#                end-to-end ones run once, their figures are medians or
#                percentiles over their own iterations.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
filter=${1:-.}
count=${BENCH_COUNT:-5}
out=$root/_out/bench/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

# benchflags prints the go test flags of each run of one package, a line
# per run: iterations sized so that each package takes a few minutes at
# most. The end-to-end benchmarks set up a node (dockerd, kubelet, pods)
# once per run, so their iterations are counted (-benchtime=Nx).
benchflags() {
	case $1 in
	test/kubelet/benchmarks)
		echo "-bench=AgentRestartResync -benchtime=5x -count=1"
		echo "-bench=AgentMemory -benchtime=3x -count=1"
		echo "-bench=MemifDataPlane -benchtime=6x -count=1"
		;;
	test/kubelet/deviceplugin) echo "-bench=. -benchtime=30x -count=3" ;;
	test/kubelet/dra) echo "-bench=PodCreateToRunning -benchtime=20x -count=1" ;;
	# One cluster (kubelet on containerd 2.x) per run, a pod per iteration.
	test/kubelet/nodetracking)
		echo "-bench=PodDeletionToDirectoryReleased -benchtime=10x -count=1"
		echo "-bench=PodRunningToBound -benchtime=10x -count=1"
		;;
	test/kubelet/podtracking)
		echo "-bench=GetPodMemifInfo -benchtime=1s -count=1"
		echo "-bench=PodDeletionToDirectoryReleased -benchtime=10x -count=1"
		;;
	plugins/podmanager/podtracker) echo "-bench=. -benchtime=1s -count=1" ;;
	# Pod to pod through VPP: a bridge domain and an L2 cross-connect, each
	# beside DPDK to DPDK; Allocates with VPP stopped beside VPP answering;
	# an agent restart on a VPP holding 10, 100 and 1,000 pods' memifs.
	plugins/memifwiring)
		echo "-bench=PodToPodThroughVPP -benchtime=3x -count=3"
		echo "-bench=MemifCreate -benchtime=50x -count=3"
		echo "-bench=AdmissionWithVPPStopped -benchtime=200x -count=3"
		echo "-bench=AgentRestartWithMemifsInVPP -benchtime=1x -count=1"
		;;
	# Two nodes joined by an underlay per benchmark: pod to pod across the
	# nodes beside within one, and node B joining node A's VPP beside its
	# agent's readiness.
	test/kubelet/multinode) echo "-bench=. -benchtime=5x -count=1" ;;
	# One cluster per run; each iteration is a pod with a memif and one
	# without, so 20x gives medians over 20 pods of each.
	test/kubelet/node) echo "-bench=PodCreateToRunning -benchtime=20x -count=1" ;;
	*) echo "-bench=. -benchtime=1s -count=$count" ;;
	esac
}

# The agent binary the end-to-end benchmarks run, built as make build does.
echo "bench: building memif-agent into $out/bin"
CGO_ENABLED=0 go build -trimpath -o "$out/bin/" ./cmd/memif-agent
export MEMIF_AGENT_BIN=$out/bin

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "nproc: $(nproc)"
	echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "kernel: $(uname -r)"
	echo "go: $(go env GOVERSION)"
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

status=0
# run runs one package's benchmarks with the given go test flags. The
# package's test binary is built once and run directly, not through go
# test, which would mix the peers' logs on stderr (kubelet's klog, dockerd)
# into the benchmark lines. The output is appended to the package's log,
# the peers' logs to its .stderr.txt, and the benchmark lines to all.txt.
run() { # module package flags...
	local module=$1 pkg=$2
	shift 2
	local name log bin
	name=$(echo "$pkg" | tr / _)
	log=$out/$name
	bin=$out/test-bin/$name.test
	echo "bench: $pkg $*"
	if [ ! -x "$bin" ] && ! (cd "$module" && go test -c -o "$bin" "./${pkg#"$module"/}") >>"$log.stderr.txt" 2>&1; then
		echo "bench: $pkg does not build, see $log.stderr.txt"
		status=1
		return
	fi
	local flags=()
	for flag in "$@"; do flags+=("-test.${flag#-}"); done
	if ! (cd "$root/$pkg" && "$bin" -test.run '^$' -test.benchmem -test.timeout 30m "${flags[@]}" </dev/null) >"$out/run.txt" 2>>"$log.stderr.txt"; then
		echo "bench: $pkg FAILED, see $log.txt and $log.stderr.txt"
		status=1
	fi
	cat "$out/run.txt" >>"$log.txt"
	grep -E '^(Benchmark|goos|goarch|pkg|cpu)' "$out/run.txt" >>"$out/all.txt" || true
	rm -f "$out/run.txt"
}

for module in . test/kubelet; do
	for pkg in $(cd "$module" && grep -rlE --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u); do
		pkg=${pkg#./}
		[ "$module" = . ] || pkg=$module/$pkg
		# The root module's listing also walks into test/kubelet.
		if [ "$module" = . ] && [[ $pkg == test/kubelet/* ]]; then continue; fi
		[[ $pkg =~ $filter ]] || continue
		while read -r flags; do
			# shellcheck disable=SC2086 # the flags are words
			run "$module" "$pkg" $flags
		done < <(benchflags "$pkg")
	done
done

echo
echo "== machine ($out/machine.txt)"
cat "$out/machine.txt"
echo
echo "== results ($out/all.txt; raw output per package in $out)"
grep '^Benchmark' "$out/all.txt" || echo "(no benchmark ran)"
exit $status
