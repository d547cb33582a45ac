package podtracker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/eventlog"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

const (
	memif       = "contivpp.io/memif"
	waitTimeout = 60 * time.Second
)

func admitted(name, container string, deviceIDs ...string) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Name: name, Namespace: "default", Containers: []*podresourcesv1.ContainerResources{{
		Name:    container,
		Devices: []*podresourcesv1.ContainerDevices{{ResourceName: memif, DeviceIds: deviceIDs}},
	}}}
}

// recordingHandler is a controller event handler that keeps every pod event
// the real event loop gives it.
type recordingHandler struct {
	*eventlog.Log
}

func newRecordingHandler() *recordingHandler {
	return &recordingHandler{Log: eventlog.New()}
}

func (h *recordingHandler) String() string { return "recording-handler" }

func (h *recordingHandler) HandlesEvent(event controllerapi.Event) bool {
	switch event.(type) {
	case *podapi.AddPod, *podapi.DeletePod, *podapi.LivePods:
		return true
	}
	return false
}

func (h *recordingHandler) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}

func (h *recordingHandler) Update(event controllerapi.Event, _ controllerapi.EventOperations) (string, error) {
	h.Add(event)
	return "", nil
}

func (h *recordingHandler) Revert(controllerapi.Event) error { return nil }

func isAdd(uid string, match func(*podapi.AddPod) bool) func(controllerapi.Event) bool {
	return func(event controllerapi.Event) bool {
		add, ok := event.(*podapi.AddPod)
		return ok && add.Pod.UID == uid && match(add)
	}
}

func isDelete(name string) func(controllerapi.Event) bool {
	return func(event controllerapi.Event) bool {
		deletion, ok := event.(*podapi.DeletePod)
		return ok && deletion.Pod.ID.Name == name
	}
}

type fixture struct {
	docker  *docker.Client
	daemon  *dockerd.Daemon
	image   string
	kubelet *fakepodresources.Server
	handler *recordingHandler
	loop    *eventloop.Loop
	tracker *podtracker.Tracker
}

// newFixture starts dockerd, a pod-resources server, the real event loop
// with a recording handler, and a tracker; startLoop false leaves the loop
// stopped so pushes pile up in its queue.
func newFixture(t *testing.T, queueSize int, startLoop bool) *fixture {
	t.Helper()
	return newFixtureReconciling(t, queueSize, startLoop, time.Hour)
}

// newFixtureReconciling is newFixture with a reconcile period.
func newFixtureReconciling(t *testing.T, queueSize int, startLoop bool, reconcilePeriod time.Duration) *fixture {
	t.Helper()
	f := &fixture{daemon: dockerd.Start(t)}
	f.docker = f.daemon.Client(t)
	f.image = dockerd.ImportSleeperImage(t, f.docker)
	f.start(t, dockerpods.NewSource(f.docker, testlog.New(t), 20*time.Millisecond, 200*time.Millisecond), queueSize, startLoop, reconcilePeriod)
	return f
}

// newKubeletOnlyFixture is newFixture on a node with no container runtime
// configured: kubelet's pod-resources alone tells which pods live.
func newKubeletOnlyFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	f.start(t, nil, 100, true, time.Hour)
	return f
}

// start serves the pod-resources API and starts the event loop and the
// tracker over runtime (nil: none).
func (f *fixture) start(t *testing.T, runtime podapi.Runtime, queueSize int, startLoop bool, reconcilePeriod time.Duration) {
	t.Helper()
	f.handler = newRecordingHandler()
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	f.kubelet = fakepodresources.Serve(t, socket)
	kubeletClient, err := podresources.New(socket, 5*time.Second)
	if err != nil {
		t.Fatalf("pod-resources client: %v", err)
	}
	t.Cleanup(func() { kubeletClient.Close() })

	cfg := eventloop.DefaultConfig()
	cfg.QueueSize = queueSize
	f.loop, err = eventloop.New(cfg, eventloop.Deps{Handlers: []controllerapi.EventHandler{f.handler}, Committer: fakevswitch.Committer{}})
	if err != nil {
		t.Fatalf("event loop: %v", err)
	}
	t.Cleanup(func() { f.loop.Close() })
	if startLoop {
		f.loop.Start()
	}
	f.tracker, err = podtracker.New(
		podtracker.Config{ReconcilePeriod: reconcilePeriod, GoneGrace: 50 * time.Millisecond},
		podtracker.Deps{Runtime: runtime, Kubelet: kubeletClient, EventLoop: f.loop, Log: testlog.New(t)})
	if err != nil {
		t.Fatalf("tracker: %v", err)
	}
	f.tracker.Start()
	t.Cleanup(f.tracker.Close)
}

