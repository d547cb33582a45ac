// Package deviceplugin holds the end-to-end tests and benchmarks of the
// memif device plugin against the kubelet's real device manager and
// pod-resources server (package kubelettest). The agent runs in the
// test's process (internal/inprocess), wired as cmd/memif-agent wires it;
// only VPP is missing (vswitch.conf names none). In the benchmarks its
// pod manager lists kubelet's pod-resources (runtime: none), so that the
// pods kubelet removes between bursts are released by the agent as on a
// node. The devices' health
// follows the vswitch's reachability, set by the test where VPP would:
// kubelet's allocatable drops to none while the vswitch is unreachable
// past the grace.
//
// The tests need root: kubelettest runs them in a private mount namespace.
//
//	cd test/kubelet && go test -race -count=1 ./deviceplugin/
//	cd test/kubelet && go test -run '^$' -bench . -benchtime 1s ./deviceplugin/
//
// The package has no code of its own; it only documents the suite.
package deviceplugin
