package assign_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// start is what an agent start sees: memifwiring.conf's bridge-domain
// and the networks applied (networks.conf, with that bridge domain as the
// default l2 network).
type start struct {
	bridgeDomain string
	networks     netconf.Config
}

var (
	// crossConnected: memifwiring.conf's l2-xconnect (or nothing about
	// networks), no networks.conf.
	crossConnected = start{}
	// bridged: memifwiring.conf's bridge-domain: pods.
	bridged = start{"pods", netconf.Config{Networks: []netconf.Network{{Name: "pods", Type: netconf.L2}}, DefaultNetwork: "pods"}}
	// bridgedAsHall: memifwiring.conf's bridge-domain renamed to hall.
	bridgedAsHall = start{"hall", netconf.Config{Networks: []netconf.Network{{Name: "hall", Type: netconf.L2}}, DefaultNetwork: "hall"}}
	// labByDefault: networks.conf's default-network lab, no bridge-domain.
	labByDefault = start{"", netconf.Config{Networks: []netconf.Network{{Name: "lab", Type: netconf.L2}, {Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24"}}, DefaultNetwork: "lab"}}
	// redByDefault: networks.conf's default-network changed to red.
	redByDefault = start{"", netconf.Config{Networks: labByDefault.networks.Networks, DefaultNetwork: "red"}}
)

// startAgent opens the assigner at path as an agent start does: the
// bridge domain told, the memifs that follow memifwiring.conf moved, the
// networks applied.
func startAgent(t *testing.T, path string, s start) (*assign.Assigner, []assign.Moved) {
	t.Helper()
	a, err := assign.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a.SetWiringBridgeDomain(s.bridgeDomain)
	moved := a.FollowWiring(s.networks.DefaultNetwork)
	a.SetNetworks(s.networks)
	return a, moved
}

// TestMemifsFollowMemifwiringConfAcrossRestarts: a memif whose pod named
// no network and that memifwiring.conf wired (into its bridge-domain, or
// in no network for l2-xconnect) follows memifwiring.conf when the agent
// restarts with it changed; one its pod named a network for, or that got
// networks.conf's default-network, keeps its network.
func TestMemifsFollowMemifwiringConfAcrossRestarts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second start
		// annotation is the pod's; claim: the memif is a claim's, with
		// no MemifConfig.
		annotation string
		claim      bool
		want       string // the memif's network at the second start; "" none
		wantMoved  bool
	}{
		{name: "l2-xconnect to bridge-domain", first: crossConnected, second: bridged, want: "pods", wantMoved: true},
		{name: "bridge-domain to l2-xconnect", first: bridged, second: crossConnected, want: "", wantMoved: true},
		{name: "bridge-domain renamed", first: bridged, second: bridgedAsHall, want: "hall", wantMoved: true},
		{name: "bridge-domain unchanged", first: bridged, second: bridged, want: "pods"},
		{name: "l2-xconnect unchanged", first: crossConnected, second: crossConnected, want: ""},
		{name: "a claim without MemifConfig, bridge-domain to l2-xconnect", first: bridged, second: crossConnected, claim: true, want: "", wantMoved: true},
		{name: "the pod named the bridge domain's network", first: bridged, second: crossConnected, annotation: `[{"network": "pods"}]`, want: "pods"},
		{name: "networks.conf's default-network changed", first: labByDefault, second: redByDefault, want: "lab"},
		{name: "networks.conf's default-network removed", first: labByDefault, second: crossConnected, want: "lab"},
		{name: "networks.conf's default-network replaces bridge-domain", first: bridged, second: labByDefault, want: "pods"},
		{name: "networks.conf's default-network after l2-xconnect", first: crossConnected, second: labByDefault, want: ""},
		{name: "networks.conf's default-network gives way to bridge-domain", first: labByDefault, second: bridged, want: "lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "networks.json")
			a, _ := startAgent(t, path, tc.first)
			if tc.claim {
				a.RecordClaim("alloc", "default/p", 1, nil)
			} else {
				a.Record("alloc", "default/p", "app", 1, tc.annotation)
			}
			if got := a.Resolve("alloc")[0]; got.Refused != nil {
				t.Fatalf("at the first start the memif is refused: %v", got.Refused)
			}
			if err := a.Save(); err != nil {
				t.Fatal(err)
			}

			restarted, moved := startAgent(t, path, tc.second)
			got := restarted.Resolve("alloc")[0]
			if got.Refused != nil || got.Memif.Network.Name != tc.want {
				t.Errorf("after the restart the memif is in %q (refused: %v), want %q", got.Memif.Network.Name, got.Refused, tc.want)
			}
			if (len(moved) == 1) != tc.wantMoved || len(moved) > 1 {
				t.Errorf("FollowWiring moved %+v, want moved: %t", moved, tc.wantMoved)
			}
			if _, held := restarted.Applied().Network("pods"); held && tc.want != "pods" && tc.second.bridgeDomain != "pods" {
				t.Errorf("network pods is still applied, but no memif is in it")
			}
		})
	}
}

// TestOrigins: where a memif's network came from, as recorded.
func TestOrigins(t *testing.T) {
	for _, tc := range []struct {
		name       string
		at         start
		annotation string
		want       []assign.Origin
	}{
		{"no networks", crossConnected, "", []assign.Origin{assign.OriginWiring, assign.OriginWiring}},
		{"memifwiring.conf's bridge-domain", bridged, "", []assign.Origin{assign.OriginWiring, assign.OriginWiring}},
		{"networks.conf's default-network", labByDefault, "", []assign.Origin{assign.OriginDefaultNetwork, assign.OriginDefaultNetwork}},
		{"memif 1 named", bridged, `[{"network": "pods", "memif-id": 1}]`, []assign.Origin{assign.OriginWiring, assign.OriginNamed}},
		{"both named", labByDefault, `[{"network": "red"}, {"network": "lab", "memif-id": 1}]`, []assign.Origin{assign.OriginNamed, assign.OriginNamed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := startAgent(t, "", tc.at)
			a.Record("alloc", "default/p", "app", 2, tc.annotation)
			if got := a.Snapshot().Allocations["alloc"].Origins; !slices.Equal(got, tc.want) {
				t.Errorf("origins %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRecordsWithoutOrigins: in a state file written before origins were
// kept, a memif in no network follows memifwiring.conf (it got there only
// by default), and one in a network keeps it. One that followed
// memifwiring.conf into its bridge domain keeps following it at the
// starts after: its origin is kept once it moved.
func TestRecordsWithoutOrigins(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded string
		first    start
		// starts are the agent's starts after the state file was written,
		// each saving what it moved.
		starts []start
		want   string
	}{
		{"in no network, then bridge-domain", "", crossConnected, []start{bridged}, "pods"},
		{"in the bridge domain, then l2-xconnect", "pods", bridged, []start{crossConnected}, "pods"},
		{"in no network, then bridge-domain, then l2-xconnect", "", crossConnected, []start{bridged, crossConnected}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "networks.json")
			state := assign.State{Version: 1, Applied: tc.first.networks, Allocations: map[string]assign.Record{
				"alloc": {Pod: "default/p", Specs: []memifspec.Spec{{Network: tc.recorded}}},
			}}
			content, err := json.Marshal(state)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			var a *assign.Assigner
			for _, s := range tc.starts {
				a, _ = startAgent(t, path, s)
				if err := a.Save(); err != nil {
					t.Fatal(err)
				}
			}
			if got := a.Resolve("alloc")[0]; got.Refused != nil || got.Memif.Network.Name != tc.want {
				t.Errorf("the memif is in %q (refused: %v), want %q", got.Memif.Network.Name, got.Refused, tc.want)
			}
		})
	}
}
