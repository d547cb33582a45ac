package manager

import (
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
	decided := func(pods ...podapi.PodState) *podapi.LivePods {
		return &podapi.LivePods{Pods: pods, KubeletDevices: true}
	}
	tests := []struct {
		name       string
		holder     allocation.Allocation
		live       *podapi.LivePods
		wantKind   string
		wantReason string
	}{
		{"unbound: an init container's devices go on", unbound, decided(), takeoverUnbound, "init container"},
		{"unbound, no decision yet", unbound, nil, takeoverUnbound, "init container"},
		{"pod gone in the tracker's decision", bound, decided(), takeoverPodGone, "ns/web (uid uid-1) is gone"},
		{"pod recreated under the same name", bound, decided(holding("uid-2", "memif-000")), takeoverPodRecreated, "recreated (uid uid-2"},
		{"pod alive without the devices (completed)", bound, decided(holding("uid-1")), takeoverFreed, "without them"},
		{"pod listed by kubelet alone, without UID", bound, decided(holding("")), takeoverFreed, "without them"},
		{"the tracker still has the holder", bound, decided(holding("uid-1", "memif-000")), takeoverStillListed, "kubelet decides"},
		{"no decision yet", bound, nil, takeoverNotAsked, "not known"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideTakeover(tc.holder, resource, tc.live)
			if got.kind != tc.wantKind || !strings.Contains(got.reason, tc.wantReason) {
				t.Errorf("decideTakeover = kind %s, reason %q; want %s, reason containing %q", got.kind, got.reason, tc.wantKind, tc.wantReason)
			}
			if got.holder.ID != tc.holder.ID {
				t.Errorf("decideTakeover holder = %s, want %s", got.holder.ID, tc.holder.ID)
			}
		})
	}
}
