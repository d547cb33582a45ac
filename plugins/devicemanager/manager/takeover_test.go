package manager_test

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
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
	lister := &lockedPodLister{}
	registry := prometheus.NewRegistry()
	a := startAgentWith(t, cfg, manager.Options{Log: testLogger{t}, PodLister: lister, Metrics: registry})
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

	// The app container's pod runs, then is deleted; its DeletePod is missed
	// and kubelet hands the device to the next pod.
	// (No resync here: it would ask for a reconciliation, which would
	// find the pod gone first.)
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
