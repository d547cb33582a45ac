package claimstatus_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claimstatus"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

var (
	t0    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace = 30 * time.Second
	claim = dmapi.ClaimRef{UID: "uid-1", Namespace: "ns", Name: "claim"}
	pod   = podapi.PodID{Namespace: "ns", Name: "pod"}
)

// allocation is a claim's memif of one device in network red, l3, as the
// wiring resolved it (networks nil: not resolved yet).
func allocation(networks ...dmapi.MemifNetwork) dmapi.MemifInfo {
	return dmapi.MemifInfo{AllocationID: "a1", DeviceIDs: []string{"memif-3"}, Pod: pod, PodUID: "pod-uid",
		ContainerSocket: "/run/vpp/memif.sock", Secret: "s3cret", Claim: claim, Request: "memif", Networks: networks}
}

var red = dmapi.MemifNetwork{MemifID: 0, Network: "red", Mode: "ip", IPs: []string{"10.70.0.2/24"}, Gateway: []string{"10.70.0.1"},
	MAC: "02:fe:00:00:00:01", Queues: 1, RingSize: 1024, BufferSize: 2048}

// link is VPP's link of the allocation's memif.
func link(up bool, reason string, downSince time.Time) vswitchapi.MemifLink {
	var name string
	for n := range wiring.MemifInterfaces([]dmapi.MemifInfo{allocation(red)}) {
		name = n
	}
	return vswitchapi.MemifLink{Name: name, VPPName: "memif1/0", Up: up, DownReason: reason, DownSince: downSince}
}

var reachable = vswitchapi.Reachability{Configured: true, Reachable: true, Since: t0.Add(-time.Hour)}

func cond(status metav1.ConditionStatus, reason string) claimstatus.Condition {
	return claimstatus.Condition{Status: status, Reason: reason}
}

