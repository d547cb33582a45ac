// Package dockershim spells the container labels and names kubelet's
// dockershim gives a pod's containers, which the agent's pod tracking
// reads back from Docker. Whatever makes kubelet-style pods in a real
// Docker engine (the dockerd test package, the demo) takes them from here,
// so that they make the same pods.
//
// The label names are the agent's own (dockerpods), which takes kubelet's
// from k8s.io/kubelet: one copy. The package's test spells every label out,
// so that a typo there cannot hide behind the shared constant. The package
// only names; it must not talk to Docker.
package dockershim
