package assign_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

var networks = netconf.Config{
	Networks: []netconf.Network{
		{Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24"},
		{Name: "tiny", Type: netconf.L3, Subnet: "10.90.0.0/30"},
		{Name: "lab", Type: netconf.L2, RxMode: netconf.RxInterrupt},
	},
	DefaultNetwork: "lab",
}

func open(t *testing.T, path string) *assign.Assigner {
	t.Helper()
	a, err := assign.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if refusals := a.SetNetworks(networks); len(refusals) > 0 {
		t.Fatalf("SetNetworks refused %v", refusals)
	}
	return a
}

func TestAddressesKeptAcrossRestartAndReturned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "networks.json")
	a := open(t, path)
	a.Record("alloc-1", "default/r1", "app", 1, `[{"network": "red"}]`)
	a.Record("alloc-2", "default/r2", "app", 1, `[{"network": "red", "queues": 2}]`)
	first, second := a.Resolve("alloc-1")[0], a.Resolve("alloc-2")[0]
	if first.Address.String() != "10.70.0.2/24" || second.Address.String() != "10.70.0.3/24" || first.Gateway.String() != "10.70.0.1" {
		t.Fatalf("addresses %s and %s via %s, want 10.70.0.2/24 and 10.70.0.3/24 via 10.70.0.1", first.Address, second.Address, first.Gateway)
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v, want 0600", err, info.Mode().Perm())
	}

	restarted := open(t, path)
	again := restarted.Resolve("alloc-2")[0]
	if again.Address != second.Address || again.Memif.Queues != 2 {
		t.Errorf("after a restart alloc-2 got %s with %d queues, want %s with 2", again.Address, again.Memif.Queues, second.Address)
	}
	restarted.Retain(map[string]bool{"alloc-2": true})
	restarted.Record("alloc-3", "default/r3", "app", 1, `[{"network": "red"}]`)
	third := restarted.Resolve("alloc-3")[0]
	if third.Address.String() != "10.70.0.2/24" {
		t.Errorf("after alloc-1 went, alloc-3 got %s, want the address returned, 10.70.0.2/24", third.Address)
	}
	if again := restarted.Resolve("alloc-2")[0]; again.Address == third.Address {
		t.Errorf("alloc-2 and alloc-3 both hold %s", third.Address)
	}
}

func TestDefaultNetworkAndLegacy(t *testing.T) {
	a := open(t, "")
	a.Record("alloc-1", "default/p", "app", 2, `[{"network": "red", "memif-id": 1, "container": "app"}]`)
	got := a.Resolve("alloc-1")
	if got[0].Memif.Network.Name != "lab" || got[0].Memif.Mode != memifspec.ModeEthernet || got[0].Memif.RxMode != netconf.RxInterrupt {
		t.Errorf("memif 0 = %+v, want the default network lab, ethernet, interrupt", got[0].Memif)
	}
	if got[1].Memif.Network.Name != "red" || got[1].Memif.Mode != memifspec.ModeIP {
		t.Errorf("memif 1 = %+v, want red, ip", got[1].Memif)
	}

	// A later default network moves no memif wired before it.
	moved := networks
	moved.DefaultNetwork = "red"
	a.SetNetworks(moved)
	if again := a.Resolve("alloc-1")[0]; again.Memif.Network.Name != "lab" {
		t.Errorf("after default-network changed, memif 0 is in %q, want lab still", again.Memif.Network.Name)
	}

	none, err := assign.Open("")
	if err != nil {
		t.Fatal(err)
	}
	none.Record("alloc-2", "default/q", "app", 1, "")
	if got := none.Resolve("alloc-2")[0]; got.InNetwork() || got.Refused != nil {
		t.Errorf("without networks a memif = %+v, want one in no network", got)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation string
		// before is an annotation another pod's allocation got first.
		before string
		want   memifspec.Reason
	}{
		{"malformed annotation", `{"network": "red"}`, "", memifspec.ReasonMalformed},
		{"unknown network", `[{"network": "blue"}]`, "", memifspec.ReasonUnknownNetwork},
		{"address outside the subnet", `[{"network": "red", "ips": ["10.71.0.5/24"]}]`, "", memifspec.ReasonAddressOutsideSubnet},
		{"address taken", `[{"network": "red", "ips": ["10.70.0.9/24"]}]`, `[{"network": "red", "ips": ["10.70.0.9/24"]}]`, memifspec.ReasonAddressTaken},
		{"the gateway's address", `[{"network": "red", "ips": ["10.70.0.1/24"]}]`, "", memifspec.ReasonAddressReserved},
		{"mode the network cannot carry", `[{"network": "lab", "mode": "ip"}]`, "", memifspec.ReasonModeNotCarried},
		{"too many queues", `[{"network": "red", "queues": 256}]`, "", memifspec.ReasonTooManyQueues},
		{"subnet exhausted", `[{"network": "tiny"}]`, `[{"network": "tiny"}]`, memifspec.ReasonSubnetExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := open(t, "")
			if tc.before != "" {
				a.Record("first", "default/first", "app", 1, tc.before)
				if got := a.Resolve("first")[0]; got.Refused != nil {
					t.Fatalf("first pod refused: %v", got.Refused)
				}
			}
			a.Record("alloc", "default/p", "app", 1, tc.annotation)
			got := a.Resolve("alloc")[0]
			if got.Refused == nil || got.Refused.Reason != tc.want {
				t.Fatalf("got %+v, want refused with reason %s", got, tc.want)
			}
			if got.Address.IsValid() {
				t.Errorf("a refused memif holds %s", got.Address)
			}
			t.Log(got.Refused.Message)
		})
	}
}

