// Package dockerpods reads kubelet pods out of a Docker engine: it lists the
// containers kubelet made (by label filter, never inspecting every container
// on the node), parses kubelet's labels into pod-manager pods and container
// evidence, and watches Docker's event stream for pod lifecycle changes.
//
// A container belongs to a pod by kubelet's labels io.kubernetes.pod.name,
// io.kubernetes.pod.namespace, io.kubernetes.pod.uid and
// io.kubernetes.container.name. The sandbox (io.kubernetes.docker.type =
// podsandbox) makes the pod exist; app containers carry the evidence: their
// bind-mount sources and the annotations kubelet stored as "annotation.<key>"
// labels. A pod exists while its sandbox or any of its containers exists in
// Docker, running or not: kubelet restarts dead containers with the same
// mounts, so only removal means the pod is gone.
//
// The Watcher keeps its own event stream rather than go-dockerclient's event
// listener, which hands each event to a new goroutine (so order is lost) and
// drops events for a busy listener. After every (re)connection it lists all
// pods again, so a change made while the stream was down (a Docker restart)
// is not missed.
//
// The package owns the Docker connection it is given. It knows nothing of the
// controller, kubelet's pod-resources API or allocations.
package dockerpods
