package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

const waitLimit = 20 * time.Second

func testConfig(t testing.TB) config.Config {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DeviceCount = 8
	cfg.PluginDir = filepath.Join(dir, "device-plugins")
	cfg.SocketRoot = filepath.Join(dir, "memif")
	cfg.CheckpointPath = filepath.Join(dir, "state", "checkpoint.json")
	cfg.DeviceInfoDir = filepath.Join(dir, "devinfo", "dp")
	return cfg
}

// agent is the device manager with the real event loop and a stand-in
// kubelet registry.
type agent struct {
	dm       *manager.Manager
	loop     *eventloop.Loop
	registry *fakekubelet.Registry
	kubelet  pluginapi.DevicePluginClient
}

// startAgent runs the manager first among handlers, then the extra ones;
// tracker, when not nil, stands in for the pod tracker.
func startAgent(t testing.TB, cfg config.Config, tracker *fakepodtracker.Tracker, extra ...controllerapi.EventHandler) *agent {
	t.Helper()
	log := testlog.New(t)
	if _, benchmark := t.(*testing.B); benchmark {
		log = testlog.Discard() // a line per allocation would drown the figures
	}
	opts := manager.Options{Log: log}
	if tracker != nil {
		opts.LivePods = tracker
	}
	return startAgentWith(t, cfg, opts, extra...)
}

// startAgentWith runs the manager with opts first among handlers, then
// the extra ones.
func startAgentWith(t testing.TB, cfg config.Config, opts manager.Options, extra ...controllerapi.EventHandler) *agent {
	t.Helper()
	return startAgentSetUp(t, cfg, opts, func(*manager.Manager) {}, extra...)
}

// startAgentSetUp is startAgentWith calling setUp with the manager before
// it starts.
func startAgentSetUp(t testing.TB, cfg config.Config, opts manager.Options, setUp func(*manager.Manager), extra ...controllerapi.EventHandler) *agent {
	t.Helper()
	if err := os.MkdirAll(cfg.PluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	dm, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	setUp(dm)
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: append([]controllerapi.EventHandler{dm}, extra...), Committer: fakevswitch.Committer{}})
	if err != nil {
		t.Fatal(err)
	}
	if tracker, ok := opts.LivePods.(*fakepodtracker.Tracker); ok {
		tracker.Attach(loop)
	}
	loop.Start()
	registry, err := fakekubelet.Start(cfg.PluginDir, cfg.KubeletSocket)
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.Start(loop); err != nil {
		t.Fatal(err)
	}
	a := &agent{dm: dm, loop: loop, registry: registry}
	t.Cleanup(a.stop)
	select {
	case r := <-registry.Registrations():
		a.kubelet = r.Client
	case <-time.After(waitLimit):
		t.Fatal("the device manager did not register")
	}
	// The startup resync, which restores the checkpoint, runs on the loop
	// on its own; registration does not wait for it.
	poll.Until(t, waitLimit, "the startup resync", func() error {
		if state := loop.Health().State; state == eventloop.Starting {
			return errors.New("the loop is still starting")
		}
		return nil
	})
	return a
}

func (a *agent) stop() {
	a.dm.Stop()
	a.registry.Stop()
	a.loop.Close()
}