// TestBuild: each device's conditions and memif.json entry from the
// allocations, VPP's links and reachability, and what was built before.
func TestBuild(t *testing.T) {
	upBefore := map[string]claimstatus.Claim{claim.UID: {Ref: claim, Devices: []claimstatus.Device{{Device: "memif-3",
		Ready:  claimstatus.Condition{Status: metav1.ConditionTrue, Reason: claimstatus.ReasonWired, Since: t0.Add(-time.Minute)},
		LinkUp: claimstatus.Condition{Status: metav1.ConditionTrue, Reason: claimstatus.ReasonLinkUp, Since: t0.Add(-time.Minute)}}}}}
	for _, tc := range []struct {
		name     string
		node     claimstatus.Node
		previous map[string]claimstatus.Claim
		// none: the claim is left out.
		none          bool
		ready, linkUp claimstatus.Condition
		entry         bool
	}{
		{name: "not resolved yet: left out", node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation()}}, none: true},
		{name: "not a claim's: left out", node: claimstatus.Node{Allocations: []dmapi.MemifInfo{func() dmapi.MemifInfo {
			a := allocation(red)
			a.Claim = dmapi.ClaimRef{}
			return a
		}()}}, none: true},
		{name: "wired, pod side not come yet", node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)},
			Links: []vswitchapi.MemifLink{link(false, "", t0)}, Vswitch: reachable},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionFalse, claimstatus.ReasonPodSideNotConnected), entry: true},
		{name: "wired, link up", node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)},
			Links: []vswitchapi.MemifLink{link(true, "", time.Time{})}, Vswitch: reachable},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionTrue, claimstatus.ReasonLinkUp), entry: true},
		{name: "refused", node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(dmapi.MemifNetwork{MemifID: 0, Network: "blue",
			Refused: `network "blue" is not in networks.conf`, Reason: "unknown-network"})}, Vswitch: reachable},
			ready: cond(metav1.ConditionFalse, "UnknownNetwork"), linkUp: cond(metav1.ConditionFalse, claimstatus.ReasonPodSideNotConnected)},
		{name: "was up, pod side left within the grace: still up", previous: upBefore,
			node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)}, Vswitch: reachable,
				Links: []vswitchapi.MemifLink{link(false, "disconnected", t0.Add(-grace/2))}},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionTrue, claimstatus.ReasonLinkUp), entry: true},
		{name: "was up, pod side left past the grace", previous: upBefore,
			node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)}, Vswitch: reachable,
				Links: []vswitchapi.MemifLink{link(false, "disconnected", t0.Add(-grace))}},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionFalse, claimstatus.ReasonPodSideNotConnected), entry: true},
		{name: "was up, wrong secret: at once", previous: upBefore,
			node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)}, Vswitch: reachable,
				Links: []vswitchapi.MemifLink{link(false, vswitchapi.WrongSecret, t0)}},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionFalse, claimstatus.ReasonWrongSecret), entry: true},
		{name: "was up, VPP unreachable within the grace: still up", previous: upBefore,
			node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)},
				Vswitch: vswitchapi.Reachability{Configured: true, Since: t0.Add(-grace + time.Second), Err: errors.New("connection refused")}},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionTrue, claimstatus.ReasonLinkUp), entry: true},
		{name: "was up, VPP unreachable past the grace", previous: upBefore,
			node: claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)},
				Vswitch: vswitchapi.Reachability{Configured: true, Since: t0.Add(-grace), Err: errors.New("connection refused")}},
			ready: cond(metav1.ConditionTrue, claimstatus.ReasonWired), linkUp: cond(metav1.ConditionFalse, claimstatus.ReasonVswitchUnreachable), entry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.Now, tc.node.Grace = t0, grace
			built := claimstatus.Build(tc.node, tc.previous)
			got, ok := built[claim.UID]
			if tc.none {
				if len(built) != 0 {
					t.Fatalf("Build = %+v, want no claim", built)
				}
				return
			}
			if !ok || len(got.Devices) != 1 {
				t.Fatalf("Build = %+v, want claim %s with one device", built, claim.UID)
			}
			d := got.Devices[0]
			if got.Ref != claim || d.Device != "memif-3" {
				t.Errorf("claim %+v device %q, want %+v memif-3", got.Ref, d.Device, claim)
			}
			for _, c := range []struct {
				name      string
				got, want claimstatus.Condition
			}{{"Ready", d.Ready, tc.ready}, {"LinkUp", d.LinkUp, tc.linkUp}} {
				if c.got.Status != c.want.Status || c.got.Reason != c.want.Reason {
					t.Errorf("%s = %s/%s (%s), want %s/%s", c.name, c.got.Status, c.got.Reason, c.got.Message, c.want.Status, c.want.Reason)
				}
			}
			if !tc.entry {
				if d.Entry != nil {
					t.Errorf("entry %+v, want none for a refused memif", *d.Entry)
				}
				return
			}
			want := memifjson.Interface{MemifID: 0, Socket: "/run/vpp/memif.sock", Network: "red", Mode: "ip",
				IPs: []netip.Prefix{netip.MustParsePrefix("10.70.0.2/24")}, Gateway: []netip.Addr{netip.MustParseAddr("10.70.0.1")},
				MAC: "02:fe:00:00:00:01", Queues: 1, RingSize: 1024, BufferSize: 2048}
			if d.Entry == nil || !sameJSON(t, *d.Entry, want) {
				t.Errorf("entry %+v, want memif.json's %+v", d.Entry, want)
			}
		})
	}
}

// TestBuildKeepsSince: a condition whose status stays keeps when it last
// changed; one that changes gets the build's time, and Equal ignores it.
func TestBuildKeepsSince(t *testing.T) {
	node := claimstatus.Node{Allocations: []dmapi.MemifInfo{allocation(red)}, Links: []vswitchapi.MemifLink{link(false, "", t0)},
		Vswitch: reachable, Grace: grace, Now: t0}
	first := claimstatus.Build(node, nil)
	node.Now, node.Links = t0.Add(time.Second), []vswitchapi.MemifLink{link(true, "", time.Time{})}
	second := claimstatus.Build(node, first)
	d := second[claim.UID].Devices[0]
	if !d.Ready.Since.Equal(t0) || !d.LinkUp.Since.Equal(node.Now) {
		t.Errorf("Ready since %s, LinkUp since %s: want %s (unchanged) and %s (changed)", d.Ready.Since, d.LinkUp.Since, t0, node.Now)
	}
	if first[claim.UID].Equal(second[claim.UID]) {
		t.Error("a claim whose link came up is Equal to the one before")
	}
	node.Now = t0.Add(2 * time.Second)
	if third := claimstatus.Build(node, second); !third[claim.UID].Equal(second[claim.UID]) {
		t.Errorf("nothing changed but the time, yet %+v is not Equal to %+v", third[claim.UID], second[claim.UID])
	}
}

func sameJSON(t *testing.T, a, b memifjson.Interface) bool {
	t.Helper()
	x, errX := memifjson.Render([]memifjson.Interface{a})
	y, errY := memifjson.Render([]memifjson.Interface{b})
	if errX != nil || errY != nil {
		t.Fatalf("render: %v, %v", errX, errY)
	}
	return string(x) == string(y)
}
