// Package podtracking holds the end-to-end tests of pod tracking: the agent
// run in the test process (internal/inprocess, the wiring cmd/memif-agent
// runs), its pod manager reading Docker and kubelet's pod-resources,
// against the kubelet's real device manager and pod-resources server
// (package kubelettest) and a real, private dockerd (package
// test/kit/dockerd) in which pods are made the way kubelet makes them,
// with what kubelet's device manager handed back. What the pod manager
// pushes into the loop is recorded (inprocess.Options.PodEvents); a test
// asks it for a comparison of the sources with RequestLivePods.
//
// The tests need root: kubelettest runs them in a private mount namespace,
// and dockerd needs root. Run them with
//
//	cd test/kubelet && go test -race ./podtracking/
//
// The package has no code of its own; it only documents the suite.
package podtracking