func allocate(a *agent, deviceIDs ...[]string) (*pluginapi.AllocateResponse, error) {
	request := &pluginapi.AllocateRequest{}
	for _, ids := range deviceIDs {
		request.ContainerRequests = append(request.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return a.kubelet.Allocate(ctx, request)
}

func TestAllocate(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil)
	response, err := allocate(a, []string{"memif-000"}, []string{"memif-001", "memif-002"})
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if len(response.ContainerResponses) != 2 {
		t.Fatalf("Allocate gave %d container responses, want 2", len(response.ContainerResponses))
	}
	persisted, err := checkpoint.Load(cfg.CheckpointPath)
	if err != nil || len(persisted.Allocations) != 2 {
		t.Fatalf("checkpoint after Allocate = %+v, %v; want 2 allocations", persisted, err)
	}
	seenDirs, seenSecrets := map[string]bool{}, map[string]bool{}
	for i, c := range response.ContainerResponses {
		secret := c.Envs[dmapi.EnvMemifSecret]
		if c.Envs[dmapi.EnvMemifSocket] != "/run/vpp/memif.sock" || len(secret) != 23 {
			t.Errorf("container %d envs = %v", i, c.Envs)
		}
		if len(c.Mounts) != 1 || c.Mounts[0].ContainerPath != "/run/vpp" || filepath.Dir(c.Mounts[0].HostPath) != cfg.SocketRoot {
			t.Fatalf("container %d mounts = %v", i, c.Mounts)
		}
		hostDir := c.Mounts[0].HostPath
		wantAnnotations := map[string]string{
			dmapi.AnnotationSocketHost:      filepath.Join(hostDir, "memif.sock"),
			dmapi.AnnotationSocketContainer: "/run/vpp/memif.sock",
			dmapi.AnnotationSecret:          secret,
		}
		for key, want := range wantAnnotations {
			if c.Annotations[key] != want {
				t.Errorf("container %d annotation %s = %q, want %q", i, key, c.Annotations[key], want)
			}
		}
		info, err := os.Stat(hostDir)
		if err != nil || !info.IsDir() || info.Mode().Perm() != 0o770 {
			t.Errorf("container %d host dir %s = %v, %v; want a directory of mode 0770", i, hostDir, info, err)
		}
		if seenDirs[hostDir] || seenSecrets[secret] {
			t.Errorf("container %d shares a directory or secret with another container", i)
		}
		seenDirs[hostDir], seenSecrets[secret] = true, true
	}
	if list := a.dm.ListAllocations(); len(list) != 2 {
		t.Errorf("ListAllocations = %v, want 2", list)
	}
	info, err := os.Stat(cfg.CheckpointPath)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint file = %v, %v; want mode 0600", info, err)
	}
}

func TestAllocateRefusals(t *testing.T) {
	cases := []struct {
		name     string
		request  [][]string
		breakDir bool
		wantCode codes.Code
		wantMsg  string
	}{
		{"empty device list", [][]string{{}}, false, codes.InvalidArgument, "holds no device ID"},
		{"unknown device", [][]string{{"memif-000", "memif-777"}}, false, codes.InvalidArgument, "[memif-777] are not devices of contivpp.io/memif"},
		{"device twice", [][]string{{"memif-003", "memif-003"}}, false, codes.InvalidArgument, "appear more than once"},
		{"more devices than exist", [][]string{{"memif-000", "memif-001", "memif-002", "memif-003", "memif-004", "memif-005", "memif-006", "memif-007", "memif-008"}}, false, codes.InvalidArgument, "asks for 9 devices, the node has 8"},
		{"directory cannot be made", [][]string{{"memif-005"}}, true, codes.Internal, "allocation directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			a := startAgent(t, cfg, nil)
			if _, err := allocate(a, []string{"memif-000"}); err != nil {
				t.Fatal(err)
			}
			if tc.breakDir {
				if err := os.RemoveAll(cfg.SocketRoot); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg.SocketRoot, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			response, err := allocate(a, tc.request...)
			if status.Code(err) != tc.wantCode || response != nil {
				t.Fatalf("Allocate = %v, %v; want code %s", response, err, tc.wantCode)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("Allocate message = %q, want %q", msg, tc.wantMsg)
			}
			if list := a.dm.ListAllocations(); len(list) != 1 {
				t.Errorf("after a refused Allocate the manager holds %d allocations, want 1", len(list))
			}
			if persisted, err := checkpoint.Load(cfg.CheckpointPath); err != nil || len(persisted.Allocations) != 1 {
				t.Errorf("checkpoint after a refused Allocate = %+v, %v", persisted, err)
			}
		})
	}
}

