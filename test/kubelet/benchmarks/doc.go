// Package benchmarks holds the benchmarks of the running memif-agent
// binary against its real peers, each reporting its figure next to a
// baseline measured in the same run:
//
//   - BenchmarkAgentRestartResync: an agent restart with 200 pods holding
//     memifs in a real dockerd and kubelet's real device manager, from
//     process start to readiness (the startup resync done) and the
//     startup resync itself; baseline: the same restart with no pod.
//   - BenchmarkAgentMemory: the agent's resident memory after 1,000
//     Allocate calls on its device plugin socket; baseline: the same
//     agent idle, before them.
//   - BenchmarkMemifDataPlane: packets per second between two DPDK testpmd
//     processes, the pod side in a container, over the socket directory
//     the agent allocated (mounted as kubelet mounts it); baseline: the
//     same pair over a plain temporary directory.
//
// They need root (kubelettest runs them in a private mount namespace with
// kubelet's directory to themselves, dockerd needs root) and Debian's
// docker.io and dpdk-dev. TestMain builds memif-agent the way make build
// does, unless MEMIF_AGENT_BIN names a directory holding it. Run them with
//
//	cd test/kubelet && go test -run '^$' -bench . -benchtime 3x ./benchmarks/
//
// or scripts/bench.sh for every benchmark of the project. The package
// only drives and observes the agent through its public interfaces (its
// config files, HTTP probes, node API and device plugin socket).
package benchmarks
