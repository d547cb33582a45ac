// Package podtracking holds the end-to-end tests of pod tracking: the
// agent's device manager, pod manager and controller event loop, run
// framework-free in the test process, against the kubelet's real device
// manager and pod-resources server (package kubelettest) and a real, private
// dockerd (package test/kit/dockerd) in which pods are made the way
// kubelet makes them, with what kubelet's device manager handed back.
//
// The tests need root: kubelettest runs them in a private mount namespace,
// and dockerd needs root. Run them with
//
//	cd test/kubelet && go test -race ./podtracking/
//
// The package has no code of its own; it only documents the suite.
package podtracking