func TestRestartKeepsAllocations(t *testing.T) {
	cfg := testConfig(t)
	first := startAgent(t, cfg, nil)
	response, err := allocate(first, []string{"memif-000"}, []string{"memif-001"})
	if err != nil {
		t.Fatal(err)
	}
	before := first.dm.ListAllocations()
	first.stop()
	// A reboot empties the socket root; the restart re-creates the
	// directories of kept allocations.
	if err := os.RemoveAll(cfg.SocketRoot); err != nil {
		t.Fatal(err)
	}

	second := startAgent(t, cfg, nil)
	after := second.dm.ListAllocations()
	if len(after) != len(before) {
		t.Fatalf("after a restart the manager holds %v, want %v", after, before)
	}
	for i := range before {
		if after[i].AllocationID != before[i].AllocationID || after[i].Secret != before[i].Secret || after[i].HostSocket != before[i].HostSocket {
			t.Errorf("allocation %d changed across the restart: %v -> %v", i, before[i], after[i])
		}
	}
	for _, c := range response.ContainerResponses {
		if info, err := os.Stat(c.Mounts[0].HostPath); err != nil || info.Mode().Perm() != 0o770 {
			t.Errorf("directory %s after restart = %v, %v", c.Mounts[0].HostPath, info, err)
		}
	}
	if held := second.dm.ListAllocations(); !slices.ContainsFunc(held, func(m dmapi.MemifInfo) bool { return slices.Contains(m.DeviceIDs, "memif-001") }) {
		t.Errorf("memif-001 is free after the restart: %v", held)
	}
}

