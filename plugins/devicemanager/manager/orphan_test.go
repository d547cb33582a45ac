package manager_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
)

// A directory under the socket root that no checkpointed allocation holds
// is from an Allocate a crash cut short before it was recorded, or from an
// allocation whose record was lost to damage, which a pod may still use.
// The agent keeps it until kubelet's pod-resources shows no pod holding
// its device nor mounting it; without pod-resources it keeps it.
func TestUnexplainedDirectories(t *testing.T) {
	orphanDevice := "memif-001"
	holding := []podapi.PodState{{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "u1"},
		Containers: []podapi.PodContainer{{Name: "app", DeviceIDs: map[string][]string{"contivpp.io/memif": {orphanDevice}}}}}}
	cases := []struct {
		name        string // short: the fake kubelet's socket path holds it
		checkpoint  string // "": the checkpoint the first agent wrote
		tracker     *fakepodtracker.Tracker
		wantRemoved bool
	}{
		{name: "no tracker", wantRemoved: false},
		{name: "no devices", tracker: fakepodtracker.New(false), wantRemoved: false},
		{name: "device free", tracker: fakepodtracker.New(true), wantRemoved: true},
		{name: "device held", tracker: fakepodtracker.New(true, holding...), wantRemoved: false},
		{name: "lost, held", checkpoint: `{"version":2,"data":`, tracker: fakepodtracker.New(true, holding...), wantRemoved: false},
		{name: "lost, free", checkpoint: `{"version":2,"data":`, tracker: fakepodtracker.New(true), wantRemoved: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			first := startAgent(t, cfg, nil)
			response, err := allocate(first, []string{"memif-000"})
			if err != nil {
				t.Fatal(err)
			}
			kept := response.ContainerResponses[0].Mounts[0].HostPath
			first.stop()
			if tc.checkpoint != "" {
				if err := os.WriteFile(cfg.CheckpointPath, []byte(tc.checkpoint), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			orphan := filepath.Join(cfg.SocketRoot, orphanDevice+"-0badcafe")
			other := filepath.Join(cfg.SocketRoot, "vswitch-state")
			for _, dir := range []string{orphan, other} {
				if err := os.Mkdir(dir, 0o770); err != nil {
					t.Fatal(err)
				}
			}

			second := startAgent(t, cfg, tc.tracker)
			// The decision the startup resync asks for runs before this
			// resync.
			resync(t, second)
			if _, err := os.Stat(orphan); errors.Is(err, os.ErrNotExist) != tc.wantRemoved {
				t.Errorf("directory %s no allocation holds: stat = %v, want removed %v", orphan, err, tc.wantRemoved)
			}
			for _, dir := range []string{kept, other} {
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("directory %s not left alone: %v", dir, err)
				}
			}
		})
	}
}

// TestUnexplainedDirectoryRecovered: the checkpoint lost an allocation
// whose pod runs. The container that mounts its directory carries what
// kubelet handed it (the socket paths and the secret), so the allocation
// is rebuilt from it, bound to the pod, and persisted: the pod keeps its
// memif and the vswitch side can be wired again with the same secret.
func TestUnexplainedDirectoryRecovered(t *testing.T) {
	cfg := testConfig(t)
	first := startAgent(t, cfg, nil)
	response, err := allocate(first, []string{"memif-003"})
	if err != nil {
		t.Fatal(err)
	}
	granted := response.ContainerResponses[0]
	first.stop()
	if err := os.Remove(cfg.CheckpointPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg.CheckpointPath + ".journal"); err != nil {
		t.Fatal(err)
	}
	dir := granted.Mounts[0].HostPath
	pod := podapi.PodState{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "u1"},
		Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{dir}, Annotations: granted.Annotations,
			DeviceIDs: map[string][]string{cfg.ResourceName: {"memif-003"}}}}}
	second := startAgent(t, cfg, fakepodtracker.New(true, pod))
	resync(t, second) // runs after the decision the startup resync asked for
	list := second.dm.ListAllocations()
	if len(list) != 1 || list[0].HostDir != dir || list[0].Secret != granted.Envs["MEMIF_SECRET"] || list[0].Pod != pod.Pod.ID {
		t.Fatalf("after the checkpoint was lost the manager holds %+v; want the allocation of %s recovered from its container, bound to %s", list, dir, pod.Pod)
	}
	if persisted, err := checkpoint.Load(cfg.CheckpointPath); err != nil || len(persisted.Allocations) != 1 {
		t.Errorf("checkpoint after the recovery: %+v, %v; want the recovered allocation", persisted, err)
	}
}
