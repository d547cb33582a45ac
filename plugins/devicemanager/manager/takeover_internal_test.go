package manager

import (
	"errors"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func TestDecideTakeover(t *testing.T) {
	const resource = "contivpp.io/memif"
	web := podapi.PodID{Namespace: "ns", Name: "web"}
	bound := allocation.Allocation{ID: "memif-000-aaaaaaaa", DeviceIDs: []string{"memif-000"}, Pod: web, PodUID: "uid-1", ContainerName: "app"}
	unbound := allocation.Allocation{ID: "memif-000-bbbbbbbb", DeviceIDs: []string{"memif-000"}}
	holding := func(uid string, devices ...string) podapi.PodState {
		return podapi.PodState{Pod: podapi.Pod{ID: web, UID: uid}, Containers: []podapi.PodContainer{
			{Name: "app", DeviceIDs: map[string][]string{resource: devices}},
		}}
	}
	authoritative := func(pods ...podapi.PodState) *podapi.Listing {
		return &podapi.Listing{Pods: pods, Authoritative: true, RuntimeAnswered: true}
	}
	tests := []struct {
		name          string
		holder        allocation.Allocation
		live          *podapi.Listing
		wantKind      string
		wantDeletePod bool
		wantReason    string
	}{
		{"unbound: an init container's devices go on", unbound, authoritative(), takeoverUnbound, false, "init container"},
		{"unbound, sources not asked", unbound, nil, takeoverUnbound, false, "init container"},
		{"pod gone from kubelet", bound, authoritative(), takeoverPodGone, true, "ns/web (uid uid-1) is gone"},
		{"pod recreated under the same name", bound, authoritative(holding("uid-2", "memif-000")), takeoverPodRecreated, true, "recreated (uid uid-2"},
		{"pod listed without the devices (completed)", bound, authoritative(holding("uid-1")), takeoverFreed, false, "without them"},
		{"pod listed by kubelet alone, without UID", bound, authoritative(holding("")), takeoverFreed, false, "without them"},
		{"kubelet still lists the holder", bound, authoritative(holding("uid-1", "memif-000")), takeoverStillListed, false, "kubelet decides"},
		{"sources not asked", bound, nil, takeoverNotAsked, false, "not known"},
		{"kubelet down, runtime does not list the pod", bound,
			&podapi.Listing{RuntimeAnswered: true, Err: errors.New("kubelet: connection refused")}, takeoverNotAsked, false, "connection refused"},
		{"kubelet down, runtime lists the pod", bound,
			&podapi.Listing{Pods: []podapi.PodState{holding("uid-1")}, RuntimeAnswered: true, Err: errors.New("kubelet: down")}, takeoverNotAsked, false, "kubelet: down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideTakeover(tc.holder, resource, tc.live)
			if got.kind != tc.wantKind || got.deletePod != tc.wantDeletePod || !strings.Contains(got.reason, tc.wantReason) {
				t.Errorf("decideTakeover = kind %s, delete pod %t, reason %q; want %s, %t, reason containing %q",
					got.kind, got.deletePod, got.reason, tc.wantKind, tc.wantDeletePod, tc.wantReason)
			}
			if got.holder.ID != tc.holder.ID {
				t.Errorf("decideTakeover holder = %s, want %s", got.holder.ID, tc.holder.ID)
			}
		})
	}
}