func memifSpec(image, name, uid, hostDir string, autoRemove bool) dockerd.PodSpec {
	return dockerd.PodSpec{
		Namespace: "default", Name: name, UID: uid, Image: image, AutoRemove: autoRemove,
		Containers: []dockerd.ContainerSpec{{
			Name:   "app",
			Mounts: []dockerd.Mount{{HostPath: hostDir, ContainerPath: "/run/vpp"}},
		}},
	}
}

func TestTrackerFollowsPodFromAdmissionToDeletion(t *testing.T) {
	f := newFixture(t, 100, true)
	ctx := context.Background()
	f.kubelet.Set(admitted("web", "app", "memif-001"))

	if err := f.tracker.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	t.Run("admitted pod is added with kubelet's device IDs", func(t *testing.T) {
		event := f.handler.WaitFor(t, waitTimeout, "AddPod of the admitted pod", isAdd("", func(*podapi.AddPod) bool { return true }))
		add := event.(*podapi.AddPod)
		want := []podapi.PodContainer{{Name: "app", DeviceIDs: map[string][]string{memif: {"memif-001"}}}}
		if add.Pod.ID.Name != "web" || !reflect.DeepEqual(add.Containers, want) {
			t.Errorf("AddPod = %v %+v, want web with %+v", add.Pod, add.Containers, want)
		}
	})
	hostDir := t.TempDir()
	pod := dockerd.CreatePod(t, f.docker, memifSpec(f.image, "web", "uid-web", hostDir, false))
	t.Run("created container adds its mount to the evidence", func(t *testing.T) {
		f.handler.WaitFor(t, waitTimeout, "AddPod with the mount and the devices", isAdd("uid-web", func(add *podapi.AddPod) bool {
			return len(add.Containers) == 1 && reflect.DeepEqual(add.Containers[0].MountSources, []string{hostDir}) &&
				reflect.DeepEqual(add.Containers[0].DeviceIDs[memif], []string{"memif-001"})
		}))
	})
	pod.StartContainers(t, f.docker)
	t.Run("pod kubelet still lists is kept after its containers go", func(t *testing.T) {
		pod.Remove(t, f.docker)
		if err := f.tracker.Reconcile(ctx); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if n := f.handler.Count(isDelete("web")); n != 0 {
			t.Errorf("%d DeletePod while kubelet still lists the pod, want 0", n)
		}
	})
	t.Run("pod gone from both is deleted", func(t *testing.T) {
		f.kubelet.Set()
		if err := f.tracker.Reconcile(ctx); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		event := f.handler.WaitFor(t, waitTimeout, "DeletePod of web", isDelete("web"))
		if uid := event.(*podapi.DeletePod).Pod.UID; uid != "uid-web" {
			t.Errorf("DeletePod uid = %q, want uid-web", uid)
		}
	})
}

func TestTrackerDeletesOnDockerEvents(t *testing.T) {
	f := newFixture(t, 100, true)
	pod := dockerd.RunPod(t, f.docker, memifSpec(f.image, "web", "uid-web", t.TempDir(), false))
	f.handler.WaitFor(t, waitTimeout, "AddPod with the container", isAdd("uid-web", func(add *podapi.AddPod) bool { return len(add.Containers) == 1 }))
	pod.Remove(t, f.docker)
	f.handler.WaitFor(t, waitTimeout, "DeletePod of web", isDelete("web"))
	if n := f.handler.Count(isDelete("web")); n != 1 {
		t.Errorf("%d DeletePod events for one pod, want 1", n)
	}
}

