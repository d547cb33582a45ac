package memifspec

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

var networks = netconf.Config{Networks: []netconf.Network{
	{Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24", MTU: 9000, RxMode: netconf.RxInterrupt},
	{Name: "lab", Type: netconf.L2},
	{Name: "v6", Type: netconf.L3, Subnet: "fd00:70::/64"},
}}

func TestResolve(t *testing.T) {
	red, _ := networks.Network("red")
	lab, _ := networks.Network("lab")
	v6, _ := networks.Network("v6")
	for _, tc := range []struct {
		name       string
		spec       Spec
		want       Memif
		wantReason Reason
		wantMsg    string
	}{
		{name: "l3 defaults", spec: Spec{Network: "red"},
			want: Memif{Network: red, Mode: ModeIP, Queues: 1, RingSize: 1024, BufferSize: 2048, RxMode: netconf.RxInterrupt, MTU: 9000}},
		{name: "l2 defaults", spec: Spec{Network: "lab", Container: "app", MemifID: 2},
			want: Memif{Network: lab, Container: "app", MemifID: 2, Mode: ModeEthernet, Queues: 1, RingSize: 1024, BufferSize: 2048}},
		{name: "everything set", spec: Spec{Network: "red", Mode: ModeIP, Queues: 2, RingSize: 4096, BufferSize: 9216, RxMode: netconf.RxPolling, MTU: 1500, IPs: []string{"10.70.0.11/24"}},
			want: Memif{Network: red, Mode: ModeIP, Queues: 2, RingSize: 4096, BufferSize: 9216, RxMode: netconf.RxPolling, MTU: 1500, IPs: []netip.Prefix{netip.MustParsePrefix("10.70.0.11/24")}}},
		{name: "ethernet with a MAC", spec: Spec{Network: "lab", MAC: "02:FE:00:00:00:01"},
			want: Memif{Network: lab, Mode: ModeEthernet, Queues: 1, RingSize: 1024, BufferSize: 2048, MAC: []byte{2, 0xfe, 0, 0, 0, 1}}},
		{name: "IPv6 address", spec: Spec{Network: "v6", IPs: []string{"fd00:70::11/64"}},
			want: Memif{Network: v6, Mode: ModeIP, Queues: 1, RingSize: 1024, BufferSize: 2048, IPs: []netip.Prefix{netip.MustParsePrefix("fd00:70::11/64")}}},
		{name: "unknown network", spec: Spec{Network: "blue"}, wantReason: ReasonUnknownNetwork, wantMsg: `no network "blue" on this node; the networks are red, lab, v6`},
		{name: "ip on l2", spec: Spec{Network: "lab", Mode: ModeIP}, wantReason: ReasonModeNotCarried, wantMsg: `l2 network "lab" carries ethernet memifs, not ip`},
		{name: "ethernet on l3", spec: Spec{Network: "red", Mode: ModeEthernet}, wantReason: ReasonModeNotCarried, wantMsg: `l3 network "red" carries ip memifs, not ethernet`},
		{name: "MAC on l3", spec: Spec{Network: "red", MAC: "02:fe:00:00:00:01"}, wantReason: ReasonBadMAC, wantMsg: "no MAC"},
		{name: "address on l2", spec: Spec{Network: "lab", IPs: []string{"10.70.0.11/24"}}, wantReason: ReasonAddressOutsideSubnet, wantMsg: "has no subnet; remove ips"},
		{name: "address outside", spec: Spec{Network: "red", IPs: []string{"10.71.0.11/24"}}, wantReason: ReasonAddressOutsideSubnet, wantMsg: `10.71.0.11 is not in network "red"'s subnet 10.70.0.0/24`},
		{name: "address of another family", spec: Spec{Network: "red", IPs: []string{"fd00:70::11/64"}}, wantReason: ReasonAddressOutsideSubnet},
		{name: "address with another length", spec: Spec{Network: "red", IPs: []string{"10.70.0.11/16"}}, wantReason: ReasonAddressOutsideSubnet, wantMsg: "write 10.70.0.11/24"},
		{name: "IPv4 MTU on IPv6", spec: Spec{Network: "v6", MTU: 1000}, wantReason: ReasonBadMTU, wantMsg: "at least 1280"},
		{name: "checked first", spec: Spec{Network: "red", Queues: 1000}, wantReason: ReasonTooManyQueues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Resolve(networks)
			if tc.wantReason == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Resolve(%+v) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
				}
				return
			}
			if ReasonOf(err) != tc.wantReason || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Resolve(%+v) = %v, want reason %s and %q", tc.spec, err, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// TestReasonOfIPAM: the address pool's refusals count under the reasons
// a pod's memif is refused for.
func TestReasonOfIPAM(t *testing.T) {
	pool, err := ipam.NewPool(netip.MustParsePrefix("10.70.0.0/30"), netip.MustParsePrefix("10.70.0.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Allocate("a/0"); err != nil {
		t.Fatal(err)
	}
	_, exhausted := pool.Allocate("b/0")
	for _, tc := range []struct {
		err  error
		want Reason
	}{
		{exhausted, ReasonSubnetExhausted},
		{pool.Claim("b/0", netip.MustParseAddr("10.70.0.2")), ReasonAddressTaken},
		{pool.Claim("a/0", netip.MustParseAddr("10.70.0.9")), ReasonAddressOutsideSubnet},
		{pool.Claim("b/0", netip.MustParseAddr("10.70.0.1")), ReasonAddressReserved},
		{fmt.Errorf("wire: %w", refuse(ReasonBadMTU, "mtu", "x")), ReasonBadMTU},
		{errors.New("vswitch down"), ReasonOther},
	} {
		if got := ReasonOf(tc.err); got != tc.want {
			t.Errorf("ReasonOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestReasonsAreDistinctLabels(t *testing.T) {
	seen := map[Reason]bool{}
	for _, reason := range Reasons() {
		if seen[reason] || reason == "" || strings.ToLower(string(reason)) != string(reason) {
			t.Errorf("reason %q is repeated or not a lower-case label", reason)
		}
		seen[reason] = true
	}
}
