package allocation

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

const resource = "contivpp.io/memif"

var t0 = time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)

func newAllocation(id string, devices ...string) Allocation {
	dir := "/var/run/contiv/memif/" + id
	return Allocation{ID: id, DeviceIDs: devices, HostDir: dir, HostSocket: dir + "/memif.sock",
		ContainerSocket: "/run/vpp/memif.sock", Secret: "s-" + id, AllocatedAt: t0}
}

func newTestState(t *testing.T, count int, allocations ...Allocation) *State {
	t.Helper()
	s := NewState(resource, DeviceIDs(count), nil)
	for _, a := range allocations {
		if err := s.Add(a); err != nil {
			t.Fatalf("Add(%s): %v", a.ID, err)
		}
	}
	return s
}

func TestDeviceIDs(t *testing.T) {
	cases := []struct {
		count       int
		first, last string
	}{
		{1, "memif-000", "memif-000"},
		{256, "memif-000", "memif-255"},
		{1000, "memif-000", "memif-999"},
		{1001, "memif-0000", "memif-1000"},
		{65536, "memif-00000", "memif-65535"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.count), func(t *testing.T) {
			ids := DeviceIDs(tc.count)
			if len(ids) != tc.count || ids[0] != tc.first || ids[len(ids)-1] != tc.last {
				t.Errorf("DeviceIDs(%d) = %d IDs %s..%s, want %s..%s", tc.count, len(ids), ids[0], ids[len(ids)-1], tc.first, tc.last)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	many := DeviceIDs(300)
	cases := []struct {
		name        string
		request     []string
		wantProblem RequestProblem
		wantIs      error
		wantMsg     string
	}{
		{"empty", nil, EmptyRequest, dmapi.ErrInvalidRequest, "holds no device ID"},
		{"more than exist", many[:9], TooManyDevices, dmapi.ErrInvalidRequest, "asks for 9 devices, the node has 8"},
		{"unknown", []string{"memif-001", "gpu-0", "memif-999"}, UnknownDevices, dmapi.ErrInvalidRequest, "[gpu-0 memif-999] are not devices of contivpp.io/memif (the node has 8, memif-000..memif-007)"},
		{"duplicate", []string{"memif-001", "memif-002", "memif-001"}, DuplicateDevices, dmapi.ErrInvalidRequest, "[memif-001] appear more than once"},
		{"held by another", []string{"memif-002", "memif-000"}, DevicesInUse, dmapi.ErrDeviceInUse, "[memif-000] of contivpp.io/memif are already held by allocation [a-1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestState(t, 8, newAllocation("a-1", "memif-000", "memif-001"))
			err := s.CheckRequest(tc.request)
			var reqErr *RequestError
			if !errors.As(err, &reqErr) || reqErr.Problem != tc.wantProblem || !errors.Is(err, tc.wantIs) {
				t.Fatalf("CheckRequest(%v) = %v, want problem %d matching %v", tc.request, err, tc.wantProblem, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("CheckRequest(%v) = %q, want it to contain %q", tc.request, err, tc.wantMsg)
			}
			if err := s.Add(newAllocation("a-2", tc.request...)); !errors.Is(err, tc.wantIs) {
				t.Errorf("Add with the same request = %v, want %v", err, tc.wantIs)
			}
		})
	}
}

func TestRequestErrorTruncatesLongLists(t *testing.T) {
	s := newTestState(t, 1000)
	request := make([]string, 500)
	for i := range request {
		request[i] = fmt.Sprintf("bad-%d", i)
	}
	err := s.CheckRequest(request)
	if !strings.Contains(err.Error(), "... and 492 more]") || len(err.Error()) > 300 {
		t.Errorf("error for 500 unknown IDs = %q (%d bytes), want 8 IDs and a count", err, len(err.Error()))
	}
}

func TestAddRemove(t *testing.T) {
	s := newTestState(t, 4, newAllocation("a-1", "memif-000"))
	if err := s.Add(newAllocation("a-1", "memif-001")); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("Add with an existing ID = %v, want an error", err)
	}
	removed, err := s.Remove("a-1")
	if err != nil || removed.ID != "a-1" {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if err := s.CheckRequest([]string{"memif-000"}); err != nil {
		t.Errorf("device of a removed allocation is still held: %v", err)
	}
	if _, err := s.Remove("a-1"); !errors.Is(err, ErrUnknownAllocation) {
		t.Errorf("second Remove = %v, want ErrUnknownAllocation", err)
	}
}

func TestRestartGrace(t *testing.T) {
	bound := newAllocation("bound", "memif-001")
	bound.Pod = podapi.PodID{Namespace: "default", Name: "web"}
	s := newTestState(t, 4, newAllocation("unbound", "memif-000"), bound)
	later := t0.Add(time.Hour)
	for _, tc := range []struct {
		id       string
		want     bool
		wantTime time.Time
	}{
		{"unbound", true, later},
		{"bound", false, t0},
		{"unknown", false, time.Time{}},
	} {
		if got := s.RestartGrace(tc.id, later); got != tc.want {
			t.Errorf("RestartGrace(%s) = %v, want %v", tc.id, got, tc.want)
		}
		for _, a := range s.List() {
			if a.ID == tc.id && !a.AllocatedAt.Equal(tc.wantTime) {
				t.Errorf("%s allocated at %s, want %s", tc.id, a.AllocatedAt, tc.wantTime)
			}
		}
	}
}

func TestRestoreSkipsConflicts(t *testing.T) {
	s := newTestState(t, 4, newAllocation("old", "memif-003"))
	skipped := s.Restore([]Allocation{
		newAllocation("a-1", "memif-000"),
		newAllocation("a-2", "memif-000", "memif-001"),
		newAllocation("a-3", "memif-009"),
	})
	if len(skipped) != 2 || !errors.Is(skipped[0], dmapi.ErrDeviceInUse) || !errors.Is(skipped[1], dmapi.ErrInvalidRequest) {
		t.Fatalf("Restore skipped %v, want a-2 (in use) and a-3 (unknown)", skipped)
	}
	var ids []string
	for _, a := range s.List() {
		ids = append(ids, a.ID)
	}
	if !reflect.DeepEqual(ids, []string{"a-1"}) {
		t.Errorf("after Restore the state holds %v, want [a-1]", ids)
	}
}

func TestCheckpointConversionRoundTrip(t *testing.T) {
	bound := newAllocation("a-1", "memif-000", "memif-001")
	bound.Pod, bound.PodUID, bound.ContainerName = podapi.PodID{Namespace: "ns", Name: "web"}, "uid-1", "app"
	list := []Allocation{bound, newAllocation("a-2", "memif-002")}
	data := ToCheckpoint(list)
	content, err := checkpoint.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := checkpoint.Decode("test", content)
	if err != nil {
		t.Fatal(err)
	}
	if got := FromCheckpoint(decoded); !reflect.DeepEqual(got, list) {
		t.Errorf("round trip = %+v, want %+v", got, list)
	}
}

func TestSecretAndID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		secret, err := NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if len(secret) != 23 || strings.ContainsAny(secret, "+/=") || seen[secret] {
			t.Fatalf("NewSecret = %q: want 23 base64url characters, each secret new", secret)
		}
		seen[secret] = true
	}
	id, err := NewID([]string{"memif-007", "memif-008"})
	if err != nil || !strings.HasPrefix(id, "memif-007-") || len(id) != len("memif-007-")+8 {
		t.Errorf("NewID = %q, %v; want memif-007-<8 hex>", id, err)
	}
}

func TestStringMasksSecret(t *testing.T) {
	a := newAllocation("a-1", "memif-000")
	a.Secret = "topsecretvalue"
	if text := a.String(); strings.Contains(text, "topsecretvalue") {
		t.Errorf("String() = %q shows the secret", text)
	}
}

func TestPodLookups(t *testing.T) {
	pod := podapi.PodID{Namespace: "ns", Name: "web"}
	b := newAllocation("a-b", "memif-001")
	b.Pod, b.ContainerName = pod, "zeta"
	a := newAllocation("a-a", "memif-000")
	a.Pod, a.ContainerName = pod, "alpha"
	s := newTestState(t, 4, b, a, newAllocation("a-free", "memif-002"))

	infos, err := s.PodMemifs(pod)
	if err != nil || len(infos) != 2 || infos[0].ContainerName != "alpha" || infos[1].ContainerName != "zeta" {
		t.Fatalf("PodMemifs = %v, %v; want alpha then zeta", infos, err)
	}
	if infos[0].AllocationID != "a-a" || infos[0].Secret != "s-a-a" {
		t.Errorf("first memif = %v (secret matches: %v), want a-a with its secret", infos[0], infos[0].Secret == "s-a-a")
	}
	other := podapi.PodID{Namespace: "ns", Name: "none"}
	_, err = s.PodMemifs(other)
	var noMemif *dmapi.NoMemifError
	if !errors.As(err, &noMemif) || noMemif.Pod != other || !errors.Is(err, dmapi.ErrNoMemif) {
		t.Errorf("PodMemifs(pod without memif) = %v, want *NoMemifError for %s", err, other)
	}
}

func TestWatchAllocations(t *testing.T) {
	s := newTestState(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan dmapi.AllocationChange, 10)
	s.Watch(ctx, changes)
	slow := make(chan dmapi.AllocationChange, 1)
	s.Watch(context.Background(), slow)

	if err := s.Add(newAllocation("a-1", "memif-000")); err != nil {
		t.Fatal(err)
	}
	s.Bind(podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "p"}, UID: "u"},
		[]podapi.PodContainer{{Name: "c", MountSources: []string{"/var/run/contiv/memif/a-1"}}})
	if _, err := s.Remove("a-1"); err != nil {
		t.Fatal(err)
	}
	var kinds []dmapi.AllocationChangeKind
	for i := 0; i < 3; i++ {
		kinds = append(kinds, (<-changes).Kind)
	}
	if want := []dmapi.AllocationChangeKind{dmapi.Allocated, dmapi.Bound, dmapi.Released}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("watcher saw %v, want %v", kinds, want)
	}
	<-slow
	if _, open := <-slow; open {
		t.Error("a full watcher channel was not closed")
	}
	cancel()
	if _, open := <-changes; open {
		t.Error("the watcher's channel is still open after its context ended")
	}
	if err := s.Add(newAllocation("a-2", "memif-001")); err != nil {
		t.Fatalf("Add after every watcher left: %v", err)
	}
}
