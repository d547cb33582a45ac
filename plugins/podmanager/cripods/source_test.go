package cripods_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/cripods"
	"github.com/contivpp/memif-agent/test/kit/containerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// waitLimit bounds a wait for something that should happen; no test
// asserts how long anything takes.
const waitLimit = 60 * time.Second

// recordingListener keeps what Watch reports: the pods alive by its
// reports.
type recordingListener struct {
	mu   sync.Mutex
	pods map[podapi.PodID]podapi.PodState
	// changes counts PodChanged calls: a runtime that streams events.
	changes int
}

func (l *recordingListener) PodsListed(_ context.Context, pods []podapi.PodState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods = map[podapi.PodID]podapi.PodState{}
	for _, pod := range pods {
		l.pods[pod.Pod.ID] = pod
	}
}

func (l *recordingListener) PodChanged(_ context.Context, pod podapi.Pod, state podapi.PodState, exists bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes++
	if exists {
		l.pods[state.Pod.ID] = state
	} else {
		delete(l.pods, pod.ID)
	}
}

func (l *recordingListener) pod(id podapi.PodID) (podapi.PodState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	state, found := l.pods[id]
	return state, found
}

func TestSourceOnRealContainerd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB) containerd.Build
		// events: the runtime streams container events; without them
		// the source relists.
		events bool
	}{
		{"containerd 1.6", func(testing.TB) containerd.Build { return containerd.Debian() }, false},
		{"containerd 2.x", containerd.Cached, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			daemon := containerd.Start(t, tc.build(t))
			t.Logf("running %s", daemon.Build.Name)
			listener := testSource(t, daemon)
			listener.mu.Lock()
			defer listener.mu.Unlock()
			if streamed := listener.changes > 0; streamed != tc.events {
				t.Errorf("%d pod changes reported from events, want events %t", listener.changes, tc.events)
			}
		})
	}
}

func testSource(t *testing.T, daemon *containerd.Daemon) *recordingListener {
	source, err := cripods.New(daemon.Socket(), 0, 50*time.Millisecond, testlog.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { source.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	listener := &recordingListener{pods: map[podapi.PodID]podapi.PodState{}}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		source.Watch(ctx, listener)
	}()
	t.Cleanup(func() { cancel(); <-watching })

	hostDir := t.TempDir()
	hostSocket := filepath.Join(hostDir, "memif.sock")
	web := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web-1"}
	pod := daemon.RunPod(t, containerd.PodSpec{Namespace: "default", Name: "web", UID: web.UID, Containers: []containerd.ContainerSpec{{
		Name:        "app",
		Annotations: map[string]string{dmapi.AnnotationSocketHost: hostSocket},
		Mounts:      []containerd.Mount{{HostPath: hostDir, ContainerPath: "/run/vpp"}},
	}}})

	t.Run("listing", func(t *testing.T) {
		pods, err := source.ListPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 || pods[0].Pod != web || len(pods[0].Containers) != 1 {
			t.Fatalf("ListPods = %+v, want web with one container", pods)
		}
		app := pods[0].Containers[0]
		if app.Name != "app" || app.RuntimeID != pod.ContainerIDs["app"] || !slices.Contains(app.MountSources, hostDir) ||
			app.Annotations[dmapi.AnnotationSocketHost] != hostSocket {
			t.Errorf("container = %+v, want app with mount %s and the socket annotation", app, hostDir)
		}
		got, found, err := source.GetPod(ctx, web.ID)
		if err != nil || !found || !reflect.DeepEqual(got, pods[0]) {
			t.Errorf("GetPod(web) = %+v, %t, %v; want the listed pod", got, found, err)
		}
		if _, found, err := source.GetPod(ctx, podapi.PodID{Namespace: "default", Name: "nope"}); err != nil || found {
			t.Errorf("GetPod(nope) = found %t, %v; want not found", found, err)
		}
	})
	t.Run("watch sees the pod", func(t *testing.T) {
		poll.Until(t, waitLimit, "Watch reports web", func() error {
			if state, found := listener.pod(web.ID); !found || state.Pod != web {
				return fmt.Errorf("web not reported yet")
			}
			return nil
		})
	})
	t.Run("watch sees a removal across a runtime restart", func(t *testing.T) {
		daemon.Restart(t)
		pod.Remove(t)
		poll.Until(t, waitLimit, "Watch reports web gone", func() error {
			if _, found := listener.pod(web.ID); found {
				return fmt.Errorf("web still reported")
			}
			return nil
		})
	})
	t.Run("a pod recreated under the same name is the new incarnation", func(t *testing.T) {
		daemon.RunPod(t, containerd.PodSpec{Namespace: "default", Name: "web", UID: "uid-web-2"})
		poll.Until(t, waitLimit, "Watch reports the new web", func() error {
			if state, found := listener.pod(web.ID); !found || state.Pod.UID != "uid-web-2" {
				return fmt.Errorf("new web not reported yet: %+v", state)
			}
			return nil
		})
	})
	t.Run("a stopped pod is not listed", func(t *testing.T) {
		job := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "job"}, UID: "uid-job"}
		pod := daemon.RunPod(t, containerd.PodSpec{Namespace: "default", Name: "job", UID: job.UID, Containers: []containerd.ContainerSpec{{Name: "app"}}})
		poll.Until(t, waitLimit, "Watch reports job", func() error {
			if _, found := listener.pod(job.ID); !found {
				return fmt.Errorf("job not reported yet")
			}
			return nil
		})
		pod.Stop(t)
		poll.Until(t, waitLimit, "Watch reports job gone", func() error {
			if state, found := listener.pod(job.ID); found {
				return fmt.Errorf("job still reported: %+v", state)
			}
			return nil
		})
		pods, err := source.ListPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(pods, func(p podapi.PodState) bool { return p.Pod.ID == job.ID }) {
			t.Errorf("ListPods = %+v, want no job: its sandbox is stopped and its container exited", pods)
		}
		if _, found, err := source.GetPod(ctx, job.ID); err != nil || found {
			t.Errorf("GetPod(job) = found %t, %v; want not found", found, err)
		}
	})
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("the runtime removed the pod's mount source %s: %v", hostDir, err)
	}
	return listener
}
