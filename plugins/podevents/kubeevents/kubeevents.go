package kubeevents

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// The events' reasons and source.
const (
	ReasonMemifRefused        = "MemifRefused"
	ReasonMemifNetworkRefused = "MemifNetworkRefused"
	ReasonMemifWired          = "MemifWired"
	ReasonMemifWrongSecret    = "MemifWrongSecret"
	ReasonMemifLinkDown       = "MemifLinkDown"
	Component                 = "memif-agent"
)

// unknownNetwork is the refusal reason (memifspec.ReasonUnknownNetwork)
// of a memif whose network is not in the node's networks.conf.
const unknownNetwork = "unknown-network"

// Recorder posts the memifs' events to the API server. Create it with
// New; Stop it.
type Recorder struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// New starts a recorder posting through client, as the agent on node.
func New(client kubernetes.Interface, node string) *Recorder {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &Recorder{
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component, Host: node}),
	}
}

// Stop ends the broadcaster and its goroutines; events still queued are
// dropped.
func (r *Recorder) Stop() { r.broadcaster.Shutdown() }

// MemifRefused says on pod that memif n of container is not wired, and
// why: MemifNetworkRefused when its network is not one of the node's (not
// in networks.conf, or removed from it), MemifRefused for any other
// refusal of its spec.
func (r *Recorder) MemifRefused(pod podapi.Pod, container string, n dmapi.MemifNetwork) {
	reason := ReasonMemifRefused
	if n.Reason == unknownNetwork {
		reason = ReasonMemifNetworkRefused
	}
	r.recorder.Eventf(podReference(pod), corev1.EventTypeWarning, reason,
		"%s is not wired: %s", memifOf(container, n.MemifID), n.Refused)
}

// Link is a memif's vswitch interface whose link an event is about.
type Link struct {
	Container string
	MemifID   int
	// Interface is the vswitch interface's name, VPPName VPP's.
	Interface, VPPName string
	// DownReason is why VPP dropped the pod side.
	DownReason string
}

func (l Link) String() string {
	return fmt.Sprintf("%s (vswitch interface %s, VPP %s)", memifOf(l.Container, uint32(l.MemifID)), l.Interface, l.VPPName)
}

// WrongSecret says on pod that VPP refused the pod side of link, which
// presented another secret than its memif's.
func (r *Recorder) WrongSecret(pod podapi.Pod, link Link) {
	r.recorder.Eventf(podReference(pod), corev1.EventTypeWarning, ReasonMemifWrongSecret,
		"%s: VPP refused the pod side: incorrect secret; use the MEMIF_SECRET of the pod's current allocation (memifctl get)", link)
}

// LinkDown says on pod that link has been down for link.DownReason for
// longer than grace.
func (r *Recorder) LinkDown(pod podapi.Pod, link Link, grace time.Duration) {
	r.recorder.Eventf(podReference(pod), corev1.EventTypeWarning, ReasonMemifLinkDown,
		"%s: link down for more than %s: %s", link, grace, link.DownReason)
}

// MemifWired says on pod that memif n of container is wired as the
// vswitch interface iface, with what it got from its network.
func (r *Recorder) MemifWired(pod podapi.Pod, container, iface string, n dmapi.MemifNetwork) {
	var got []string
	if n.Network != "" {
		got = append(got, "in network "+n.Network)
	}
	got = append(got, n.Mode+" mode")
	if len(n.IPs) > 0 {
		got = append(got, "address "+strings.Join(n.IPs, ", "))
	}
	if len(n.Gateway) > 0 {
		got = append(got, "gateway "+strings.Join(n.Gateway, ", "))
	}
	r.recorder.Eventf(podReference(pod), corev1.EventTypeNormal, ReasonMemifWired,
		"%s is wired as vswitch interface %s, %s", memifOf(container, n.MemifID), iface, strings.Join(got, ", "))
}

func memifOf(container string, memifID uint32) string {
	if container == "" {
		return fmt.Sprintf("memif %d", memifID)
	}
	return fmt.Sprintf("memif %d of container %s", memifID, container)
}

func podReference(pod podapi.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.ID.Namespace, Name: pod.ID.Name, UID: types.UID(pod.UID)}
}
