package memifwiring_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
)

// livePods stands in for the pod tracker: a test says which pods are
// alive, and the device manager gets that decision at every resync.
type livePods struct{ *fakepodtracker.Tracker }

func newLivePods() *livePods { return &livePods{fakepodtracker.New(false)} }

func (l *livePods) set(pods []podapi.PodState) { l.Set(pods...) }

// recordingPodResolver stands in for the pod tracker's PodResolver, which
// asks Docker and kubelet about one pod (slow I/O). It knows one admitted
// pod and counts the questions.
type recordingPodResolver struct {
	admitted podapi.PodState

	mu    sync.Mutex
	asked []podapi.PodID
}

func (r *recordingPodResolver) ResolvePod(_ context.Context, pod podapi.PodID) (podapi.PodState, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, pod)
	return r.admitted, pod == r.admitted.Pod.ID, nil
}

func (r *recordingPodResolver) questions() []podapi.PodID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

func TestAddPodWiresOnlyBoundMemifsWithoutAskingTheRuntime(t *testing.T) {
	admitted := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "admitted"}, UID: "uid-admitted"}
	resolver := &recordingPodResolver{admitted: podapi.PodState{Pod: admitted, Containers: []podapi.PodContainer{
		{Name: "app", DeviceIDs: map[string][]string{dmapi.DefaultResourceName: {"memif-000"}}},
	}}}
	a := startAgentWith(t, agentSetup{resolver: resolver})
	allocation := a.allocate(t, "memif-000")

	for _, tc := range []struct {
		name string
		pod  podapi.Pod
	}{
		{"pod without memif", podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "plain"}, UID: "uid-plain"}},
		{"pod whose allocation the device manager has not bound", admitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Push(t, &podapi.AddPod{Pod: tc.pod})
			a.Barrier(t)
			if asked := resolver.questions(); len(asked) != 0 {
				t.Errorf("the event loop asked the runtime and kubelet about %v; handlers must read the device manager's state only", asked)
			}
			if interfaces := a.schedulerInterfaces(t); len(interfaces) != 0 {
				t.Errorf("the scheduler holds %v, want nothing: no allocation is bound", names(interfaces))
			}
		})
	}

	// Off the loop, GetPodMemifs still answers for the admitted pod.
	memifs, err := a.DeviceManager.GetPodMemifs(admitted.ID)
	if err != nil || len(memifs) != 1 || memifs[0].AllocationID != allocation.AllocationID {
		t.Errorf("GetPodMemifs(%s) = %v, %v; want allocation %s resolved", admitted.ID, memifs, err, allocation.AllocationID)
	}
}

func TestGonePodLosesItsInterfacesBeforeItsDirectories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, a *testAgent, lister *livePods, pod podapi.Pod)
	}{
		{"DeletePod from the pod manager", func(t *testing.T, a *testAgent, _ *livePods, pod podapi.Pod) {
			a.Push(t, &podapi.DeletePod{Pod: pod})
		}},
		{"pod gone in the pod tracker's decision", func(t *testing.T, a *testAgent, lister *livePods, _ podapi.Pod) {
			lister.set(nil)
			a.Push(t, lister.Decision())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lister := newLivePods()
			a := startAgentWith(t, agentSetup{livePods: lister})
			pod, app, sidecar := a.addWebPod(t)
			lister.set([]podapi.PodState{{Pod: pod, Containers: []podapi.PodContainer{container("app", app), container("sidecar", sidecar)}}})
			if got := a.vswitch.names(); !slices.Equal(got, webInterfaces) {
				t.Fatalf("the vswitch holds %v, want %v", got, webInterfaces)
			}

			tc.remove(t, a, lister, pod)
			a.Barrier(t)
			a.assertWebPodRemoved(t, app, sidecar)

			// The pod manager's own DeletePod, arriving later, is harmless.
			a.Push(t, &podapi.DeletePod{Pod: pod})
			a.Barrier(t)
			a.assertWebPodRemoved(t, app, sidecar)
			for _, rec := range a.Controller.EventHistory(controllerapi.HistoryQuery{}) {
				if rec.Error != "" {
					t.Errorf("event #%d %s failed: %s", rec.SeqNum, rec.Description, rec.Error)
				}
			}
		})
	}
}

// assertWebPodRemoved checks that the web pod's interfaces are gone from
// the scheduler and the vswitch, deleted while their socket directories
// were still there, and that its allocations and directories are released.
func (a *testAgent) assertWebPodRemoved(t *testing.T, allocations ...*dmapi.AllocateDevice) {
	t.Helper()
	if interfaces := a.schedulerInterfaces(t); len(interfaces) != 0 {
		t.Errorf("the scheduler holds %v, want nothing", names(interfaces))
	}
	deletions := a.vswitch.deletions()
	var deleted []string
	for _, d := range deletions {
		deleted = append(deleted, d.name)
		if !d.socketDirPresent {
			t.Errorf("interface %s was deleted after its socket directory was removed", d.name)
		}
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, webInterfaces) {
		t.Errorf("the vswitch was told to delete %v, want %v once each", deleted, webInterfaces)
	}
	if held := a.DeviceManager.ListAllocations(); len(held) != 0 {
		t.Errorf("the device manager holds %v, want the allocations released", held)
	}
	for _, allocation := range allocations {
		dir := allocation.Mounts[0].HostPath
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("socket directory %s: %v, want it removed", dir, err)
		}
	}
}

// kubelet handed the web pod's app device to a new container: the app
// interface is deleted while its directory is still there, then the
// directory goes; the sidecar's memif is left alone.
func TestTakenOverMemifLosesItsInterfaceBeforeItsDirectory(t *testing.T) {
	a := startAgent(t)
	_, app, sidecar := a.addWebPod(t)

	taker := a.allocate(t, "memif-000")
	a.Barrier(t)

	if got := a.vswitch.names(); !slices.Equal(got, []string{sidecarInterface}) {
		t.Errorf("the vswitch holds %v, want the sidecar's interface alone", got)
	}
	deletions := a.vswitch.deletions()
	if len(deletions) != 1 || deletions[0].name != appInterface || !deletions[0].socketDirPresent {
		t.Errorf("the vswitch deletions = %+v, want %s once, before its directory was removed", deletions, appInterface)
	}
	if _, err := os.Stat(app.Mounts[0].HostPath); !os.IsNotExist(err) {
		t.Errorf("the taken over directory %s: %v, want it removed", app.Mounts[0].HostPath, err)
	}
	for _, kept := range []*dmapi.AllocateDevice{sidecar, taker} {
		if _, err := os.Stat(kept.Mounts[0].HostPath); err != nil {
			t.Errorf("directory %s: %v, want it kept", kept.Mounts[0].HostPath, err)
		}
	}
	var held []string
	for _, memif := range a.DeviceManager.ListAllocations() {
		held = append(held, memif.AllocationID)
	}
	slices.Sort(held)
	want := []string{sidecar.AllocationID, taker.AllocationID}
	slices.Sort(want)
	if !slices.Equal(held, want) {
		t.Errorf("the device manager holds %v, want the sidecar's and the taker's %v", held, want)
	}
}
