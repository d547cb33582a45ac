// Package api is the Go API of the pod manager: pod identity, the AddPod
// and DeletePod events the pod manager pushes into the controller event
// loop, and the contracts of its sources (Runtime, PodLister, PodResolver).
//
// A pod is identified by namespace and name (PodID); its UID tells two
// incarnations of the same name apart. The package owns types and the pure
// helpers on them (LatestIncarnations) only.
package api
