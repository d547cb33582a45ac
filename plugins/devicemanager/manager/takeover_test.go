package manager_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// takeovers reads memif_device_manager_takeovers_total by holder kind.
func takeovers(t *testing.T, registry *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, family := range families {
		if family.GetName() != "memif_device_manager_takeovers_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			counts[metric.GetLabel()[0].GetValue()] = metric.GetCounter().GetValue()
		}
	}
	return counts
}

// kubelet hands a device to a new container only once it has freed it: an
// Allocate naming a held device releases the holder and is granted.
func TestAllocateTakesOverDevicesKubeletHandsOutAgain(t *testing.T) {
	cfg := testConfig(t)
	registry := prometheus.NewRegistry()
	// The tracker's decision at the startup resync holds no pod.
	a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t), LivePods: fakepodtracker.New(true), Metrics: registry})
	web := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-web"}

	// An init container and its pod's app container are handed the same
	// device, one Allocate each, before either is bound.
	first, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatalf("Allocate of the init container's device for the app container: %v", err)
	}
	firstDir, secondDir := first.ContainerResponses[0].Mounts[0].HostPath, second.ContainerResponses[0].Mounts[0].HostPath
	if second.ContainerResponses[0].Envs[dmapi.EnvMemifSecret] == first.ContainerResponses[0].Envs[dmapi.EnvMemifSecret] || secondDir == firstDir {
		t.Errorf("the app container got the init container's socket directory or secret")
	}
	waitFor(t, "the init container's directory is removed", func() bool { _, err := os.Stat(firstDir); return os.IsNotExist(err) })

	// The app container's pod runs, then is deleted; the tracker has not
	// decided it gone yet when kubelet hands the device to the next pod.
	// (No resync here: it would ask for the tracker's decision, which would
	// release the pod first.)
	if err := a.loop.PushEvent(&podapi.AddPod{Pod: web, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{secondDir}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod is bound", func() bool { _, err := a.dm.GetPodMemifInfo(web.ID); return err == nil })
	third, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatalf("Allocate of a gone pod's device: %v", err)
	}
	if _, err := a.dm.GetPodMemifInfo(web.ID); err == nil {
		t.Errorf("the gone pod still holds a memif after its device was taken over")
	}
	waitFor(t, "the gone pod's directory is removed", func() bool { _, err := os.Stat(secondDir); return os.IsNotExist(err) })
	if _, err := os.Stat(third.ContainerResponses[0].Mounts[0].HostPath); err != nil {
		t.Errorf("the new allocation's directory: %v", err)
	}
	if list := a.dm.ListAllocations(); len(list) != 1 || list[0].HostDir != third.ContainerResponses[0].Mounts[0].HostPath {
		t.Errorf("allocations after the takeovers = %v, want the third alone", list)
	}
	if got := takeovers(t, registry); got["unbound"] != 1 || got["pod-gone"] != 1 {
		t.Errorf("takeovers counted = %v, want one unbound and one pod-gone", got)
	}
}

// takeoverRefusingWiring stands in for the vswitch wiring refusing the
// AllocateDevice that takes devices over (VPP would not take the new
// memif): the loop reverts the device manager.
type takeoverRefusingWiring struct{ failingWiring }

func (takeoverRefusingWiring) Update(event controllerapi.Event, _ controllerapi.EventOperations) (string, error) {
	if ev, ok := event.(*dmapi.AllocateDevice); ok && len(ev.TakenOver) > 0 {
		return "", errWiring
	}
	return "", nil
}

// fillInodes mounts a tmpfs with few inodes over the socket root and
// takes every one left, so that the next allocation's mkdir fails.
func fillInodes(t *testing.T, socketRoot string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(socketRoot, fmt.Sprintf("filler-%d", i)))
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestFailedTakeover: an Allocate that takes a device
// over and then fails leaves the holder as it was: still allocated, with
// its directory, in which VPP still listens (the vswitch side of the
// holder was to be removed in the failed event's transaction, which is
// not committed).
func TestFailedTakeover(t *testing.T) {
	tests := []struct {
		// name: the wiring refuses the Allocate and the device manager
		// is reverted, or the new directory cannot be made.
		name string
		// wiring runs after the device manager.
		wiring controllerapi.EventHandler
		// smallRoot: the socket root is a tmpfs of few inodes, all taken
		// before the second Allocate, whose mkdir then fails.
		smallRoot bool
	}{
		{name: "reverted", wiring: takeoverRefusingWiring{}},
		{name: "mkdir", wiring: takeoverRefusingWiring{}, smallRoot: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tc.smallRoot {
				needs.Root(t, "mounts a tmpfs of few inodes as the socket root")
				if err := os.MkdirAll(cfg.SocketRoot, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := unix.Mount("tmpfs", cfg.SocketRoot, "tmpfs", 0, "nr_inodes=16,mode=0700"); err != nil {
					t.Fatalf("mount a tmpfs over the socket root: %v", err)
				}
				t.Cleanup(func() {
					if err := unix.Unmount(cfg.SocketRoot, unix.MNT_DETACH); err != nil {
						t.Errorf("unmount the socket root: %v", err)
					}
				})
			}
			a := startAgent(t, cfg, nil, tc.wiring)
			first, err := allocate(a, []string{"memif-000"})
			if err != nil {
				t.Fatal(err)
			}
			holderDir := first.ContainerResponses[0].Mounts[0].HostPath
			if tc.smallRoot {
				fillInodes(t, cfg.SocketRoot)
			}
			if _, err := allocate(a, []string{"memif-000"}); err == nil {
				t.Fatal("the Allocate taking the device over succeeded; the test needs it to fail")
			}
			// A release of the holder's directory would run right after
			// the failed event: a resync queued behind it is done after it.
			if err := a.loop.Resync(context.Background()); err != nil {
				t.Fatalf("resync after the failed Allocate: %v", err)
			}
			if _, err := os.Stat(holderDir); err != nil {
				t.Errorf("the holder's directory, where VPP still listens: %v", err)
			}
			wantDeviceInfo(t, cfg, first.ContainerResponses[0], deviceinfo.ModeEthernet, "memif-000")
			if list := a.dm.ListAllocations(); len(list) != 1 || list[0].HostDir != holderDir {
				t.Errorf("allocations after the failed takeover = %v, want the holder alone", list)
			}
			if persisted, err := checkpoint.Load(cfg.CheckpointPath); err != nil || len(persisted.Allocations) != 1 {
				t.Errorf("checkpoint after the failed takeover = %+v, %v; want the holder", persisted, err)
			}
		})
	}
}
