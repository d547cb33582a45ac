package dockerpods_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// waitTimeout bounds every wait for Docker; it is a failure deadline, not
// an asserted duration.
const waitTimeout = 60 * time.Second

type podChange struct {
	pod    podapi.Pod
	state  podapi.PodState
	exists bool
}

// recordingListener keeps what a Watcher reported, for the test to wait on.
type recordingListener struct {
	listings chan []podapi.PodState
	changes  chan podChange
}

func newRecordingListener() *recordingListener {
	return &recordingListener{listings: make(chan []podapi.PodState, 16), changes: make(chan podChange, 256)}
}

func (l *recordingListener) PodsListed(ctx context.Context, pods []podapi.PodState) {
	select {
	case l.listings <- pods:
	case <-ctx.Done():
	}
}

func (l *recordingListener) PodChanged(ctx context.Context, pod podapi.Pod, state podapi.PodState, exists bool) {
	select {
	case l.changes <- podChange{pod: pod, state: state, exists: exists}:
	case <-ctx.Done():
	}
}

func (l *recordingListener) nextListing(t *testing.T) []podapi.PodState {
	t.Helper()
	select {
	case pods := <-l.listings:
		return pods
	case <-time.After(waitTimeout):
		t.Fatal("the watcher listed no pods")
		return nil
	}
}

// waitChange waits for a change of the pod with uid that satisfies match;
// match sees every change on the way, of any pod.
func (l *recordingListener) waitChange(t *testing.T, uid string, match func(podChange) bool) podChange {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case change := <-l.changes:
			if match(change) && change.pod.UID == uid {
				return change
			}
		case <-deadline:
			t.Fatalf("no matching change of pod %s", uid)
		}
	}
}

func startWatcher(t *testing.T, client *docker.Client, listener dockerpods.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Add(1)
	watcher := dockerpods.NewWatcher(client, listener, testlog.New(t), 20*time.Millisecond, 200*time.Millisecond)
	go func() {
		defer running.Done()
		watcher.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
}

func memifContainer(hostDir string) dockerd.ContainerSpec {
	return dockerd.ContainerSpec{
		Name:        "app",
		Env:         map[string]string{"MEMIF_SOCKET": "/run/vpp/memif.sock"},
		Annotations: map[string]string{"io.contivpp.memif.socket.host": hostDir + "/memif.sock"},
		Mounts:      []dockerd.Mount{{HostPath: hostDir, ContainerPath: "/run/vpp"}},
	}
}

func TestInspectorListsKubeletPodsOnly(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	hostDir := t.TempDir()
	pod := dockerd.RunPod(t, client, dockerd.PodSpec{
		Namespace: "default", Name: "web", UID: "uid-web", Image: image,
		Containers: []dockerd.ContainerSpec{memifContainer(hostDir), {Name: "sidecar"}},
	})
	sandboxOnly := dockerd.CreatePod(t, client, dockerd.PodSpec{Namespace: "kube-system", Name: "dns", UID: "uid-dns", Image: image})
	if _, err := client.CreateContainer(docker.CreateContainerOptions{
		Config: &docker.Config{Image: image, Entrypoint: []string{dockerd.SleeperPath}, Labels: map[string]string{"app": "not-a-pod"}},
	}); err != nil {
		t.Fatalf("create plain container: %v", err)
	}

	pods, err := dockerpods.NewInspector(client, testlog.New(t)).ListPods(context.Background())
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	want := []podapi.PodState{
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}, Containers: []podapi.PodContainer{
			{
				Name:         "app",
				RuntimeID:    pod.ContainerIDs["app"],
				MountSources: []string{hostDir},
				Annotations:  map[string]string{"io.contivpp.memif.socket.host": hostDir + "/memif.sock"},
			},
			{Name: "sidecar", RuntimeID: pod.ContainerIDs["sidecar"]},
		}},
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "kube-system", Name: "dns"}, UID: sandboxOnly.Spec.UID}},
	}
	if !reflect.DeepEqual(pods, want) {
		t.Errorf("ListPods\n got %+v\nwant %+v", pods, want)
	}
}

func TestWatcherFollowsPodLifecycle(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	early := dockerd.RunPod(t, client, dockerd.PodSpec{Namespace: "default", Name: "early", UID: "uid-early", Image: image})
	listener := newRecordingListener()
	startWatcher(t, client, listener)

	if got := listener.nextListing(t); len(got) != 1 || got[0].Pod.UID != "uid-early" {
		t.Fatalf("first listing = %+v, want the pod that ran before the watcher", got)
	}
	hostDir := t.TempDir()
	late := dockerd.CreatePod(t, client, dockerd.PodSpec{
		Namespace: "default", Name: "late", UID: "uid-late", Image: image,
		Containers: []dockerd.ContainerSpec{memifContainer(hostDir)},
	})
	t.Run("container creation carries the mount evidence", func(t *testing.T) {
		change := listener.waitChange(t, "uid-late", func(c podChange) bool { return len(c.state.Containers) == 1 })
		if got := change.state.Containers[0].MountSources; !reflect.DeepEqual(got, []string{hostDir}) {
			t.Errorf("mount sources = %v, want [%s]", got, hostDir)
		}
	})
	t.Run("removal ends a pod, a stopped container keeps one", func(t *testing.T) {
		if err := client.StopContainer(early.SandboxID, 10); err != nil {
			t.Fatalf("stop sandbox: %v", err)
		}
		late.Remove(t, client)
		// Events come in order: the sandbox's die before late's destroys.
		listener.waitChange(t, "uid-late", func(c podChange) bool {
			if c.pod.UID == "uid-early" && !c.exists {
				t.Error("pod with a stopped sandbox reported gone")
			}
			return !c.exists
		})
	})
}

// TestWatcherResyncsAfterDockerRestart removes a pod while the daemon is
// down (Docker removes auto-remove containers it finds stopped at start,
// before its API answers), so no event can tell; the listing after the
// reconnection must.
func TestWatcherResyncsAfterDockerRestart(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	dockerd.RunPod(t, client, dockerd.PodSpec{Namespace: "default", Name: "kept", UID: "uid-kept", Image: image})
	dockerd.RunPod(t, client, dockerd.PodSpec{Namespace: "default", Name: "gone", UID: "uid-gone", Image: image, AutoRemove: true})
	listener := newRecordingListener()
	startWatcher(t, client, listener)
	if got := listener.nextListing(t); len(got) != 2 {
		t.Fatalf("first listing has %d pods, want 2", len(got))
	}

	daemon.Restart(t)

	var got []string
	for _, pod := range listener.nextListing(t) {
		got = append(got, pod.Pod.UID)
	}
	if !reflect.DeepEqual(got, []string{"uid-kept"}) {
		t.Errorf("listing after the restart has pods %v, want [uid-kept]", got)
	}
}
