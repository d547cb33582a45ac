package allocation

import (
	"reflect"
	"strings"
	"testing"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var (
	podWeb   = podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-web"}
	podCache = podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "cache"}, UID: "uid-cache"}
)

func TestMatch(t *testing.T) {
	a := newAllocation("a-1", "memif-003", "memif-001")
	cases := []struct {
		name      string
		container podapi.PodContainer
		want      string
	}{
		{"host dir mounted", podapi.PodContainer{MountSources: []string{"/etc/hosts", a.HostDir}}, matchMount},
		{"socket annotation", podapi.PodContainer{Annotations: map[string]string{dmapi.AnnotationSocketHost: a.HostSocket}}, matchAnnotation},
		{"same device IDs in another order", podapi.PodContainer{DeviceIDs: map[string][]string{resource: {"memif-001", "memif-003"}}}, matchDevices},
		{"device IDs of another resource", podapi.PodContainer{DeviceIDs: map[string][]string{"example.com/gpu": {"memif-001", "memif-003"}}}, matchNone},
		{"a subset of the device IDs", podapi.PodContainer{DeviceIDs: map[string][]string{resource: {"memif-001"}}}, matchNone},
		{"other dir mounted", podapi.PodContainer{MountSources: []string{a.HostDir + "x"}}, matchNone},
		{"other socket annotation", podapi.PodContainer{Annotations: map[string]string{dmapi.AnnotationSocketHost: "/x/memif.sock"}}, matchNone},
		{"no evidence", podapi.PodContainer{}, matchNone},
		{"same device IDs on a container made for another memif (a dead pod of the same name)", podapi.PodContainer{
			RuntimeID: "c-old", Annotations: map[string]string{dmapi.AnnotationSocketHost: "/x/memif.sock"},
			DeviceIDs: map[string][]string{resource: {"memif-001", "memif-003"}},
		}, matchNone},
		{"same device IDs on a container made for this memif", podapi.PodContainer{
			RuntimeID: "c-new", Annotations: map[string]string{dmapi.AnnotationSocketHost: a.HostSocket},
			DeviceIDs: map[string][]string{resource: {"memif-001", "memif-003"}},
		}, matchAnnotation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match(a, resource, tc.container); got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBind(t *testing.T) {
	s := newTestState(t, 8,
		newAllocation("a-1", "memif-000"),
		newAllocation("a-2", "memif-001"),
		newAllocation("a-3", "memif-002"))
	bindings := s.Bind(podWeb, []podapi.PodContainer{
		{Name: "app", MountSources: []string{"/var/run/contiv/memif/a-1"}},
		{Name: "sidecar", DeviceIDs: map[string][]string{resource: {"memif-001"}}},
	})
	if got := bindingSummary(bindings); !reflect.DeepEqual(got, []string{"a-1 app mount", "a-2 sidecar device IDs"}) {
		t.Fatalf("Bind = %v", got)
	}
	if again := s.Bind(podWeb, []podapi.PodContainer{{Name: "app", MountSources: []string{"/var/run/contiv/memif/a-1"}}}); len(again) != 0 {
		t.Errorf("binding the same evidence again = %v, want nothing new", bindingSummary(again))
	}
	stolen := s.Bind(podCache, []podapi.PodContainer{{Name: "c", MountSources: []string{"/var/run/contiv/memif/a-1"}}})
	if len(stolen) != 0 {
		t.Errorf("another pod took a bound allocation: %v", bindingSummary(stolen))
	}
	a1, _ := held(s, "a-1")
	if a1.Pod != podWeb.ID || a1.PodUID != podWeb.UID || a1.ContainerName != "app" {
		t.Errorf("a-1 = %v, want bound to %s container app", a1, podWeb)
	}
	if a3, _ := held(s, "a-3"); a3.Bound() {
		t.Errorf("a-3 was bound without evidence: %v", a3)
	}
}

// held returns the allocation the state holds under id.
func held(s *State, id string) (Allocation, bool) {
	for _, a := range s.List() {
		if a.ID == id {
			return a, true
		}
	}
	return Allocation{}, false
}

func bindingSummary(bindings []Binding) []string {
	var out []string
	for _, b := range bindings {
		out = append(out, b.Allocation.ID+" "+b.Allocation.ContainerName+" "+b.Evidence)
	}
	return out
}

func TestPodAllocations(t *testing.T) {
	cases := []struct {
		name     string
		deleted  podapi.Pod
		wantHeld []string
	}{
		{"the pod", podWeb, []string{"a-1", "a-2"}},
		{"the pod without UID", podapi.Pod{ID: podWeb.ID}, []string{"a-1", "a-2"}},
		{"an older incarnation", podapi.Pod{ID: podWeb.ID, UID: "uid-old"}, nil},
		{"another pod", podCache, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestState(t, 8, newAllocation("a-1", "memif-000"), newAllocation("a-2", "memif-001"), newAllocation("a-3", "memif-002"))
			s.Bind(podWeb, []podapi.PodContainer{
				{Name: "app", MountSources: []string{"/var/run/contiv/memif/a-1", "/var/run/contiv/memif/a-2"}},
				{Name: "b", MountSources: []string{"/var/run/contiv/memif/a-2"}},
			})
			var ids []string
			for _, a := range s.PodAllocations(tc.deleted) {
				ids = append(ids, a.ID)
			}
			if !reflect.DeepEqual(ids, tc.wantHeld) {
				t.Errorf("PodAllocations(%s) = %v, want %v", tc.deleted, ids, tc.wantHeld)
			}
			if len(s.List()) != 3 {
				t.Errorf("PodAllocations released allocations: the state holds %d, want 3", len(s.List()))
			}
		})
	}
}

func TestCollect(t *testing.T) {
	grace := 10 * time.Minute
	now := t0.Add(time.Hour)
	fresh := newAllocation("a-fresh", "memif-004")
	fresh.AllocatedAt = now.Add(-time.Minute)
	webEvidence := []podapi.PodContainer{{Name: "app", MountSources: []string{"/var/run/contiv/memif/a-web"}}}
	cases := []struct {
		name        string
		live        []podapi.PodState
		wantBound   []string
		wantRelease []string
		wantGone    []string
		wantReason  string
	}{
		{
			name:        "every pod alive",
			live:        []podapi.PodState{{Pod: podWeb, Containers: webEvidence}, {Pod: podCache}},
			wantRelease: []string{"a-old-unbound"},
			wantReason:  "no pod has been seen holding it for 1h0m0s (grace period 10m0s)",
		},
		{
			name:        "cache pod gone",
			live:        []podapi.PodState{{Pod: podWeb}},
			wantRelease: []string{"a-old-unbound"},
			wantGone:    []string{"ns/cache (uid uid-cache)"},
			wantReason:  "pod ns/cache (uid uid-cache) is gone",
		},
		{
			name:        "cache pod recreated",
			live:        []podapi.PodState{{Pod: podWeb}, {Pod: podapi.Pod{ID: podCache.ID, UID: "uid-new"}}},
			wantRelease: []string{"a-old-unbound"},
			wantGone:    []string{"ns/cache (uid uid-cache)"},
			wantReason:  "pod ns/cache was recreated (uid uid-new, the allocation's was uid-cache)",
		},
		{
			name:        "old unbound allocation proved held",
			live:        []podapi.PodState{{Pod: podWeb}, {Pod: podCache}, {Pod: podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "late"}, UID: "u"}, Containers: []podapi.PodContainer{{Name: "c", DeviceIDs: map[string][]string{resource: {"memif-003"}}}}}},
			wantBound:   []string{"a-old-unbound c device IDs"},
			wantRelease: nil,
		},
		{
			name:        "no pod alive",
			live:        nil,
			wantRelease: []string{"a-old-unbound"},
			wantGone:    []string{"ns/cache (uid uid-cache)", "ns/web (uid uid-web)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			web, cache := newAllocation("a-web", "memif-000"), newAllocation("a-cache", "memif-001")
			web.Pod, web.PodUID, web.ContainerName = podWeb.ID, podWeb.UID, "app"
			cache.Pod, cache.PodUID = podCache.ID, podCache.UID
			s := newTestState(t, 8, web, cache, newAllocation("a-old-unbound", "memif-003"), fresh)
			bindings, collected, gone := s.Collect(tc.live, now, grace)
			if got := bindingSummary(bindings); !reflect.DeepEqual(got, tc.wantBound) {
				t.Errorf("bindings = %v, want %v", got, tc.wantBound)
			}
			var released, gonePods, reasons []string
			for _, c := range collected {
				released = append(released, c.Allocation.ID)
				reasons = append(reasons, c.Reason)
			}
			for _, g := range gone {
				gonePods = append(gonePods, g.Pod.String())
				reasons = append(reasons, g.Reason)
			}
			if !reflect.DeepEqual(gonePods, tc.wantGone) {
				t.Errorf("gone pods %v, want %v", gonePods, tc.wantGone)
			}
			for _, pod := range gone {
				if memifs, err := s.PodMemifs(pod.Pod.ID); err != nil {
					t.Errorf("allocations of gone pod %s were released before its vswitch side: %v, %v", pod.Pod, memifs, err)
				}
			}
			if !reflect.DeepEqual(released, tc.wantRelease) {
				t.Errorf("collected %v, want %v (reasons %q)", released, tc.wantRelease, reasons)
			}
			if tc.wantReason != "" && !strings.Contains(strings.Join(reasons, "; "), tc.wantReason) {
				t.Errorf("reasons %q, want one to say %q", reasons, tc.wantReason)
			}
			if _, ok := held(s, "a-fresh"); !ok {
				t.Error("an unbound allocation within its grace period was collected")
			}
			for _, id := range released {
				if _, ok := held(s, id); ok {
					t.Errorf("collected allocation %s is still held", id)
				}
			}
		})
	}
}

