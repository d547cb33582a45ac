// Package fakepodtracker stands in for the pod tracker
// (plugins/podmanager/podtracker) where a test says which pods are alive:
// it is the podapi.LivePodsSource the device manager asks at every resync,
// and it pushes the podapi.LivePods decision a test sets.
package fakepodtracker

import (
	"slices"
	"sync"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Tracker is the stand-in. Its zero value is not usable: call New.
type Tracker struct {
	mu             sync.Mutex
	pods           []podapi.PodState
	kubeletDevices bool
	down           error
	loop           controllerapi.EventLoop
	// asked: RequestLivePods came before Attach.
	asked bool
}

var _ podapi.LivePodsSource = (*Tracker)(nil)

// New returns a tracker that decides pods alive; kubeletDevices says
// whether its decisions carry kubelet's device IDs (pod-resources
// answered).
func New(kubeletDevices bool, pods ...podapi.PodState) *Tracker {
	return &Tracker{pods: pods, kubeletDevices: kubeletDevices}
}

// Attach sets the loop decisions are pushed into, and pushes one if the
// device manager asked before.
func (t *Tracker) Attach(loop controllerapi.EventLoop) {
	t.mu.Lock()
	t.loop = loop
	asked := t.asked
	t.asked = false
	t.mu.Unlock()
	if asked {
		t.RequestLivePods()
	}
}

// Set says which pods are alive from now on.
func (t *Tracker) Set(pods ...podapi.PodState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pods = slices.Clone(pods)
}

// SetDown says that no pod source answers (err), or that one does again
// (nil): while none does, nothing is pushed.
func (t *Tracker) SetDown(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = err
}

// Decision returns the LivePods event a request pushes now.
func (t *Tracker) Decision() *podapi.LivePods {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &podapi.LivePods{Pods: slices.Clone(t.pods), KubeletDevices: t.kubeletDevices}
}

// RequestLivePods implements podapi.LivePodsSource: it pushes the decision
// at once, unless no source answers.
func (t *Tracker) RequestLivePods() {
	t.mu.Lock()
	loop, down := t.loop, t.down
	if loop == nil {
		t.asked = true
	}
	t.mu.Unlock()
	if loop == nil || down != nil {
		return
	}
	// A push refused (queue full, loop closed) is lost, as the real
	// tracker's would be retried at its next comparison.
	_ = loop.PushEvent(t.Decision())
}

// PodSourcesAnswer implements podapi.LivePodsSource.
func (t *Tracker) PodSourcesAnswer() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down
}
