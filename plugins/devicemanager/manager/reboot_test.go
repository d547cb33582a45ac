package manager_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
)

// kubeletAnswer is the answer the agent would have given for the
// allocation id of device, as kubelet keeps it in its checkpoint.
func kubeletAnswer(cfg config.Config, pod, device, id, secret string) fakekubelet.CheckpointEntry {
	dir := filepath.Join(cfg.SocketRoot, id)
	return fakekubelet.CheckpointEntry{
		PodUID: pod, ContainerName: "c0", ResourceName: cfg.ResourceName, DeviceIDs: map[string][]string{"-1": {device}},
		Answer: &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{dmapi.EnvMemifSocket: cfg.ContainerSocket(), dmapi.EnvMemifSecret: secret},
			Annotations: map[string]string{dmapi.AnnotationSocketHost: cfg.HostSocket(dir), dmapi.AnnotationSocketContainer: cfg.ContainerSocket(), dmapi.AnnotationSecret: secret},
			Mounts:      []*pluginapi.Mount{{HostPath: dir, ContainerPath: cfg.ContainerDir}},
		},
	}
}

// TestRecoveryFromKubeletAfterANodeRestart: kubelet's device checkpoint
// holds the answers its containers got. After a node restart (the
// checkpoint marked in another boot) the agent takes back those its own
// checkpoint lost, kubelet's answer winning over an allocation holding
// the same device that kubelet does not list, and skips an answer that is
// not its own, one whose devices an allocation kubelet lists holds (an
// init container's, handed on), and lost answers that share a device.
// An unbound allocation kubelet lists gets its grace again. Restarted in
// the same boot, or with a checkpoint never marked (an agent of before,
// which synced every change), it recovers nothing.
func TestRecoveryFromKubeletAfterANodeRestart(t *testing.T) {
	const (
		anotherBoot = "another-boot"
		sameBoot    = "same"
		neverMarked = ""
	)
	// Before the restart the agent allocated kept (memif-000) and stale
	// (memif-001); kubelet's checkpoint then holds what each case says.
	lostC := func(cfg config.Config) fakekubelet.CheckpointEntry {
		return kubeletAnswer(cfg, "pod-c", "memif-002", "memif-002-0000000c", "secret-c")
	}
	overStale := func(cfg config.Config) fakekubelet.CheckpointEntry {
		return kubeletAnswer(cfg, "pod-d", "memif-001", "memif-001-0000000d", "secret-d")
	}
	notOurs := func(cfg config.Config) fakekubelet.CheckpointEntry {
		return fakekubelet.CheckpointEntry{PodUID: "pod-e", ContainerName: "c0", ResourceName: cfg.ResourceName, DeviceIDs: map[string][]string{"-1": {"memif-003"}},
			Answer: &pluginapi.ContainerAllocateResponse{Mounts: []*pluginapi.Mount{{HostPath: "/elsewhere/memif-003-0000000e", ContainerPath: cfg.ContainerDir}}}}
	}
	for _, tc := range []struct {
		name string
		boot string
		// kubelet is what kubelet's checkpoint holds besides kept's answer.
		kubelet func(cfg config.Config) []fakekubelet.CheckpointEntry
		// want are the allocations held after the restart, by ID.
		want func(kept, stale string) []string
		// graceAgain: kept, unbound, gets its grace again.
		graceAgain bool
	}{
		{"rebooted", anotherBoot, func(cfg config.Config) []fakekubelet.CheckpointEntry {
			return []fakekubelet.CheckpointEntry{lostC(cfg), overStale(cfg), notOurs(cfg)}
		}, func(kept, _ string) []string { return []string{kept, "memif-001-0000000d", "memif-002-0000000c"} }, true},
		{"same boot", sameBoot, func(cfg config.Config) []fakekubelet.CheckpointEntry {
			return []fakekubelet.CheckpointEntry{lostC(cfg), overStale(cfg)}
		}, func(kept, stale string) []string { return []string{kept, stale} }, false},
		{"never marked", neverMarked, func(cfg config.Config) []fakekubelet.CheckpointEntry {
			return []fakekubelet.CheckpointEntry{lostC(cfg), overStale(cfg)}
		}, func(kept, stale string) []string { return []string{kept, stale} }, false},
		{"handed on", anotherBoot, func(cfg config.Config) []fakekubelet.CheckpointEntry {
			init := kubeletAnswer(cfg, "pod-a", "memif-000", "memif-000-0000000a", "secret-init")
			init.ContainerName = "init"
			return []fakekubelet.CheckpointEntry{init}
		}, func(kept, stale string) []string { return []string{kept, stale} }, true},
		{"lost rivals", anotherBoot, func(cfg config.Config) []fakekubelet.CheckpointEntry {
			init := kubeletAnswer(cfg, "pod-f", "memif-004", "memif-004-0000000f", "secret-init")
			init.ContainerName = "init"
			return []fakekubelet.CheckpointEntry{init, kubeletAnswer(cfg, "pod-f", "memif-004", "memif-004-000000ff", "secret-f")}
		}, func(kept, stale string) []string { return []string{kept, stale} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			first := startAgent(t, cfg, nil)
			if _, err := allocate(first, []string{"memif-000"}); err != nil {
				t.Fatal(err)
			}
			if _, err := allocate(first, []string{"memif-001"}); err != nil {
				t.Fatal(err)
			}
			before := first.dm.ListAllocations()
			first.stop()
			kept, stale := before[0], before[1]
			fakekubelet.WriteCheckpoint(t, cfg.PluginDir,
				append(tc.kubelet(cfg), kubeletAnswer(cfg, "pod-a", "memif-000", kept.AllocationID, kept.Secret))...)
			bootPath := cfg.CheckpointPath + ".boot"
			switch tc.boot {
			case anotherBoot:
				if err := os.WriteFile(bootPath, []byte(anotherBoot+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			case neverMarked:
				if err := os.Remove(bootPath); err != nil {
					t.Fatal(err)
				}
			}
			second := startAgent(t, cfg, nil)
			held := map[string]dmapi.MemifInfo{}
			for _, info := range second.dm.ListAllocations() {
				held[info.AllocationID] = info
			}
			want := tc.want(kept.AllocationID, stale.AllocationID)
			if got := slices.Sorted(maps.Keys(held)); !slices.Equal(got, want) {
				t.Fatalf("after the restart the agent holds %v, want %v", got, want)
			}
			if c, ok := held["memif-002-0000000c"]; ok && (c.Secret != "secret-c" || !slices.Equal(c.DeviceIDs, []string{"memif-002"})) {
				t.Errorf("recovered allocation %+v, want kubelet's secret and device memif-002", c)
			}
			if again := held[kept.AllocationID].AllocatedAt.After(kept.AllocatedAt); again != tc.graceAgain {
				t.Errorf("kept allocation's time %s, before the restart %s: grace started again %v, want %v", held[kept.AllocationID].AllocatedAt, kept.AllocatedAt, again, tc.graceAgain)
			}
			for id := range held {
				if info, err := os.Stat(filepath.Join(cfg.SocketRoot, id)); err != nil || !info.IsDir() {
					t.Errorf("directory of %s: %v, %v", id, info, err)
				}
			}
			boot, err := os.ReadFile(bootPath)
			current, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
			if err != nil || string(boot) != string(current) {
				t.Errorf("the checkpoint's boot is %q (%v), want this boot's %q", boot, err, current)
			}
		})
	}
}