// TestBindLearnsUID: kubelet's pod-resources lists a just-admitted pod
// without its UID, so the first binding may come from device IDs alone;
// once the runtime shows the pod's UID, the binding must carry it, or the
// allocation is reported as held by no pod incarnation.
func TestBindLearnsUID(t *testing.T) {
	kubeletOnly := podapi.Pod{ID: podWeb.ID}
	cases := []struct {
		name string
		bind func(s *State, containers []podapi.PodContainer) []Binding
	}{
		{"AddPod", func(s *State, containers []podapi.PodContainer) []Binding { return s.Bind(podWeb, containers) }},
		{"collection", func(s *State, containers []podapi.PodContainer) []Binding {
			bindings, _, _ := s.Collect([]podapi.PodState{{Pod: podWeb, Containers: containers}}, time.Now(), time.Hour)
			return bindings
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestState(t, 8, newAllocation("a-1", "memif-000"))
			admitted := []podapi.PodContainer{{Name: "app", DeviceIDs: map[string][]string{resource: {"memif-000"}}}}
			if got := bindingSummary(s.Bind(kubeletOnly, admitted)); !reflect.DeepEqual(got, []string{"a-1 app device IDs"}) {
				t.Fatalf("Bind of the admitted pod = %v", got)
			}
			running := []podapi.PodContainer{{Name: "app", MountSources: []string{"/var/run/contiv/memif/a-1"}, DeviceIDs: admitted[0].DeviceIDs}}
			if got := bindingSummary(tc.bind(s, running)); !reflect.DeepEqual(got, []string{"a-1 app mount"}) {
				t.Errorf("binding the running pod = %v, want a-1 rebound with its UID", got)
			}
			if a1, _ := held(s, "a-1"); a1.PodUID != podWeb.UID {
				t.Errorf("a-1 = %v with uid %q, want uid %q", a1, a1.PodUID, podWeb.UID)
			}
		})
	}
}

