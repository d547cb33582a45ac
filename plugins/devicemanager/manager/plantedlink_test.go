package manager_test

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// dirGroup is the dir-group of the test: a group every Debian machine has.
const dirGroup, dirGroupID = "nogroup", 65534

// TestLinkAtAllocationPathSkipped: a dir-group member, who may write in a
// socket root of mode 0770, replaces an allocation's directory with a
// link. Before, every resync failed on it and the agent stayed unready
// until the link went. Now the resync reports and counts that one path,
// follows nothing, leaves the link, still re-creates the other
// allocations' directories, and the event loop stays healthy: after a
// requested resync and after a restart.
func TestLinkAtAllocationPathSkipped(t *testing.T) {
	cases := []struct {
		name    string
		restart bool
	}{
		{"resync", false},
		{"restart", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DirGroup = dirGroup
			if err := os.Mkdir(cfg.SocketRoot, 0o770); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(cfg.SocketRoot, 0, dirGroupID); err != nil {
				t.Fatal(err)
			}
			registry := prometheus.NewRegistry()
			a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t), Metrics: registry})
			response, err := allocate(a, []string{"memif-000"}, []string{"memif-001"})
			if err != nil {
				t.Fatal(err)
			}
			linked, emptied := response.ContainerResponses[0].Mounts[0].HostPath, response.ContainerResponses[1].Mounts[0].HostPath
			target := t.TempDir()
			if err := os.Chmod(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(linked); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, linked); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(emptied); err != nil {
				t.Fatal(err)
			}

			if tc.restart {
				a.stop()
				registry = prometheus.NewRegistry()
				a = startAgentWith(t, cfg, manager.Options{Log: testlog.New(t), Metrics: registry})
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				if err := a.loop.Resync(ctx); err != nil {
					t.Errorf("resync with a link at %s: %v, want it to succeed", linked, err)
				}
			}
			if health := a.loop.Health(); health.State != eventloop.Healthy {
				t.Errorf("event loop after the resync: %v (%v), want healthy", health.State, health.Err)
			}
			if dest, err := os.Readlink(linked); err != nil || dest != target {
				t.Errorf("the planted link is now %q, %v; want it left pointing at %s", dest, err, target)
			}
			var info syscall.Stat_t
			if err := syscall.Stat(target, &info); err != nil || info.Mode&0o777 != 0o755 || info.Gid != 0 {
				t.Errorf("the link's target: mode %#o gid %d (%v); want 0755 and gid 0, untouched", info.Mode&0o777, info.Gid, err)
			}
			if info, err := os.Lstat(emptied); err != nil || !info.IsDir() {
				t.Errorf("the other allocation's directory %s after the resync: %v, %v; want it re-created", emptied, info, err)
			}
			if got := errorCount(t, registry, "unusable-directory"); got != 1 {
				t.Errorf("errors counted as unusable-directory: %v, want 1", got)
			}
			if len(a.dm.ListAllocations()) != 2 {
				t.Errorf("allocations after the resync: %v, want both kept", a.dm.ListAllocations())
			}
		})
	}
}

// errorCount reads memif_device_manager_errors_total of kind.
func errorCount(t *testing.T, registry *prometheus.Registry, kind string) float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != "memif_device_manager_errors_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "kind" && label.GetValue() == kind {
					return metric.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
