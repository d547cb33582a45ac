package allocation

import (
	"reflect"
	"testing"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func TestResolve(t *testing.T) {
	s := newTestState(t, 8,
		newAllocation("a-1", "memif-000"),
		newAllocation("a-2", "memif-001"),
		newAllocation("a-3", "memif-002"))
	s.Bind(podCache, []podapi.PodContainer{{Name: "c", DeviceIDs: map[string][]string{resource: {"memif-002"}}}})
	admitted := []podapi.PodContainer{
		{Name: "sidecar", DeviceIDs: map[string][]string{resource: {"memif-001"}}},
		{Name: "app", DeviceIDs: map[string][]string{resource: {"memif-000"}}},
		{Name: "thief", DeviceIDs: map[string][]string{resource: {"memif-002"}}},
	}

	infos := s.Resolve(podWeb, admitted)

	var got []string
	for _, info := range infos {
		got = append(got, info.AllocationID+" "+info.Pod.String()+" "+info.ContainerName)
	}
	want := []string{"a-1 ns/web app", "a-2 ns/web sidecar"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve = %q, want %q (a bound allocation is never resolved to another pod)", got, want)
	}
	if _, err := s.PodMemifs(podWeb.ID); err == nil {
		t.Error("Resolve bound the allocations; it must only read")
	}
}