// TestTrackerSeesDeleteMissedWhileDockerWasDown removes a pod while dockerd
// is down: Docker removes auto-remove containers it finds stopped at start,
// so only the listing after reconnecting can tell.
func TestTrackerSeesDeleteMissedWhileDockerWasDown(t *testing.T) {
	f := newFixture(t, 100, true)
	dockerd.RunPod(t, f.docker, memifSpec(f.image, "kept", "uid-kept", t.TempDir(), false))
	dockerd.RunPod(t, f.docker, memifSpec(f.image, "gone", "uid-gone", t.TempDir(), true))
	for _, uid := range []string{"uid-kept", "uid-gone"} {
		f.handler.WaitFor(t, waitTimeout, "AddPod of "+uid, isAdd(uid, func(add *podapi.AddPod) bool { return len(add.Containers) == 1 }))
	}

	f.daemon.Restart(t)

	f.handler.WaitFor(t, waitTimeout, "DeletePod of the pod removed during the restart", isDelete("gone"))
	if err := f.tracker.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if n := f.handler.Count(isDelete("kept")); n != 0 {
		t.Errorf("%d DeletePod for the pod that survived the restart, want 0", n)
	}
}

// TestTrackerWaitsForAFullQueue starts with a controller queue of one event
// and the loop stopped, so most pushes meet ErrEventQueueFull; once the loop
// runs, every pod must still be added.
func TestTrackerWaitsForAFullQueue(t *testing.T) {
	f := newFixture(t, 1, false)
	const pods = 5
	for i := range pods {
		dockerd.CreatePod(t, f.docker, dockerd.PodSpec{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("uid-%d", i), Image: f.image})
	}
	// Fill the queue ourselves, so the tracker's pushes meet a full queue.
	for {
		err := f.loop.PushEvent(queueFiller{})
		if errors.Is(err, controllerapi.ErrEventQueueFull) {
			break
		}
		if err != nil {
			t.Fatalf("push queue filler: %v", err)
		}
	}
	f.loop.Start()
	for i := range pods {
		uid := fmt.Sprintf("uid-%d", i)
		f.handler.WaitFor(t, waitTimeout, "AddPod of "+uid, isAdd(uid, func(*podapi.AddPod) bool { return true }))
	}
}

// queueFiller is an event no handler wants.
type queueFiller struct{}

func (queueFiller) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "QueueFiller"}
}
func (queueFiller) String() string { return "QueueFiller" }

// livePods matches the LivePods events that list exactly names, in order,
// with kubelet's devices or without.
func livePods(kubeletDevices bool, names ...string) func(controllerapi.Event) bool {
	return func(event controllerapi.Event) bool {
		live, ok := event.(*podapi.LivePods)
		if !ok || live.KubeletDevices != kubeletDevices || len(live.Pods) != len(names) {
			return false
		}
		for i, pod := range live.Pods {
			if pod.Pod.ID.Name != names[i] {
				return false
			}
		}
		return true
	}
}

func isLivePods(event controllerapi.Event) bool {
	_, ok := event.(*podapi.LivePods)
	return ok
}

