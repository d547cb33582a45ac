// Package api is the Go API of the pod manager: pod identity and the AddPod
// and DeletePod events the pod manager pushes into the controller event loop.
//
// A pod is identified by namespace and name (PodID); its UID tells two
// incarnations of the same name apart. The package owns types only.
package api
