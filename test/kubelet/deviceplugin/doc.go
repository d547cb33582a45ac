// Package deviceplugin holds the end-to-end tests and benchmarks of the
// memif device plugin against the kubelet's real device manager and
// pod-resources server (package kubelettest). The agent's device manager
// runs framework-free with the real controller event loop, as the agent
// wires it; only the vswitch is missing (its transactions go to a fake KV
// scheduler, since the device manager puts nothing into them). The
// benchmarks run the agent's pod tracker too, over kubelet's pod-resources
// (as the pod manager runs it with runtime: none), so that the pods kubelet
// removes between bursts are released by the agent as on a node. The
// devices' health follows the vswitch's reachability (devicehealth), set
// by the test where VPP would: kubelet's allocatable drops to none while
// the vswitch is unreachable past the grace.
//
// The tests need root: kubelettest runs them in a private mount namespace.
//
//	cd test/kubelet && go test -race -count=1 ./deviceplugin/
//	cd test/kubelet && go test -run '^$' -bench . -benchtime 1s ./deviceplugin/
//
// The package has no code of its own; it only documents the suite.
package deviceplugin
