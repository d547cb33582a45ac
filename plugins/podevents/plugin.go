package podevents

import (
	"os"
	"sync/atomic"

	"github.com/ligato/cn-infra/infra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/podevents/kubeevents"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
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
}

// Plugin posts pod events once AfterInit found a client.
type Plugin struct {
	Deps
	recorder atomic.Pointer[kubeevents.Recorder]
}

var _ wiring.PodEvents = (*Plugin)(nil)

// Init implements infra.Plugin; the client is known only after the DRA
// driver's AfterInit.
func (p *Plugin) Init() error { return nil }

// AfterInit starts the recorder over the DRA driver's client, or the pod's
// service account's.
func (p *Plugin) AfterInit() error {
	client, from := p.client()
	if client == nil {
		p.Log.Infof("no Kubernetes Events on pods: the DRA driver is off and %s; memifctl get shows what became of each memif", from)
		return nil
	}
	p.recorder.Store(kubeevents.New(client, os.Getenv(nodeNameEnv)))
	p.Log.Infof("posting memif events on pods through %s", from)
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
