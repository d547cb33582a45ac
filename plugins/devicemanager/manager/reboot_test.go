package manager_test

import (
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
// the same device, and skips an answer that is not its own; restarted in
// the same boot, it loses nothing and recovers nothing.
func TestRecoveryFromKubeletAfterANodeRestart(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rebooted bool
		// want are the allocations held after the restart, by ID.
		want func(kept, stale string) []string
	}{
		{"rebooted", true, func(kept, _ string) []string { return []string{kept, "memif-001-0000000d", "memif-002-0000000c"} }},
		{"same boot", false, func(kept, stale string) []string { return []string{kept, stale} }},
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
				kubeletAnswer(cfg, "pod-a", "memif-000", kept.AllocationID, kept.Secret),
				kubeletAnswer(cfg, "pod-c", "memif-002", "memif-002-0000000c", "secret-c"),
				kubeletAnswer(cfg, "pod-d", "memif-001", "memif-001-0000000d", "secret-d"),
				fakekubelet.CheckpointEntry{PodUID: "pod-e", ContainerName: "c0", ResourceName: cfg.ResourceName, DeviceIDs: map[string][]string{"-1": {"memif-003"}},
					Answer: &pluginapi.ContainerAllocateResponse{Mounts: []*pluginapi.Mount{{HostPath: "/elsewhere/memif-003-0000000e", ContainerPath: cfg.ContainerDir}}}},
			)
			if tc.rebooted {
				if err := os.WriteFile(cfg.CheckpointPath+".boot", []byte("another-boot\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			second := startAgent(t, cfg, nil)
			held := map[string]dmapi.MemifInfo{}
			for _, info := range second.dm.ListAllocations() {
				held[info.AllocationID] = info
			}
			want := tc.want(kept.AllocationID, stale.AllocationID)
			if got := slices.Sorted(func(yield func(string) bool) {
				for id := range held {
					if !yield(id) {
						return
					}
				}
			}); !slices.Equal(got, want) {
				t.Fatalf("after the restart the agent holds %v, want %v", got, want)
			}
			if tc.rebooted {
				if c := held["memif-002-0000000c"]; c.Secret != "secret-c" || !slices.Equal(c.DeviceIDs, []string{"memif-002"}) {
					t.Errorf("recovered allocation %+v, want kubelet's secret and device memif-002", c)
				}
			}
			for id := range held {
				if info, err := os.Stat(filepath.Join(cfg.SocketRoot, id)); err != nil || !info.IsDir() {
					t.Errorf("directory of %s: %v, %v", id, info, err)
				}
			}
			boot, err := os.ReadFile(cfg.CheckpointPath + ".boot")
			current, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
			if err != nil || string(boot) != string(current) {
				t.Errorf("the checkpoint's boot is %q (%v), want this boot's %q", boot, err, current)
			}
		})
	}
}
