package deviceplugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	stubResource = "example.com/stub"
	// benchDevices is the default device count: what a node advertises.
	benchDevices = 256
)

// benchNode is a kubelet with the agent's plugin and kubelet's stub plugin
// registered side by side, so that both are measured in the same run. The
// agent tracks pods through kubelet's pod-resources, as on a node, so that
// it releases the allocations of the pods kubelet removes.
type benchNode struct {
	*node
	agent *agent
}

func newBenchNode(b *testing.B) *benchNode {
	b.Helper()
	n := newNode(b)
	cfg := n.cfg
	cfg.DeviceCount = benchDevices
	cfg.SocketRoot = tmpfsSocketRoot(b, cfg.SocketRoot)
	n.cfg = cfg
	a := n.startAgentWith(b, cfg, agentSetup{trackPods: true})
	stub, err := kubelettest.StartStubPlugin(n.ctx, stubResource, benchDevices)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := stub.Stop(); err != nil {
			b.Error(err)
		}
	})
	for _, r := range []string{resource, stubResource} {
		ctx, cancel := context.WithTimeout(n.ctx, waitTimeout)
		err := n.kubelet.WaitForCapacity(ctx, r, benchDevices)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	return &benchNode{node: n, agent: a}
}

// tmpfsSocketRoot returns a fresh directory on tmpfs for the allocation
// directories, as on a node, where the socket root (/var/run/contiv/memif)
// is on tmpfs; without a tmpfs (/dev/shm) it returns fallback. The
// checkpoint stays on disk, next to kubelet's.
func tmpfsSocketRoot(b *testing.B, fallback string) string {
	b.Helper()
	var fs syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if err := syscall.Statfs("/dev/shm", &fs); err != nil || fs.Type != tmpfsMagic {
		b.Logf("no tmpfs at /dev/shm: allocation directories in %s", fallback)
		return fallback
	}
	dir, err := os.MkdirTemp("/dev/shm", "memif-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "memif")
}

// BenchmarkAllocate measures the time from a pod's admission to kubelet's
// device manager having its devices (ManagerImpl.Allocate, which calls the
// plugin's Allocate), for the agent's plugin and, interleaved in the same
// run, kubelet's stub plugin. Each pod has one container asking for one
// device.
//
// kubelet admits pods one at a time (ManagerImpl.Allocate is not safe for
// concurrent use; kubelet's sync loop calls it serially). So "pods=32" is a
// burst of 32 pods arriving at once and queueing in kubelet: each pod's
// latency runs from the burst's start to its own Allocate returning.
//
// Reported per pod: p50-ns and p99-ns for ours and the stub, and their
// ratios (ours/stub). Pods are deleted between bursts, outside the timing.
func BenchmarkAllocate(b *testing.B) {
	n := newBenchNode(b)
	for _, pods := range []int{1, 32} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			var ours, stub []time.Duration
			for i := 0; b.Loop(); i++ {
				// Alternate which goes first, so that neither always runs
				// on a machine just warmed (or disturbed) by the other.
				if i%2 == 0 {
					ours = append(ours, n.burst(b, resource, pods)...)
					stub = append(stub, n.burst(b, stubResource, pods)...)
				} else {
					stub = append(stub, n.burst(b, stubResource, pods)...)
					ours = append(ours, n.burst(b, resource, pods)...)
				}
			}
			reportPercentiles(b, ours, stub)
		})
	}
}

// podPrefix names the pods of each plugin apart, so that the agent's pod
// tracker, which knows pods by name, never takes a pod of one plugin for
// the other's.
var podPrefix = map[string]string{resource: "ours", stubResource: "stub"}

// burst admits count pods at once and returns each one's latency; then it
// deletes them.
func (n *benchNode) burst(b *testing.B, resourceName string, count int) []time.Duration {
	pods := make([]*v1.Pod, count)
	for i := range pods {
		pods[i] = kubelettest.NewPod(fmt.Sprintf("%s-%d", podPrefix[resourceName], i), resourceName, 1)
	}
	latencies := make([]time.Duration, count)
	errs := make([]error, count)
	var admitted sync.WaitGroup
	start := time.Now()
	for i, pod := range pods {
		admitted.Go(func() {
			errs[i] = n.kubelet.AllocatePod(n.ctx, pod)
			latencies[i] = time.Since(start)
		})
	}
	admitted.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	n.deletePods(b, resourceName, pods)
	return latencies
}

