// Package kubeevents tells pods what became of their memifs as Kubernetes
// Events: Warning MemifRefused with the reason when a memif's spec is
// refused (MemifNetworkRefused when its network is not the node's),
// Normal MemifWired with the vswitch interface, network, mode and
// addresses when a memif is wired, Warning MemifWrongSecret when VPP
// refuses the pod side for its secret, and Warning MemifLinkDown when a
// link stays down past the vswitch's grace.
//
// A Recorder hands each event to client-go's record.EventBroadcaster,
// which queues it and returns at once (dropping it when its queue is
// full), so it is safe on the controller's event loop; its correlator
// aggregates repeats and rate-limits each pod's events, and its own
// goroutine posts them to the API server. The Recorder owns the
// broadcaster: Stop ends it. Events never carry a memif's secret: they
// are made from what a memif got from the networks (dmapi.MemifNetwork),
// which holds none.
package kubeevents
