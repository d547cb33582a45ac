package podtracking_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/test/kit/arrivals"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// BenchmarkGetPodMemifInfo measures GetPodMemifInfo against the real
// kubelet and dockerd. "bound" is a running pod whose allocation the event
// loop has bound: a lookup in the device manager's state, the baseline.
// "admitted" is a pod kubelet has just admitted, not yet seen by the event
// loop: the answer comes through the pod resolver (Docker listing by label
// and kubelet's pod-resources Get).
func BenchmarkGetPodMemifInfo(b *testing.B) {
	e := newEnv(b)
	a := e.startAgent(b)
	running := e.runPod(b, "running", false)
	boundMemif(b, a, running.spec)
	e.admit(b, "admitted")

	for _, pod := range []string{"running", "admitted"} {
		name := map[string]string{"running": "bound", "admitted": "admitted"}[pod]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.DeviceManager.GetPodMemifInfo(podID(pod)); err != nil {
					b.Fatalf("GetPodMemifInfo(%s): %v", pod, err)
				}
			}
		})
	}
}

// BenchmarkPodDeletionToDirectoryReleased measures how long a deleted pod
// keeps its memif directory, against the real kubelet and dockerd, with the
// pod deleted in the order a real kubelet deletes it: its containers are
// removed while kubelet still lists the pod, and kubelet forgets the pod a
// moment later (here: once the tracker has seen the containers go). The
// tracker reconciles once an hour, so it is its recheck of kubelet that
// releases the pod.
//
// "release" is the time to remove the containers plus the time from kubelet
// forgetting the pod to the directory gone ("forgotten-to-released"); the
// moment between the two is kubelet's, not the agent's, and is left out.
// The baseline, measured on the same pods, is "docker-destroy": from the
// start of the removal to Docker reporting the last container destroyed on
// its event stream, the earliest any agent can know. ns/op is not
// meaningful (an iteration also creates and binds a pod) and is reported
// as 0.
func BenchmarkPodDeletionToDirectoryReleased(b *testing.B) {
	e := newEnv(b)
	a := e.startAgent(b)
	destroyed := e.watchDestroyed(b)
	var release, afterForgotten, dockerDestroy time.Duration
	for i := range b.N {
		pod := e.runPod(b, fmt.Sprintf("del-%d", i), false)
		info := boundMemif(b, a, pod.spec)

		start := time.Now()
		pod.docker.Remove(b, e.docker)
		removed := time.Since(start)
		dockerDestroy += destroyed.Await(b, pod.docker.SandboxID, waitTimeout).Sub(start)
		marker := e.waitTrackerCaughtUp(b, a, fmt.Sprintf("after-del-%d", i))

		forgotten := time.Now()
		e.kubelet.RemovePod(pod.spec.UID)
		waitDirectoryGone(b, info.HostDir)
		afterForgotten += time.Since(forgotten)
		release += removed + time.Since(forgotten)
		marker.Remove(b, e.docker)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(release.Nanoseconds())/float64(b.N), "release-ns")
	b.ReportMetric(float64(afterForgotten.Nanoseconds())/float64(b.N), "forgotten-to-released-ns")
	b.ReportMetric(float64(dockerDestroy.Nanoseconds())/float64(b.N), "docker-destroy-ns")
	b.ReportMetric(float64(release)/float64(dockerDestroy), "release/docker-destroy")
}

// waitDirectoryGone polls, finely, until dir no longer exists.
func waitDirectoryGone(tb testing.TB, dir string) {
	tb.Helper()
	poll.Every(tb, waitTimeout, time.Millisecond, "directory "+dir+" going", func() error {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// watchDestroyed hears Docker's destroy events on a client of its own
// and notes, by container ID, when each arrived.
func (e *env) watchDestroyed(tb testing.TB) *arrivals.Log {
	tb.Helper()
	client := e.daemon.Client(tb)
	events := make(chan *docker.APIEvents, 1024)
	if err := client.AddEventListener(events); err != nil {
		tb.Fatalf("listen to docker events: %v", err)
	}
	destroyed := arrivals.New(1024)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case event := <-events:
				if event.Action != "destroy" {
					continue
				}
				if !destroyed.Note(ctx, event.Actor.ID) {
					return
				}
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		if err := client.RemoveEventListener(events); err != nil {
			tb.Errorf("stop listening to docker events: %v", err)
		}
	})
	return destroyed
}