// deletePods deletes the pods as a node deletes pods that ran. For the
// agent's pods it waits first until the agent's pod tracker has announced
// each (its allocation bound to it), as it has long before a pod that ran
// is deleted; then kubelet removes them, and the agent must release their
// allocations on its own, once its pod tracker has seen kubelet no longer
// list them for the tracker's gone-grace.
func (n *benchNode) deletePods(b *testing.B, resourceName string, pods []*v1.Pod) {
	ours := resourceName == resource
	if ours {
		n.untilTracked(b, "the agent binding the allocations of admitted pods", func(held []dmapi.MemifInfo) error {
			var unbound []string
			for _, a := range held {
				if a.Pod == (podapi.PodID{}) {
					unbound = append(unbound, a.AllocationID)
				}
			}
			if len(unbound) > 0 {
				return fmt.Errorf("%d of %d allocations not bound to a pod yet: %v", len(unbound), len(pods), unbound)
			}
			return nil
		})
	}
	for _, pod := range pods {
		n.kubelet.RemovePod(pod.UID)
	}
	if ours {
		n.untilTracked(b, "the agent releasing the allocations of deleted pods", func(held []dmapi.MemifInfo) error {
			if len(held) > 0 {
				return fmt.Errorf("it still holds %d", len(held))
			}
			return nil
		})
	}
}

// untilTracked waits until check passes on what the agent holds: its pod
// tracker compares kubelet's pods with those it announced every
// trackEvery.
func (n *benchNode) untilTracked(b *testing.B, what string, check func(held []dmapi.MemifInfo) error) {
	b.Helper()
	poll.Every(b, waitTimeout, trackEvery, what, func() error {
		return check(n.agent.DeviceManager.ListAllocations())
	})
}

// BenchmarkKubeletRestartToCapacity measures the time from the start of a
// kubelet restart (stop, sockets deleted, new device manager) to kubelet
// reporting every device of the plugin allocatable again: for the agent's
// plugin and, in the same restarts, for kubelet's stub plugin driven by
// kubelettest (fsnotify on the kubelet socket, then register).
func BenchmarkKubeletRestartToCapacity(b *testing.B) {
	n := newBenchNode(b)
	var ours, stub []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := n.kubelet.Restart(n.ctx); err != nil {
			b.Fatal(err)
		}
		back := map[string]time.Duration{}
		poll.Every(b, waitTimeout, 100*time.Microsecond, "capacity back after a kubelet restart", func() error {
			for _, r := range []string{resource, stubResource} {
				if _, allocatable := n.kubelet.Capacity(r); allocatable == benchDevices && back[r] == 0 {
					back[r] = time.Since(start)
				}
			}
			if len(back) < 2 {
				return fmt.Errorf("back so far: %v", back)
			}
			return nil
		})
		ours, stub = append(ours, back[resource]), append(stub, back[stubResource])
	}
	reportPercentiles(b, ours, stub)
}

// reportPercentiles reports p50 and p99 of ours and the stub, and the
// ratios ours/stub, replacing ns/op (an iteration covers both plugins).
func reportPercentiles(b *testing.B, ours, stub []time.Duration) {
	oursP50, oursP99 := percentile(ours, 50), percentile(ours, 99)
	stubP50, stubP99 := percentile(stub, 50), percentile(stub, 99)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(oursP50.Nanoseconds()), "ours-p50-ns")
	b.ReportMetric(float64(oursP99.Nanoseconds()), "ours-p99-ns")
	b.ReportMetric(float64(stubP50.Nanoseconds()), "stub-p50-ns")
	b.ReportMetric(float64(stubP99.Nanoseconds()), "stub-p99-ns")
	b.ReportMetric(float64(oursP50)/float64(stubP50), "p50-ours/stub")
	b.ReportMetric(float64(oursP99)/float64(stubP99), "p99-ours/stub")
}

// percentile returns the p-th percentile (nearest rank) of samples.
func percentile(samples []time.Duration, p int) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(samples))
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