// The tracker pushes LivePods only from a comparison its policy lets
// decide: never while no source answers, nor while kubelet answers alone
// for less than the gone-grace; and says whether a source answers.
func TestLivePodsFromTheSourcesThatAnswer(t *testing.T) {
	f := newFixture(t, 100, true)
	dockerd.CreatePod(t, f.docker, dockerd.PodSpec{Namespace: "default", Name: "running", UID: "uid-running", Image: f.image})
	f.kubelet.Set(admitted("admitted", "app", "memif-002"))
	ctx := context.Background()

	f.tracker.RequestLivePods()
	f.handler.WaitFor(t, waitTimeout, "LivePods of both sources", livePods(true, "admitted", "running"))
	if err := f.tracker.PodSourcesAnswer(); err != nil {
		t.Errorf("PodSourcesAnswer = %v, want nil", err)
	}

	// handled counts the LivePods the loop has handled once it has run
	// every event pushed so far.
	handled := func() int {
		t.Helper()
		if err := f.loop.Resync(ctx); err != nil {
			t.Fatalf("resync: %v", err)
		}
		return f.handler.Count(isLivePods)
	}
	f.kubelet.Fail(true)
	before := handled()
	if err := f.tracker.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if n := handled() - before; n != 0 {
		t.Errorf("%d LivePods while kubelet cannot be asked, want 0: it may have admitted pods whose containers do not exist yet", n)
	}

	f.kubelet.Fail(false)
	f.daemon.Stop(t)
	// kubelet alone: LivePods once it has been answering for the grace,
	// without the pod only Docker listed.
	poll.Until(t, waitTimeout, "LivePods of kubelet alone", func() error {
		if err := f.tracker.Reconcile(ctx); err != nil {
			return err
		}
		if f.handler.Count(livePods(true, "admitted")) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	f.handler.WaitFor(t, waitTimeout, "DeletePod of the pod only Docker listed", isDelete("running"))

	f.kubelet.Fail(true)
	before = handled()
	if err := f.tracker.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if n := handled() - before; n != 0 {
		t.Errorf("%d LivePods while no source answers, want 0", n)
	}
	if err := f.tracker.PodSourcesAnswer(); err == nil || !strings.Contains(err.Error(), "no pod source answers") {
		t.Errorf("PodSourcesAnswer with both down = %v, want why", err)
	}
}

func TestResolvePod(t *testing.T) {
	f := newFixture(t, 100, true)
	hostDir := t.TempDir()
	dockerd.CreatePod(t, f.docker, memifSpec(f.image, "running", "uid-running", hostDir, false))
	f.kubelet.Set(admitted("admitted", "app", "memif-002"), admitted("running", "app", "memif-003"))
	tests := []struct {
		name      string
		pod       string
		wantFound bool
		want      []podapi.PodContainer
	}{
		{name: "admitted, no container yet", pod: "admitted", wantFound: true,
			want: []podapi.PodContainer{{Name: "app", DeviceIDs: map[string][]string{memif: {"memif-002"}}}}},
		{name: "running: mounts and devices", pod: "running", wantFound: true,
			want: []podapi.PodContainer{{Name: "app", MountSources: []string{hostDir}, DeviceIDs: map[string][]string{memif: {"memif-003"}}}}},
		{name: "unknown", pod: "unknown"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			state, found, err := f.tracker.ResolvePod(context.Background(), podapi.PodID{Namespace: "default", Name: test.pod})
			if err != nil || found != test.wantFound {
				t.Fatalf("ResolvePod = found %v, err %v; want found %v", found, err, test.wantFound)
			}
			for i := range state.Containers {
				state.Containers[i].RuntimeID = ""
			}
			if found && !reflect.DeepEqual(state.Containers, test.want) {
				t.Errorf("containers\n got %+v\nwant %+v", state.Containers, test.want)
			}
		})
	}
}

// TestPeriodicReconciliation changes only what kubelet lists, which no
// Docker event reports: the periodic reconciliation must see both changes.
func TestPeriodicReconciliation(t *testing.T) {
	f := newFixtureReconciling(t, 100, true, 50*time.Millisecond)
	f.kubelet.Set(admitted("admitted", "app", "memif-004"))
	f.handler.WaitFor(t, waitTimeout, "AddPod of the admitted pod", func(event controllerapi.Event) bool {
		add, ok := event.(*podapi.AddPod)
		return ok && add.Pod.ID.Name == "admitted"
	})
	f.kubelet.Set()
	f.handler.WaitFor(t, waitTimeout, "DeletePod of the pod kubelet dropped", isDelete("admitted"))
}

func TestReconcileAfterCloseFails(t *testing.T) {
	f := newFixture(t, 100, true)
	f.tracker.Close()
	if err := f.tracker.Reconcile(context.Background()); err == nil {
		t.Error("Reconcile on a closed tracker succeeded")
	}
}

// TestTrackerRechecksPodThatLeftDocker removes a pod's containers while
// kubelet still lists the pod, or cannot be asked; kubelet then answers
// without the pod. The reconcile period is an hour, so DeletePod can only
// come from the tracker asking kubelet again.
func TestTrackerRechecksPodThatLeftDocker(t *testing.T) {
	tests := []struct {
		name string
		// whileContainersGo is kubelet's state while the containers go.
		whileContainersGo func(*fakepodresources.Server)
	}{
		{name: "kubelet forgets the pod a moment after its containers", whileContainersGo: func(*fakepodresources.Server) {}},
		{name: "kubelet cannot be asked while the containers go", whileContainersGo: func(k *fakepodresources.Server) { k.Fail(true) }},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			f := newFixture(t, 100, true)
			f.kubelet.Set(admitted("web", "app", "memif-001"))
			pod := dockerd.RunPod(t, f.docker, memifSpec(f.image, "web", "uid-web", t.TempDir(), false))
			f.handler.WaitFor(t, waitTimeout, "AddPod with the container", isAdd("uid-web", func(add *podapi.AddPod) bool {
				return len(add.Containers) == 1 && add.Containers[0].RuntimeID != ""
			}))

			test.whileContainersGo(f.kubelet)
			pod.Remove(t, f.docker)
			// Docker reports events in order: once the tracker has announced
			// a pod created after the removal, it has seen web's containers go.
			dockerd.CreatePod(t, f.docker, dockerd.PodSpec{Namespace: "default", Name: "marker", UID: "uid-marker", Image: f.image})
			f.handler.WaitFor(t, waitTimeout, "AddPod of the pod created after the removal", isAdd("uid-marker", func(*podapi.AddPod) bool { return true }))
			if n := f.handler.Count(isDelete("web")); n != 0 {
				t.Fatalf("%d DeletePod of web while kubelet may list it, want 0", n)
			}

			f.kubelet.Set()
			f.kubelet.Fail(false)
			event := f.handler.WaitFor(t, waitTimeout, "DeletePod of web once kubelet answers without it", isDelete("web"))
			if uid := event.(*podapi.DeletePod).Pod.UID; uid != "uid-web" {
				t.Errorf("DeletePod uid = %q, want uid-web", uid)
			}
			if err := f.tracker.Reconcile(context.Background()); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if n := f.handler.Count(isDelete("web")); n != 1 {
				t.Errorf("%d DeletePod events for web, want 1", n)
			}
		})
	}
}

