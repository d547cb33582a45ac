// Package api is the Go API of the pod manager: pod identity, the AddPod
// and DeletePod events the pod manager pushes into the controller event
// loop with its LivePods decisions, and the contracts of its sources and
// consumers (Runtime, LivePodsSource, PodResolver).
//
// A pod is identified by namespace and name (PodID); its UID tells two
// incarnations of the same name apart. The package owns types and the pure
// helpers on them (LatestIncarnations) only.
package api
