package benchmarks

import (
	"fmt"
	"testing"
	"time"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	// resyncPods is how many pods, each holding one memif, run while the
	// agent restarts.
	resyncPods = 200
	// baselineRestarts is how many restarts with no pod are timed before
	// the pods are made.
	baselineRestarts = 5
)

// restartTimes is one agent restart: process start to readiness, and the
// startup resync as the agent's event history records it.
type restartTimes struct{ ready, resync time.Duration }

// restart stops the agent, starts it again and times the start. It waits
// until kubelet sees the devices again, outside the timing, so that the
// next restart starts from a registered plugin.
func (n *node) restart(b *testing.B) restartTimes {
	b.Helper()
	n.agent.Stop()
	times := restartTimes{ready: n.agent.Start()}
	times.resync = n.startupResync(b)
	n.waitCapacity(b)
	return times
}

// startupResync is how long the running agent's startup resync took.
func (n *node) startupResync(b *testing.B) time.Duration {
	b.Helper()
	history, err := n.api.GetEventHistory(n.ctx, &memifv1.GetEventHistoryRequest{})
	if err != nil {
		b.Fatalf("GetEventHistory: %v", err)
	}
	for _, event := range history.GetEvents() {
		if event.GetName() == eventloop.StartupResyncName {
			return event.GetFinishedAt().AsTime().Sub(event.GetStartedAt().AsTime())
		}
	}
	b.Fatalf("no %s in the agent's event history", eventloop.StartupResyncName)
	return 0
}

// runPods admits count pods asking one memif each, as kubelet does, and
// runs them in Docker with what kubelet's device manager handed back.
func (n *node) runPods(b *testing.B, count int) {
	b.Helper()
	for i := range count {
		pod := kubelettest.NewPod(podName(i), resource, 1)
		options, err := n.kubelet.AdmitPod(n.ctx, pod)
		if err != nil {
			b.Fatal(err)
		}
		opts := options["c0"]
		container := dockerd.ContainerSpec{Name: "c0", Env: map[string]string{}, Annotations: map[string]string{}}
		for _, env := range opts.Envs {
			container.Env[env.Name] = env.Value
		}
		for _, annotation := range opts.Annotations {
			container.Annotations[annotation.Name] = annotation.Value
		}
		for _, mount := range opts.Mounts {
			container.Mounts = append(container.Mounts, dockerd.Mount{HostPath: mount.HostPath, ContainerPath: mount.ContainerPath, ReadOnly: mount.ReadOnly})
		}
		dockerd.RunPod(b, n.docker, dockerd.PodSpec{
			Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Image: n.image,
			Containers: []dockerd.ContainerSpec{container},
		})
	}
}

// binding is what a pod holds of its memif and must keep across restarts.
type binding struct {
	podUID, pod, container, hostSocket, secret string
}

// bindings waits until the agent has bound count allocations to their
// pods, and returns them by allocation ID. when says when, for a failure.
func (n *node) bindings(b *testing.B, count int, when string) map[string]binding {
	b.Helper()
	var bound map[string]binding
	poll.Until(b, waitTimeout, when, func() error {
		bound = map[string]binding{}
		var unbound []string
		for id, allocation := range allocations(b, n.ctx, n.api) {
			if allocation.GetPodUid() == "" {
				unbound = append(unbound, id)
				unbound = append(unbound, allocation.GetDeviceIds()...)
			} else {
				bound[id] = binding{
					podUID: allocation.GetPodUid(), pod: allocation.GetPodName(), container: allocation.GetContainerName(),
					hostSocket: allocation.GetHostSocket(), secret: allocation.GetSecret(),
				}
			}
		}
		if len(bound) == count {
			return nil
		}
		return unboundError{agent: n.agent, bound: len(bound), want: count, unbound: append(unbound, podsWithout(bound, count)...)}
	})
	return bound
}

// unboundError says which allocations are not bound yet. Its message,
// with the agent's log lines about them, is made only if it is reported.
type unboundError struct {
	agent       *agenttest.Agent
	bound, want int
	unbound     []string
}

func (e unboundError) Error() string {
	return fmt.Sprintf("the agent bound %d allocations to pods, want %d; not bound (allocation IDs, device IDs, pods): %v; "+
		"the agent logged about them:\n%s", e.bound, e.want, e.unbound, logLinesAbout(e.agent, e.unbound))
}

// podsWithout names the pods of runPods that hold none of bound.
func podsWithout(bound map[string]binding, count int) []string {
	holding := map[string]bool{}
	for _, binding := range bound {
		holding[binding.pod] = true
	}
	var without []string
	for i := range count {
		if name := podName(i); !holding[name] {
			without = append(without, name)
		}
	}
	return without
}

func podName(i int) string { return fmt.Sprintf("pod-%03d", i) }

// BenchmarkAgentRestartResync restarts the agent (SIGTERM, then the
// binary started again on the same checkpoint) while 200 pods hold a memif
// each, running in a real dockerd and admitted by kubelet's real device
// manager. Each restart is timed from the process start to the readiness
// probe answering 200, which it does once the startup resync (checkpoint
// against Docker and kubelet's pod-resources) is done; after each, every
// pod must hold the same allocation, socket and secret as before. The
// startup resync's own duration comes from the agent's event history.
//
// The baseline is the same restart with no pod, timed on the same node
// before the pods are made. Reported: medians in ms and the ratios
// pods/none.
func BenchmarkAgentRestartResync(b *testing.B) {
	n := newNode(b)
	var none []restartTimes
	for range baselineRestarts {
		none = append(none, n.restart(b))
	}
	n.runPods(b, resyncPods)
	want := n.bindings(b, resyncPods, "with the pods made")

	var full []restartTimes
	for b.Loop() {
		full = append(full, n.restart(b))
		got := n.bindings(b, resyncPods, fmt.Sprintf("after restart %d", len(full)))
		for id, before := range want {
			if got[id] != before {
				b.Fatalf("allocation %s after the restart: %+v; before: pod %s uid %s socket %s (same secret: %v)",
					id, got[id].pod, before.pod, before.podUID, before.hostSocket, got[id].secret == before.secret)
			}
		}
	}
	readyFull, readyNone := medianOf(full, readyTime), medianOf(none, readyTime)
	resyncFull, resyncNone := medianOf(full, resyncTime), medianOf(none, resyncTime)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(readyFull), "ready-200pods-ms")
	b.ReportMetric(ms(readyNone), "ready-0pods-ms")
	b.ReportMetric(float64(readyFull)/float64(readyNone), "ready-200/0")
	b.ReportMetric(ms(resyncFull), "resync-200pods-ms")
	b.ReportMetric(ms(resyncNone), "resync-0pods-ms")
	b.ReportMetric(float64(resyncFull)/float64(resyncNone), "resync-200/0")
}

func readyTime(t restartTimes) time.Duration  { return t.ready }
func resyncTime(t restartTimes) time.Duration { return t.resync }

func medianOf(samples []restartTimes, field func(restartTimes) time.Duration) time.Duration {
	durations := make([]time.Duration, len(samples))
	for i, sample := range samples {
		durations[i] = field(sample)
	}
	return medianDuration(durations)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