// Each source failing alone leaves the comparison to the other: kubelet
// alone deletes the pods it stops listing (after the grace), Docker alone
// adds pods but deletes none, since kubelet may have admitted them before
// their containers exist.
func TestSourceFailingAlone(t *testing.T) {
	ctx := context.Background()
	t.Run("Docker down", func(t *testing.T) {
		f := newFixture(t, 100, true)
		f.kubelet.Set(admitted("web", "app", "memif-001"), admitted("kept", "app", "memif-002"))
		dockerd.RunPod(t, f.docker, memifSpec(f.image, "web", "uid-web", t.TempDir(), false))
		f.handler.WaitFor(t, waitTimeout, "AddPod of web", isAdd("uid-web", func(add *podapi.AddPod) bool { return len(add.Containers) == 1 }))

		f.daemon.Stop(t)
		f.kubelet.Set(admitted("kept", "app", "memif-002"))
		if err := f.tracker.Reconcile(ctx); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		event := f.handler.WaitFor(t, waitTimeout, "DeletePod of the pod kubelet stopped listing", isDelete("web"))
		if uid := event.(*podapi.DeletePod).Pod.UID; uid != "uid-web" {
			t.Errorf("DeletePod uid = %q, want uid-web", uid)
		}
		if n := f.handler.Count(isDelete("kept")); n != 0 {
			t.Errorf("%d DeletePod of the pod kubelet lists, want 0", n)
		}
	})
	t.Run("kubelet down", func(t *testing.T) {
		f := newFixture(t, 100, true)
		f.kubelet.Fail(true)
		pod := dockerd.RunPod(t, f.docker, memifSpec(f.image, "web", "uid-web", t.TempDir(), false))
		f.handler.WaitFor(t, waitTimeout, "AddPod of web from Docker alone", isAdd("uid-web", func(add *podapi.AddPod) bool { return len(add.Containers) == 1 }))
		pod.Remove(t, f.docker)
		if err := f.tracker.Reconcile(ctx); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if n := f.handler.Count(isDelete("web")); n != 0 {
			t.Errorf("%d DeletePod while kubelet cannot be asked, want 0", n)
		}
		f.kubelet.Fail(false)
		if err := f.tracker.Reconcile(ctx); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		f.handler.WaitFor(t, waitTimeout, "DeletePod of web once kubelet answers", isDelete("web"))
	})
}

