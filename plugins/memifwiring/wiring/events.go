package wiring

import (
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// PodEvents tells pods what became of their memifs (Kubernetes Events:
// plugins/podevents). The handler calls it on the event loop, so its
// methods queue what they are told and return at once.
type PodEvents interface {
	// MemifRefused: memif n of container in pod is not wired
	// (n.Refused says why).
	MemifRefused(pod podapi.Pod, container string, n dmapi.MemifNetwork)
	// MemifWired: memif n of container in pod is wired as the vswitch
	// interface iface.
	MemifWired(pod podapi.Pod, container, iface string, n dmapi.MemifNetwork)
}

// announcement is whom tell announces changes to: the pod, and the name
// its memifs' interfaces are derived from.
type announcement struct {
	pod   podapi.Pod
	owner string
}

// announce tells the pod of what memif n of the allocation memif got.
// Only updates announce: a resync wires again what pods were told of,
// and an agent restart would repeat every pod's events.
func (h *Handler) announce(announced *announcement, memif dmapi.MemifInfo, n dmapi.MemifNetwork) {
	if announced == nil || h.opts.Events == nil {
		return
	}
	if n.Refused != "" {
		h.opts.Events.MemifRefused(announced.pod, memif.ContainerName, n)
		return
	}
	h.opts.Events.MemifWired(announced.pod, memif.ContainerName, interfaceName(announced.pod.ID, announced.owner, int(n.MemifID)), n)
}