func TestCorruptCheckpointIsSurvived(t *testing.T) {
	cfg := testConfig(t)
	if err := os.MkdirAll(filepath.Dir(cfg.CheckpointPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.CheckpointPath, []byte(`{"version":1,"data":{"allocations":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, cfg, nil)
	if list := a.dm.ListAllocations(); len(list) != 0 {
		t.Errorf("with a corrupt checkpoint the manager holds %v, want nothing", list)
	}
	aside, _ := filepath.Glob(cfg.CheckpointPath + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt checkpoint kept as %v, want one file", aside)
	}
	if content, err := os.ReadFile(aside[0]); err != nil || !strings.HasPrefix(string(content), `{"version":1`) {
		t.Errorf("kept file = %q, %v; want the corrupt content", content, err)
	}
	if _, err := allocate(a, []string{"memif-000"}); err != nil {
		t.Errorf("Allocate after a corrupt checkpoint: %v", err)
	}
}

func TestPodBindingAndRelease(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil)
	response, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	hostDir := response.ContainerResponses[0].Mounts[0].HostPath
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-1"}

	if _, err := a.dm.GetPodMemifInfo(pod.ID); !errors.Is(err, dmapi.ErrNoMemif) {
		t.Fatalf("GetPodMemifInfo before binding = %v, want ErrNoMemif", err)
	}
	push(t, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{hostDir}}}})
	info, err := a.dm.GetPodMemifInfo(pod.ID)
	if err != nil || info.HostDir != hostDir || info.ContainerName != "app" || info.Secret != response.ContainerResponses[0].Envs[dmapi.EnvMemifSecret] {
		t.Fatalf("GetPodMemifInfo = %v, %v; want the allocation of %s", info, err, hostDir)
	}
	if persisted, _ := checkpoint.Load(cfg.CheckpointPath); persisted.Allocations[0].PodName != "web" {
		t.Errorf("the binding is not in the checkpoint: %+v", persisted)
	}

	push(t, a, &podapi.DeletePod{Pod: pod})
	if _, err := a.dm.GetPodMemifInfo(pod.ID); !errors.Is(err, dmapi.ErrNoMemif) {
		t.Errorf("GetPodMemifInfo after DeletePod = %v, want ErrNoMemif", err)
	}
	if _, err := os.Stat(hostDir); !os.IsNotExist(err) {
		t.Errorf("directory %s after DeletePod: %v, want it removed", hostDir, err)
	}
	if _, err := allocate(a, []string{"memif-000"}); err != nil {
		t.Errorf("the released device cannot be allocated again: %v", err)
	}
}

// TestLookupBeforeTheCheckpointIsRestored asks a restarted manager, whose
// startup resync has not run yet, for a bound pod's memif: its state is
// still empty, and it must not answer that the pod has no memif. Once the
// loop has run the startup resync, the lookup answers the binding the
// checkpoint kept.
func TestLookupBeforeTheCheckpointIsRestored(t *testing.T) {
	cfg := testConfig(t)
	first := startAgent(t, cfg, nil)
	response, err := allocate(first, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-1"}
	push(t, first, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{response.ContainerResponses[0].Mounts[0].HostPath}}}})
	before, err := first.dm.GetPodMemifInfo(pod.ID)
	if err != nil {
		t.Fatal(err)
	}
	first.stop()

	second, err := manager.New(cfg, manager.Options{Log: testlog.New(t), LookupTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.GetPodMemifInfo(pod.ID); err == nil || errors.Is(err, dmapi.ErrNoMemif) {
		t.Errorf("GetPodMemifInfo before the startup resync = %v, want an error saying the checkpoint is not restored yet", err)
	}
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: []controllerapi.EventHandler{second}, Committer: fakevswitch.Committer{}})
	if err != nil {
		t.Fatal(err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := loop.Resync(ctx); err != nil { // the startup resync runs before it
		t.Fatal(err)
	}
	after, err := second.GetPodMemifInfo(pod.ID)
	if err != nil || after.AllocationID != before.AllocationID || after.Secret != before.Secret || after.PodUID != before.PodUID {
		t.Errorf("GetPodMemifInfo after the startup resync = %v, %v; want the binding from before the restart (%v)", after, err, before)
	}
}

// push runs a non-blocking event and then a resync, which the loop runs
// after it: when the resync is done, so is the event.
func push(t testing.TB, a *agent, event controllerapi.Event) {
	t.Helper()
	if err := a.loop.PushEvent(event); err != nil {
		t.Fatal(err)
	}
	resync(t, a)
}

// resync runs a full resync and waits for it: the events queued before it
// have run.
func resync(t testing.TB, a *agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := a.loop.Resync(ctx); err != nil {
		t.Fatalf("resync: %v", err)
	}
}

func TestResyncCollectsGonePods(t *testing.T) {
	cfg := testConfig(t)
	tracker := fakepodtracker.New(false)
	first := startAgent(t, cfg, tracker)
	response, err := allocate(first, []string{"memif-000"}, []string{"memif-001"})
	if err != nil {
		t.Fatal(err)
	}
	live := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "live"}, UID: "u-live"}
	gone := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "gone"}, UID: "u-gone"}
	liveDir, goneDir := response.ContainerResponses[0].Mounts[0].HostPath, response.ContainerResponses[1].Mounts[0].HostPath
	livePod := podapi.PodState{Pod: live, Containers: []podapi.PodContainer{{Name: "c", MountSources: []string{liveDir}}}}
	tracker.Set(livePod, podapi.PodState{Pod: gone, Containers: []podapi.PodContainer{{Name: "c", DeviceIDs: map[string][]string{cfg.ResourceName: {"memif-001"}}}}})
	push(t, first, tracker.Decision())
	before, _ := first.dm.GetPodMemifInfo(live.ID)
	first.stop()

	tracker.Set(livePod) // the gone pod died while the agent was down
	second := startAgent(t, cfg, tracker)
	// The startup resync asks the tracker for its decision, whose
	// DeletePod follow-up releases the gone pod.
	waitFor(t, "the gone pod's directory is removed", func() bool {
		_, err := os.Stat(goneDir)
		return os.IsNotExist(err)
	})
	after, err := second.dm.GetPodMemifInfo(live.ID)
	if err != nil || after.Secret != before.Secret || after.HostSocket != before.HostSocket {
		t.Errorf("live pod's memif after restart = %v, %v; want the same as before (%v)", after, err, before)
	}
	if _, err := second.dm.GetPodMemifInfo(gone.ID); !errors.Is(err, dmapi.ErrNoMemif) {
		t.Errorf("gone pod's memif after restart = %v, want ErrNoMemif", err)
	}
	if _, err := os.Stat(goneDir); !os.IsNotExist(err) {
		t.Errorf("gone pod's directory %s: %v, want it removed", goneDir, err)
	}
}

func TestFailedCallReleasesEarlierContainers(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil)
	_, err := allocate(a, []string{"memif-000"}, []string{"memif-999"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "container request 2 of 2") {
		t.Fatalf("Allocate = %v, want InvalidArgument for the second container", err)
	}
	resync(t, a) // runs after the release
	if list := a.dm.ListAllocations(); len(list) != 0 {
		t.Errorf("the first container's allocation outlived the failed call: %v", list)
	}
	if entries, _ := os.ReadDir(cfg.SocketRoot); len(entries) != 0 {
		t.Errorf("socket root still holds %d directories", len(entries))
	}
	if _, err := allocate(a, []string{"memif-000"}); err != nil {
		t.Errorf("the device of the failed call cannot be allocated: %v", err)
	}
}

// The device manager releases a pod's allocations on the pod tracker's
// decision alone: a LivePods without the pod (its DeletePod missed), and
// nothing while no source answers or while the tracker still has the pod
// alive (kubelet holds it while the runtime is down).
func TestReleaseOnTrackerDecision(t *testing.T) {
	errDown := errors.New("no pod source answers: runtime: down; kubelet: down")
	tests := []struct {
		name string
		// decide changes the tracker once the pod is bound.
		decide       func(tracker *fakepodtracker.Tracker, held podapi.PodState)
		wantReleased bool
	}{
		{name: "gone", wantReleased: true,
			decide: func(tracker *fakepodtracker.Tracker, _ podapi.PodState) { tracker.Set() }},
		{name: "alive",
			decide: func(tracker *fakepodtracker.Tracker, held podapi.PodState) { tracker.Set(held) }},
		{name: "no source",
			decide: func(tracker *fakepodtracker.Tracker, _ podapi.PodState) { tracker.Set(); tracker.SetDown(errDown) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tracker := fakepodtracker.New(true)
			a := startAgent(t, cfg, tracker)
			response, err := allocate(a, []string{"memif-000"})
			if err != nil {
				t.Fatal(err)
			}
			pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "u"}
			hostDir := response.ContainerResponses[0].Mounts[0].HostPath
			held := podapi.PodState{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{hostDir},
				DeviceIDs: map[string][]string{cfg.ResourceName: {"memif-000"}}}}}
			tracker.Set(held)
			push(t, a, &podapi.AddPod{Pod: pod, Containers: held.Containers})
			if _, err := a.dm.GetPodMemifInfo(pod.ID); err != nil {
				t.Fatalf("the pod is not bound: %v", err)
			}

			tc.decide(tracker, held)
			resync(t, a) // asks the tracker for its decision
			resync(t, a) // runs after it
			if !tc.wantReleased {
				if _, err := a.dm.GetPodMemifInfo(pod.ID); err != nil {
					t.Errorf("the pod's memif after the decision: %v, want it kept", err)
				}
				if _, err := os.Stat(hostDir); err != nil {
					t.Errorf("the pod's directory: %v, want it kept", err)
				}
				return
			}
			// The state forgets the allocation first; its directory goes
			// right after, outside the state's lock.
			waitFor(t, "the allocation and its directory are released", func() bool {
				_, lookupErr := a.dm.GetPodMemifInfo(pod.ID)
				_, statErr := os.Stat(hostDir)
				return lookupErr != nil && os.IsNotExist(statErr)
			})
		})
	}
}

// The device manager is not ready while the pod tracker says no pod source
// answers, and is again once one does.
func TestNotReadyWithoutPodSource(t *testing.T) {
	tracker := fakepodtracker.New(true)
	a := startAgent(t, testConfig(t), tracker)
	poll.Until(t, waitLimit, "the device manager is ready", a.dm.Ready)
	down := errors.New("no pod source answers: runtime: down; kubelet: down")
	tracker.SetDown(down)
	if err := a.dm.Ready(); !errors.Is(err, down) {
		t.Errorf("Ready with no pod source = %v, want %v", err, down)
	}
	if !a.dm.WasReady() {
		t.Error("WasReady = false after the manager was ready")
	}
	tracker.SetDown(nil)
	if err := a.dm.Ready(); err != nil {
		t.Errorf("Ready once a source answers again = %v", err)
	}
}

func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	poll.Until(t, waitLimit, "waiting until "+what, func() error {
		if !done() {
			return errors.New("not yet")
		}
		return nil
	})
}

// failingWiring stands in for a sibling handler (the vswitch wiring) that
// fails every AllocateDevice after the device manager made the allocation.
type failingWiring struct{}

var errWiring = errors.New("vswitch refused the memif")

func (failingWiring) String() string { return "failing-wiring" }
func (failingWiring) HandlesEvent(event controllerapi.Event) bool {
	_, allocate := event.(*dmapi.AllocateDevice)
	return allocate
}
func (failingWiring) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}
func (failingWiring) Update(controllerapi.Event, controllerapi.EventOperations) (string, error) {
	return "", errWiring
}
func (failingWiring) Revert(controllerapi.Event) error { return nil }

func TestRevertRemovesTheAllocation(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil, failingWiring{})
	_, err := allocate(a, []string{"memif-000"})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), errWiring.Error()) {
		t.Fatalf("Allocate = %v, want Internal with the sibling's error", err)
	}
	if list := a.dm.ListAllocations(); len(list) != 0 {
		t.Errorf("a reverted allocation is still held: %v", list)
	}
	if entries, _ := os.ReadDir(cfg.SocketRoot); len(entries) != 0 {
		t.Errorf("a reverted allocation left %d directories", len(entries))
	}
	if persisted, err := checkpoint.Load(cfg.CheckpointPath); err != nil || len(persisted.Allocations) != 0 {
		t.Errorf("checkpoint after revert = %+v, %v; want no allocation", persisted, err)
	}
}

// TestAdmittedPodBindingLearnsUID is the order seen on a busy node: the pod
// tracker announces a pod kubelet has admitted before its container exists
// (pod-resources gives no UID, so the allocation is bound by device IDs
// alone), then announces it again once Docker shows it with its UID.
func TestAdmittedPodBindingLearnsUID(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil)
	response, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	hostDir := response.ContainerResponses[0].Mounts[0].HostPath
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-1"}
	devices := map[string][]string{cfg.ResourceName: {"memif-000"}}

	push(t, a, &podapi.AddPod{Pod: podapi.Pod{ID: pod.ID}, Containers: []podapi.PodContainer{{Name: "app", DeviceIDs: devices}}})
	push(t, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{hostDir}, DeviceIDs: devices}}})

	info, err := a.dm.GetPodMemifInfo(pod.ID)
	if err != nil || info.PodUID != pod.UID {
		t.Fatalf("GetPodMemifInfo = %v (uid %q), %v; want it bound to uid %s", info, info.PodUID, err, pod.UID)
	}
	if persisted, _ := checkpoint.Load(cfg.CheckpointPath); persisted.Allocations[0].PodUID != pod.UID {
		t.Errorf("the checkpoint holds uid %q, want %s: %+v", persisted.Allocations[0].PodUID, pod.UID, persisted)
	}
}

// bindingResolver is the pod tracker's PodResolver as the event loop races
// it: while it asks the runtime and kubelet about the pod, the loop binds
// the pod's allocation; then it answers the pod as kubelet lists it.
type bindingResolver struct {
	bind   func()
	answer podapi.PodState
}

func (r *bindingResolver) ResolvePod(_ context.Context, pod podapi.PodID) (podapi.PodState, bool, error) {
	r.bind()
	return r.answer, pod == r.answer.Pod.ID, nil
}

func TestLookupWhileTheLoopBindsThePod(t *testing.T) {
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-1"}
	resolver := &bindingResolver{answer: podapi.PodState{Pod: podapi.Pod{ID: pod.ID}, Containers: []podapi.PodContainer{
		{Name: "app", DeviceIDs: map[string][]string{dmapi.DefaultResourceName: {"memif-000"}}},
	}}}
	a := startAgentWith(t, testConfig(t), manager.Options{Log: testlog.New(t), PodResolver: resolver})
	response, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	hostDir := response.ContainerResponses[0].Mounts[0].HostPath
	resolver.bind = func() {
		push(t, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{hostDir}}}})
	}
	info, err := a.dm.GetPodMemifInfo(pod.ID)
	if err != nil || info.HostDir != hostDir || info.PodUID != pod.UID {
		t.Errorf("GetPodMemifInfo while the loop binds the pod = %v, %v; want the allocation of %s bound to %s", info, err, hostDir, pod.UID)
	}
}