// TestMultiMemifPodAnnouncedOnceInAnyDeviceOrder: kubelet lists a
// container's devices in another order at every answer (the fake permutes
// them on purpose, so each comparison after the first sees an order other
// than the one before). A pod holding two or three memifs is announced, with
// every device, and then never again however often the tracker compares,
// whether kubelet is compared alone or beside Docker.
func TestMultiMemifPodAnnouncedOnceInAnyDeviceOrder(t *testing.T) {
	const reconciles = 12
	memifs := map[string][]string{
		"two-memifs":   {"memif-001", "memif-002"},
		"three-memifs": {"memif-003", "memif-004", "memif-005"},
	}
	tests := []struct {
		name   string
		docker bool
	}{
		{name: "kubelet alone"},
		{name: "Docker and kubelet", docker: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			var f *fixture
			if test.docker {
				f = newFixture(t, 100, true)
			} else {
				f = newKubeletOnlyFixture(t)
			}
			var listed []*podresourcesv1.PodResources
			for name, deviceIDs := range memifs {
				listed = append(listed, admitted(name, "app", deviceIDs...))
				if test.docker {
					dockerd.CreatePod(t, f.docker, memifSpec(f.image, name, "uid-"+name, t.TempDir(), false))
				}
			}
			f.kubelet.Permute(true)
			f.kubelet.Set(listed...)

			ctx := context.Background()
			// compare has the tracker compare the sources and the loop handle
			// what that pushed.
			compare := func() {
				t.Helper()
				if err := f.tracker.Reconcile(ctx); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				if err := f.loop.Resync(ctx); err != nil {
					t.Fatalf("resync: %v", err)
				}
			}
			announced := func(name string) func(controllerapi.Event) bool {
				return func(event controllerapi.Event) bool {
					add, ok := event.(*podapi.AddPod)
					return ok && add.Pod.ID.Name == name
				}
			}
			// Docker's events may announce a pod before kubelet's listing
			// adds its devices: a real change. Once settled, an unchanged
			// pod is never announced again.
			compare()
			settled := map[string]int{}
			for name := range memifs {
				settled[name] = f.handler.Count(announced(name))
			}
			for range reconciles {
				compare()
			}
			for name, deviceIDs := range memifs {
				adds := f.handler.Count(announced(name))
				if settled[name] < 1 || adds != settled[name] {
					t.Errorf("pod %s holding %d memifs announced %d times once settled, %d after %d more comparisons; want it announced and then never again",
						name, len(deviceIDs), settled[name], adds, reconciles)
					continue
				}
				withDevices := f.handler.Count(func(event controllerapi.Event) bool {
					add, ok := event.(*podapi.AddPod)
					return ok && add.Pod.ID.Name == name && len(add.Containers) == 1 &&
						reflect.DeepEqual(add.Containers[0].DeviceIDs, map[string][]string{memif: deviceIDs})
				})
				if withDevices == 0 {
					t.Errorf("pod %s never announced with app holding %v", name, deviceIDs)
				}
			}
		})
	}
}