func TestNetworkChangesWaitForPods(t *testing.T) {
	a := open(t, "")
	a.Record("alloc-1", "default/r1", "app", 1, `[{"network": "red"}]`)
	a.Resolve("alloc-1")
	without := netconf.Config{Networks: []netconf.Network{networks.Networks[2]}, DefaultNetwork: "lab"}
	refusals := a.SetNetworks(without)
	if len(refusals) != 1 || refusals[0].Network != "red" || !strings.Contains(refusals[0].Error(), "default/r1") {
		t.Fatalf("refusals %v, want red's removal refused naming default/r1", refusals)
	}
	if got := a.Resolve("alloc-1")[0]; got.Address.String() != "10.70.0.2/24" {
		t.Errorf("while refused, alloc-1 got %+v, want 10.70.0.2/24 still", got)
	}
	a.Release("alloc-1")
	if refusals := a.SetNetworks(without); len(refusals) != 0 {
		t.Errorf("with the pod gone, refusals %v, want none", refusals)
	}
	if _, ok := a.Applied().Network("red"); ok {
		t.Errorf("red is still applied once its pod is gone")
	}
}

func TestRecordClaim(t *testing.T) {
	a := open(t, "")
	a.RecordClaim("claim-1", "default/c", 1, &memifspec.Spec{Network: "red", Queues: 2})
	a.RecordClaim("claim-2", "default/d", 1, nil)
	if got := a.Resolve("claim-1")[0]; got.Memif.Network.Name != "red" || got.Memif.Queues != 2 || !got.Address.IsValid() {
		t.Errorf("claim-1 = %+v, want red with two queues and an address", got)
	}
	if got := a.Resolve("claim-2")[0]; got.Memif.Network.Name != "lab" {
		t.Errorf("claim-2 = %+v, want the default network", got)
	}
}

// TestShares: spanning nodes, an l3 network hands out the node's share of
// its subnet, refuses its memifs until the share is claimed, and keeps
// the share's pool across a restart before the claim comes back; not
// spanning, the whole subnet.
func TestShares(t *testing.T) {
	red := netip.MustParsePrefix("10.70.0.64/26")
	for _, tc := range []struct {
		name     string
		spanning bool
		shares   map[string]netip.Prefix
		want     string // the first memif's address; "" refused
		gateway  string
	}{
		{"one node", false, nil, "10.70.0.2/24", "10.70.0.1"},
		{"one node, shares ignored", false, map[string]netip.Prefix{"red": red}, "10.70.0.2/24", "10.70.0.1"},
		{"spanning, share claimed", true, map[string]netip.Prefix{"red": red}, "10.70.0.65/24", "10.70.0.64"},
		{"spanning, first share", true, map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.0/26")}, "10.70.0.2/24", "10.70.0.1"},
		{"spanning, no share yet", true, nil, "", ""},
		{"spanning, share of another length", true, map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.0/25")}, "", ""},
		{"spanning, share outside the subnet", true, map[string]netip.Prefix{"red": netip.MustParsePrefix("10.71.0.0/26")}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := assign.Open("")
			if err != nil {
				t.Fatal(err)
			}
			a.SetShares(tc.spanning, tc.shares)
			if refusals := a.SetNetworks(networks); len(refusals) > 0 {
				t.Fatalf("SetNetworks refused %v", refusals)
			}
			a.Record("alloc-1", "default/r1", "app", 1, `[{"network": "red"}]`)
			got := a.Resolve("alloc-1")[0]
			if tc.want == "" {
				if got.Refused == nil || !strings.Contains(got.Refused.Message, "not claimed yet") {
					t.Fatalf("got %+v, want refused until the share is claimed", got)
				}
				return
			}
			if got.Refused != nil || got.Address.String() != tc.want || got.Gateway.String() != tc.gateway {
				t.Fatalf("got %s via %s (refused: %v), want %s via %s", got.Address, got.Gateway, got.Refused, tc.want, tc.gateway)
			}
		})
	}
}

// TestShareKeptAcrossRestartBeforeTheClaim: after a restart the share's
// pool is restored, and its addresses stay while the claim is pending.
func TestShareKeptAcrossRestartBeforeTheClaim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "networks.json")
	a, err := assign.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a.SetShares(true, map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.64/26")})
	a.SetNetworks(networks)
	a.Record("alloc-1", "default/r1", "app", 1, `[{"network": "red"}]`)
	before := a.Resolve("alloc-1")[0]
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	restarted, err := assign.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	restarted.SetShares(true, nil)
	if refusals := restarted.SetNetworks(networks); len(refusals) > 0 {
		t.Fatalf("SetNetworks refused %v", refusals)
	}
	if after := restarted.Resolve("alloc-1")[0]; after.Address != before.Address || after.Gateway != before.Gateway {
		t.Errorf("after a restart: %+v, want %s via %s", after, before.Address, before.Gateway)
	}
}
