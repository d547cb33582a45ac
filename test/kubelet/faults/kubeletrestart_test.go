package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	kubeletRestarts = 20
	// Growth allowed between two quiet moments of the agent: a few
	// goroutines and descriptors come and go with connections being torn
	// down. A leak per restart would exceed it twentyfold.
	goroutineTolerance = 10
	fdTolerance        = 5
)

// TestTwentyKubeletRestarts restarts kubelet's device manager 20 times in a
// row while pods are admitted. Capacity comes back after each restart,
// every pod kubelet admitted keeps its allocation, and the agent ends with
// no more goroutines and file descriptors than before the restarts.
func TestTwentyKubeletRestarts(t *testing.T) {
	const devices = 64
	kubelet, podResources := startKubelet(t)
	a := agenttest.New(t, agenttest.Setup{DeviceCount: devices, PluginDir: kubelettest.PluginDir, PodResourcesSocket: podResources})
	a.Start()
	waitCapacity(t, kubelet, devices)

	admitter := &podAdmitter{kubelet: kubelet}
	// Warm up every path once (Allocate, pod-resources, a re-registration)
	// before the baseline.
	admitter.admit(2)
	restartKubelet(t, kubelet, devices)
	goroutinesBefore, fdsBefore := a.Goroutines(), a.OpenFDs()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil && admitter.count() < devices/2 {
			admitter.admit(1)
		}
	}()
	for range kubeletRestarts - 1 {
		restartKubelet(t, kubelet, devices)
	}
	cancel()
	<-done
	restartKubelet(t, kubelet, devices)

	pods := admitter.admitted()
	t.Logf("%d pods admitted during %d kubelet restarts", len(pods), kubeletRestarts)
	if len(pods) < 4 {
		t.Fatalf("only %d pods admitted; the restarts ran without allocations going on", len(pods))
	}
	held := map[string]bool{}
	for _, allocation := range list(t, a) {
		held[fmt.Sprint(allocation.DeviceIDs)] = true
	}
	for _, pod := range pods {
		devices := kubelet.Devices(pod.UID, "c0", resource)
		if len(devices) != 1 || !held[fmt.Sprint(devices)] {
			t.Errorf("pod %s: kubelet holds %v, the agent holds no allocation of them", pod.Name, devices)
		}
	}
	if listed := len(held); listed != len(pods) {
		t.Errorf("the agent holds %d allocations for %d admitted pods", listed, len(pods))
	}
	poll.Until(t, waitTimeout, "goroutines and fds back to the level before the restarts", func() error {
		goroutines, fds := a.Goroutines(), a.OpenFDs()
		if goroutines > goroutinesBefore+goroutineTolerance || fds > fdsBefore+fdTolerance {
			return fmt.Errorf("goroutines %d -> %d, fds %d -> %d after %d kubelet restarts",
				goroutinesBefore, goroutines, fdsBefore, fds, kubeletRestarts)
		}
		t.Logf("goroutines %d -> %d, fds %d -> %d after %d kubelet restarts", goroutinesBefore, goroutines, fdsBefore, fds, kubeletRestarts)
		return nil
	})
	a.RequireHealthy()
}

func restartKubelet(t *testing.T, kubelet *kubelettest.Kubelet, devices int64) {
	t.Helper()
	if err := kubelet.Restart(context.Background()); err != nil {
		t.Fatalf("restart kubelet: %v", err)
	}
	waitCapacity(t, kubelet, devices)
}

// podAdmitter admits one-memif pods through kubelet; pods kubelet refuses
// (the plugin not registered again yet) are left out.
type podAdmitter struct {
	kubelet *kubelettest.Kubelet
	mu      sync.Mutex
	tried   int
	pods    []*v1.Pod
}

func (p *podAdmitter) admit(n int) {
	for range n {
		p.mu.Lock()
		name := fmt.Sprintf("pod-%d", p.tried)
		p.tried++
		p.mu.Unlock()
		pod := kubelettest.NewPod(name, resource, 1)
		if err := p.kubelet.AllocatePod(context.Background(), pod); err != nil {
			continue
		}
		p.mu.Lock()
		p.pods = append(p.pods, pod)
		p.mu.Unlock()
	}
}

func (p *podAdmitter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pods)
}

func (p *podAdmitter) admitted() []*v1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pods)
}
