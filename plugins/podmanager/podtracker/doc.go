// Package podtracker keeps the set of pods alive on the node and turns its
// changes into the pod manager's AddPod, DeletePod and LivePods events in
// the controller event loop. It is the agent's one owner of pod liveness:
// no other part lists the pod sources to decide that a pod is gone. It is
// the framework-free core of the podmanager plugin.
//
// A pod is alive while the container runtime holds a sandbox or container
// of it (Deps.Runtime, a podapi.Runtime: a CRI runtime such as containerd or
// CRI-O through package cripods, or Docker through package dockerpods) or
// kubelet's pod-resources API lists it (package podresources): kubelet
// knows a pod as soon as it admits it, the runtime knows it until its last
// container is removed. Either source may be missing (podmanager.conf
// runtime: none leaves kubelet alone). Both are merged per pod ID: the
// runtime gives the UID and the container evidence (mount sources,
// annotations), kubelet the device IDs of each container.
//
// Events, per pod ID:
//   - AddPod when a pod appears, and again whenever its evidence changes (a
//     container is created, kubelet assigns devices); handlers must treat a
//     repeated AddPod as "this is what is known now". Device IDs and mount
//     sources are compared as sets: kubelet lists a container's devices in
//     a new order at almost every call, which is no change.
//   - DeletePod when the pod is gone from both sources; when a pod is
//     recreated with a new UID, DeletePod of the old incarnation comes first.
//
// And after every comparison that may decide (goneAfter, policy.go, the
// one policy for when a pod is gone), LivePods: the pods announced, which
// are every pod alive. A handler releases what it holds for pods not in
// it (the device manager: allocations whose DeletePod was missed, or whose
// pod went while the agent was down); RequestLivePods asks for one soon
// (the device manager asks at every resync). It is not pushed while no
// source answers, nor until kubelet alone has been answering for the
// gone-grace, so that a pod kubelet's gap after a restart hides, and that
// was never announced, is not taken for gone. PodSourcesAnswer says
// whether a source answered the last comparison (the device manager's
// readiness).
//
// The runtime's event stream (CRI container events, Docker's events)
// drives most changes; after every reconnection the complete listing is
// compared with what was announced, and a periodic reconciliation does the
// same with both sources, so a delete missed while the stream was down is
// still seen. A source failing alone does not stop the comparison with the
// other: while the runtime cannot be listed, the
// pods are compared with kubelet's listing every gone-grace, and a pod
// kubelet has stopped listing for that long is deleted (kubelet is the
// authority on devices, but lists nothing for a moment after it restarts);
// while kubelet cannot be asked, the runtime's listing adds and updates pods but
// deletes none, since kubelet may have admitted a pod whose containers do
// not exist yet.
//
// kubelet removes a deleted pod's containers first and drops the pod from
// its active pods (what pod-resources lists) a moment later. So a pod that
// left the runtime while kubelet still listed it, or could not be asked, is
// rechecked soon: after 100 ms, then at doubling delays up to 400 ms, for
// one reconcile period, after which the periodic reconciliation alone
// follows it. All pods due are rechecked with one listing of each source,
// at most one round per 100 ms, which keeps well within kubelet's
// pod-resources rate limit (100 calls a second, bursts of 10).
//
// One goroutine owns the announced state and the rechecks and pushes
// events, in order, retrying while the controller's queue is full; the
// runtime's watcher runs in a second one. Close stops both. ResolvePod
// (api.PodResolver) asks both sources directly; callers keep it off the
// event loop, which does no network I/O.
package podtracker
