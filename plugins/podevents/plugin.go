package podevents

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/ligato/cn-infra/infra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/contivpp/memif-agent/internal/logs"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/podevents/kubeevents"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// nodeNameEnv names this node (the DaemonSet sets it from spec.nodeName).
const nodeNameEnv = "NODE_NAME"

// KubeClientSource is a plugin that may hold an API server client: the
// DRA driver.
type KubeClientSource interface {
	// KubeClient is nil when the plugin has none.
	KubeClient() kubernetes.Interface
}

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// DRADriver lends its client when it has one; nil: none.
	DRADriver KubeClientSource
	// Allocations tells which pod holds the memif of a vswitch interface
	// whose link an event is about (the device manager); nil: link
	// events are dropped.
	Allocations AllocationLister
}

// AllocationLister lists the memif allocations, safe from any goroutine:
// the device manager.
type AllocationLister interface {
	ListAllocations() []dmapi.MemifInfo
}

// Plugin posts pod events once AfterInit found a client.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log      logs.Logger
	recorder atomic.Pointer[kubeevents.Recorder]
}

var (
	_ wiring.PodEvents      = (*Plugin)(nil)
	_ vswitchapi.LinkEvents = (*Plugin)(nil)
)

// Init implements infra.Plugin; the client is known only after the DRA
// driver's AfterInit.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	return nil
}

// AfterInit starts the recorder over the DRA driver's client, or the pod's
// service account's.
func (p *Plugin) AfterInit() error {
	client, from := p.client()
	if client == nil {
		p.log.InfoS("no Kubernetes Events on pods: no API server client (memifctl get shows what became of each memif)", "reason", "the DRA driver is off and "+from)
		return nil
	}
	p.recorder.Store(kubeevents.New(client, os.Getenv(nodeNameEnv)))
	p.log.InfoS("posting memif events on pods", "client", from)
	return nil
}

// client returns an API server client and where it came from, or nil and
// why there is none.
func (p *Plugin) client() (kubernetes.Interface, string) {
	if p.DRADriver != nil {
		if client := p.DRADriver.KubeClient(); client != nil {
			return client, "the DRA driver's API server client"
		}
	}
	config, err := rest.InClusterConfig()
	if err != nil {
		return nil, "the agent has no service account token (" + err.Error() + ")"
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, "the service account's client failed (" + err.Error() + ")"
	}
	return client, "the pod's service account"
}

// Close stops the recorder; events still queued are dropped.
func (p *Plugin) Close() error {
	if recorder := p.recorder.Swap(nil); recorder != nil {
		recorder.Stop()
	}
	return nil
}

// MemifRefused implements wiring.PodEvents.
func (p *Plugin) MemifRefused(pod podapi.Pod, container string, n dmapi.MemifNetwork) {
	if recorder := p.recorder.Load(); recorder != nil {
		recorder.MemifRefused(pod, container, n)
	}
}

// MemifWired implements wiring.PodEvents.
func (p *Plugin) MemifWired(pod podapi.Pod, container, iface string, n dmapi.MemifNetwork) {
	if recorder := p.recorder.Load(); recorder != nil {
		recorder.MemifWired(pod, container, iface, n)
	}
}

// WrongSecret implements vswitchapi.LinkEvents.
func (p *Plugin) WrongSecret(link vswitchapi.MemifLink) {
	if recorder := p.recorder.Load(); recorder != nil {
		if pod, memif, ok := p.podOf(link); ok {
			recorder.WrongSecret(pod, memif)
		}
	}
}

// LinkDown implements vswitchapi.LinkEvents.
func (p *Plugin) LinkDown(link vswitchapi.MemifLink, grace time.Duration) {
	if recorder := p.recorder.Load(); recorder != nil {
		if pod, memif, ok := p.podOf(link); ok {
			recorder.LinkDown(pod, memif, grace)
		}
	}
}

// podOf finds the pod holding link's memif; none for a memif whose pod
// is gone or not known yet.
func (p *Plugin) podOf(link vswitchapi.MemifLink) (podapi.Pod, kubeevents.Link, bool) {
	if p.Allocations == nil {
		return podapi.Pod{}, kubeevents.Link{}, false
	}
	owner, ok := wiring.MemifInterfaces(p.Allocations.ListAllocations())[link.Name]
	if !ok {
		p.log.DebugS("link event dropped: no pod holds the memif", "memif", link.Name, "vppName", link.VPPName)
		return podapi.Pod{}, kubeevents.Link{}, false
	}
	return podapi.Pod{ID: owner.Pod, UID: owner.PodUID}, kubeevents.Link{Container: owner.Container, MemifID: owner.MemifID,
		Interface: link.Name, VPPName: link.VPPName, DownReason: link.DownReason}, true
}
