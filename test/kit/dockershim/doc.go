// Package dockershim spells the container labels and names kubelet's
// dockershim gives a pod's containers, which the agent's pod tracking
// reads back from Docker. Whatever makes kubelet-style pods in a real
// Docker engine (the dockerd test package, the demo) takes them from here,
// so that they make the same pods.
//
// The names are spelled out rather than imported from the code under test,
// so that a typo there cannot hide behind a shared constant. The package
// only names; it must not talk to Docker.
package dockershim