// TestPodRecreatedUnderTheSameName: a pod deleted and re-created under the
// same name is admitted (kubelet lists its device IDs) while the runtime
// still shows the deleted incarnation without the new container. The new
// allocation must not take the deleted pod's UID, nor be released by its
// deletion; the new container's mount then gives it the new UID.
func TestPodRecreatedUnderTheSameName(t *testing.T) {
	deleted := podapi.Pod{ID: podWeb.ID, UID: "uid-deleted"}
	s := newTestState(t, 8, newAllocation("a-2", "memif-000"))
	admitted := []podapi.PodContainer{{Name: "app", DeviceIDs: map[string][]string{resource: {"memif-000"}}}}
	if got := bindingSummary(s.Bind(deleted, admitted)); !reflect.DeepEqual(got, []string{"a-2 app device IDs"}) {
		t.Fatalf("Bind of the admitted pod = %v", got)
	}
	if a2, _ := held(s, "a-2"); a2.PodUID != "" {
		t.Errorf("a-2 took uid %q from a pod whose container the runtime does not show", a2.PodUID)
	}
	if released := s.PodAllocations(deleted); len(released) != 0 {
		t.Errorf("the deleted incarnation's release takes %v", released)
	}
	running := []podapi.PodContainer{{Name: "app", RuntimeID: "c-new", MountSources: []string{"/var/run/contiv/memif/a-2"}, DeviceIDs: admitted[0].DeviceIDs}}
	if got := bindingSummary(s.Bind(podWeb, running)); !reflect.DeepEqual(got, []string{"a-2 app mount"}) {
		t.Errorf("binding the re-created pod's container = %v", got)
	}
	if a2, _ := held(s, "a-2"); a2.PodUID != podWeb.UID {
		t.Errorf("a-2 has uid %q, want the re-created pod's %q", a2.PodUID, podWeb.UID)
	}
}
