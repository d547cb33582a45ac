package api

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// AddPodEvent is *AddPod, or an event that embeds it to change how it is
// processed (for example its transaction type). A handler that matches
// this type handles both.
type AddPodEvent interface {
	controllerapi.Event
	GetAddPod() *AddPod
}

// DeletePodEvent is *DeletePod, or an event that embeds it; see AddPodEvent.
type DeletePodEvent interface {
	controllerapi.Event
	GetDeletePod() *DeletePod
}

// AddPod is pushed when a pod appears on the node (kubelet admitted it, or
// its sandbox or one of its containers is seen), and again whenever what is
// known of it grows (a new container, device IDs from kubelet): handlers
// treat a repeat as an update of the same pod. Handlers build what the pod
// needs, in order.
type AddPod struct {
	Pod Pod
	// Containers is what is known of the pod's containers when the event
	// is pushed; handlers bind allocations to the pod from it.
	Containers []PodContainer
}

// Spec implements controllerapi.Event: a pod's wiring is best effort, and a
// failure is healed by the next resync.
func (*AddPod) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "AddPod",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Forward}
}

// GetAddPod implements AddPodEvent.
func (e *AddPod) GetAddPod() *AddPod { return e }

// String implements controllerapi.Event.
func (e *AddPod) String() string { return "AddPod " + e.Pod.String() }

// DeletePod is pushed when a pod is gone from the node (its sandbox and all
// its containers are removed). Handlers run in reverse order, so the vswitch
// side is removed before the socket directory and the devices.
type DeletePod struct {
	Pod Pod
}

// Spec implements controllerapi.Event.
func (*DeletePod) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "DeletePod",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// GetDeletePod implements DeletePodEvent.
func (e *DeletePod) GetDeletePod() *DeletePod { return e }

// String implements controllerapi.Event.
func (e *DeletePod) String() string { return "DeletePod " + e.Pod.String() }

// LivePods is the pod tracker's decision of which pods are alive on the
// node, pushed after every comparison of the sources that may delete a pod
// (every reconcile-period, at each reconnection to the runtime, and when a
// handler asks through LivePodsSource.RequestLivePods): a pod not in Pods
// is gone, and holds no device. A handler releases against it what it
// holds for pods not in it; it decides nothing about liveness itself. It
// is never pushed while no source answers, nor while kubelet's gap after a
// restart could still hide a live pod (the tracker's gone-grace).
type LivePods struct {
	// Pods are the live pods, ordered by ID, with what is known of their
	// containers.
	Pods []PodState
	// KubeletDevices tells that kubelet's pod-resources answered, so the
	// containers carry kubelet's device IDs: a device no pod holds is free.
	KubeletDevices bool
}

// Spec implements controllerapi.Event: it releases what gone pods held,
// vswitch side first.
func (*LivePods) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "LivePods",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// String implements controllerapi.Event.
func (e *LivePods) String() string { return fmt.Sprintf("LivePods (pods: %d)", len(e.Pods)) }

// Find returns the live pod with the given ID, or nil.
func (e *LivePods) Find(id PodID) *PodState {
	for i := range e.Pods {
		if e.Pods[i].Pod.ID == id {
			return &e.Pods[i]
		}
	}
	return nil
}
