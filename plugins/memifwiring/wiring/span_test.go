package wiring_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// spanNetworks: red (l3) and lab (l2) have memifs on the node, blue (l3)
// and lan (l2) none.
var spanNetworks = netconf.Config{Networks: []netconf.Network{
	{Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24"},
	{Name: "blue", Type: netconf.L3, Subnet: "10.80.0.0/24"},
	{Name: "lab", Type: netconf.L2},
	{Name: "lan", Type: netconf.L2},
}}

// describeValues words each value in one line, sorted.
func describeValues(values map[string]proto.Message) []string {
	var lines []string
	for _, value := range values {
		switch v := value.(type) {
		case *vpp_interfaces.Interface:
			line := fmt.Sprintf("%s %s", v.Type, v.Name)
			switch {
			case v.GetAfpacket() != nil:
				line += " on " + v.GetAfpacket().HostIfName
			case v.GetVxlan() != nil:
				line += fmt.Sprintf(" %s>%s vni %s", v.GetVxlan().SrcAddress, v.GetVxlan().DstAddress, vniName(v.GetVxlan().Vni))
			}
			if len(v.IpAddresses) > 0 {
				line += " " + strings.Join(v.IpAddresses, ",")
			}
			if v.PhysAddress != "" {
				line += " mac " + v.PhysAddress
			}
			lines = append(lines, line)
		case *vpp_l2.BridgeDomain:
			var members []string
			for _, iface := range v.Interfaces {
				member := iface.Name
				if iface.BridgedVirtualInterface {
					member += "(bvi)"
				}
				if iface.SplitHorizonGroup != 0 {
					member += fmt.Sprintf("(shg %d)", iface.SplitHorizonGroup)
				}
				members = append(members, member)
			}
			lines = append(lines, fmt.Sprintf("bd %s: %s", v.Name, strings.Join(members, " ")))
		case *vpp_l3.Route:
			lines = append(lines, fmt.Sprintf("route %s via %s %s in %s", v.DstNetwork, v.NextHopAddr, v.OutgoingInterface, vrfName(v.VrfId)))
		case *vpp_l3.VrfTable:
			lines = append(lines, fmt.Sprintf("vrf %s %s", v.Label, v.Protocol))
		}
	}
	slices.Sort(lines)
	return lines
}

func vniName(vni uint32) string {
	for _, n := range spanNetworks.Networks {
		if n.VNI() == vni {
			return n.Name
		}
	}
	return fmt.Sprint(vni)
}

func vrfName(id uint32) string {
	for _, n := range spanNetworks.Networks {
		if n.TableID() == id {
			return n.Name
		}
	}
	return fmt.Sprint(id)
}

// TestRenderSpan: which models carry which networks to which peers.
func TestRenderSpan(t *testing.T) {
	self := netip.MustParsePrefix("192.168.230.1/24")
	ownShares := map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.0/26"), "blue": netip.MustParsePrefix("10.80.0.0/26")}
	b := crossnodeapi.Peer{Address: netip.MustParseAddr("192.168.230.2"),
		Shares: map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.64/26"), "blue": netip.MustParsePrefix("10.80.0.64/26")}}
	c := crossnodeapi.Peer{Address: netip.MustParseAddr("192.168.230.3")}
	vxB, vxC := wiring.TunnelName("red", b.Address), wiring.TunnelName("red", c.Address)
	lxB, lxC := wiring.TunnelName("lab", b.Address), wiring.TunnelName("lab", c.Address)
	local := []string{
		"SOFTWARE_LOOPBACK gw_red 10.70.0.1/24",
		"bd lab: memif_a memif_b",
		"vrf red IPV4",
		"vrf red IPV6",
	}
	for _, tc := range []struct {
		name string
		span crossnodeapi.Span
		want []string
	}{
		{"off: the networks end at the node", crossnodeapi.Span{Peers: map[string]crossnodeapi.Peer{"b": b}}, local},
		{"alone: the underlay, and red's gateway the BVI of its bridge domain",
			crossnodeapi.Span{Interface: "vpp-ul", Address: self, Shares: ownShares},
			[]string{
				"AF_PACKET underlay on vpp-ul 192.168.230.1/24",
				"SOFTWARE_LOOPBACK gw_red 10.70.0.1/24 mac 02:fe:c0:a8:e6:01",
				"bd lab: memif_a memif_b",
				"bd red: gw_red(bvi)",
				"vrf red IPV4",
				"vrf red IPV6",
			}},
		{"two peers: a tunnel per network and peer, a route to each share a peer holds",
			crossnodeapi.Span{Interface: "vpp-ul", Address: self, Shares: ownShares, Peers: map[string]crossnodeapi.Peer{"b": b, "c": c}},
			[]string{
				"AF_PACKET underlay on vpp-ul 192.168.230.1/24",
				"SOFTWARE_LOOPBACK gw_red 10.70.0.1/24 mac 02:fe:c0:a8:e6:01",
				"VXLAN_TUNNEL " + lxB + " 192.168.230.1>192.168.230.2 vni lab",
				"VXLAN_TUNNEL " + lxC + " 192.168.230.1>192.168.230.3 vni lab",
				"VXLAN_TUNNEL " + vxB + " 192.168.230.1>192.168.230.2 vni red",
				"VXLAN_TUNNEL " + vxC + " 192.168.230.1>192.168.230.3 vni red",
				"bd lab: memif_a memif_b " + lxB + "(shg 1) " + lxC + "(shg 1)",
				"bd red: gw_red(bvi) " + vxB + "(shg 1) " + vxC + "(shg 1)",
				"route 10.70.0.64/26 via 10.70.0.64 gw_red in red",
				"vrf red IPV4",
				"vrf red IPV6",
			}},
		{"peers of another family, and shares outside the subnet or over the node's own, left out",
			crossnodeapi.Span{Interface: "vpp-ul", Address: self, Shares: ownShares, Peers: map[string]crossnodeapi.Peer{
				"v6":      {Address: netip.MustParseAddr("fd00::2"), Shares: b.Shares},
				"outside": {Address: netip.MustParseAddr("192.168.230.4"), Shares: map[string]netip.Prefix{"red": netip.MustParsePrefix("10.71.0.0/26")}},
				"over":    {Address: netip.MustParseAddr("192.168.230.5"), Shares: map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.0/25")}},
			}},
			[]string{
				"AF_PACKET underlay on vpp-ul 192.168.230.1/24",
				"SOFTWARE_LOOPBACK gw_red 10.70.0.1/24 mac 02:fe:c0:a8:e6:01",
				"VXLAN_TUNNEL " + wiring.TunnelName("lab", netip.MustParseAddr("192.168.230.4")) + " 192.168.230.1>192.168.230.4 vni lab",
				"VXLAN_TUNNEL " + wiring.TunnelName("lab", netip.MustParseAddr("192.168.230.5")) + " 192.168.230.1>192.168.230.5 vni lab",
				"VXLAN_TUNNEL " + wiring.TunnelName("red", netip.MustParseAddr("192.168.230.4")) + " 192.168.230.1>192.168.230.4 vni red",
				"VXLAN_TUNNEL " + wiring.TunnelName("red", netip.MustParseAddr("192.168.230.5")) + " 192.168.230.1>192.168.230.5 vni red",
				"bd lab: memif_a memif_b " + wiring.TunnelName("lab", netip.MustParseAddr("192.168.230.4")) + "(shg 1) " + wiring.TunnelName("lab", netip.MustParseAddr("192.168.230.5")) + "(shg 1)",
				"bd red: gw_red(bvi) " + wiring.TunnelName("red", netip.MustParseAddr("192.168.230.4")) + "(shg 1) " + wiring.TunnelName("red", netip.MustParseAddr("192.168.230.5")) + "(shg 1)",
				"vrf red IPV4",
				"vrf red IPV6",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := wiring.RenderNetworks(spanNetworks, map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.1/24")},
				map[string][]string{"lab": {"memif_b", "memif_a"}})
			wiring.RenderSpan(spanNetworks, tc.span, values)
			if got, want := describeValues(values), slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
				t.Errorf("rendered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for key, value := range values {
				if want := keyOf(value); want != key {
					t.Errorf("%s is keyed %s", want, key)
				}
			}
		})
	}
}

// keyOf is a value's KV-scheduler key.
func keyOf(value proto.Message) string {
	switch v := value.(type) {
	case *vpp_interfaces.Interface:
		return vpp_interfaces.InterfaceKey(v.Name)
	case *vpp_l2.BridgeDomain:
		return vpp_l2.BridgeDomainKey(v.Name)
	case *vpp_l3.Route:
		return vpp_l3.RouteKey(v.OutgoingInterface, v.VrfId, v.DstNetwork, v.NextHopAddr)
	case *vpp_l3.VrfTable:
		return vpp_l3.VrfTableKey(v.Id, v.Protocol)
	}
	return fmt.Sprintf("a %T", value)
}

// fakeSpan stands in for the crossnode plugin's span, which the tests set.
type fakeSpan struct{ span crossnodeapi.Span }

func (f *fakeSpan) Span() crossnodeapi.Span { return f.span }

// TestSpanChangedWiresWhatWaitedForTheShare: spanning nodes, a memif of
// an l3 network waits for the node's share (it gets no address of the
// whole subnet), and SpanChanged wires it in the share, with the
// network's bridge domain; a peer adds its tunnel and the route to its
// share, and goes with them. A SpanChanged renders the span as the
// source holds it: one queued with a span the source has gone past
// changes nothing.
func TestSpanChangedWiresWhatWaitedForTheShare(t *testing.T) {
	pod := podapi.Pod{ID: web.ID, UID: web.UID, Networks: `[{"network": "red"}]`}
	red := netconf.Config{Networks: spanNetworks.Networks[:1]}
	unclaimed := crossnodeapi.Span{Interface: "vpp-ul", Address: netip.MustParsePrefix("192.168.230.1/24")}
	claimed := unclaimed
	claimed.Shares = map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.64/26")}
	withPeer := claimed
	peer := netip.MustParseAddr("192.168.230.2")
	withPeer.Peers = map[string]crossnodeapi.Peer{"b": {Address: peer, Shares: map[string]netip.Prefix{"red": netip.MustParsePrefix("10.70.0.0/26")}}}
	tunnel := wiring.TunnelName("red", peer)
	source := &fakeSpan{unclaimed}
	handler, err := wiring.NewHandler(startDevices(t, []podMemif{boundMemif(web, "app", "memif-001")}), wiring.Config{},
		wiring.Options{Networks: fakeNetworksPlugin{red}, Span: source})
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]proto.Message{}
	for i, step := range []struct {
		// source is the span the source holds from this step on; nil:
		// as before.
		source *crossnodeapi.Span
		event  controllerapi.Event
		// want are the changes to the vswitch's values: +added, ~changed,
		// -deleted.
		want []string
	}{
		{nil, fullResync{}, []string{"+AF_PACKET underlay on vpp-ul 192.168.230.1/24"}},
		{nil, &podapi.AddPod{Pod: pod}, nil},
		{&claimed, &crossnodeapi.SpanChanged{Span: claimed}, []string{
			"+MEMIF memif_default_web_app_0",
			"+SOFTWARE_LOOPBACK gw_red 10.70.0.64/24 mac 02:fe:c0:a8:e6:01",
			"+bd red: gw_red(bvi)",
			"+route 10.70.0.65/32 via  memif_default_web_app_0 in red",
			"+vrf red IPV4",
			"+vrf red IPV6",
		}},
		{&withPeer, &crossnodeapi.SpanChanged{Span: withPeer}, []string{
			"+VXLAN_TUNNEL " + tunnel + " 192.168.230.1>192.168.230.2 vni red",
			"+route 10.70.0.0/26 via 10.70.0.1 gw_red in red",
			"~bd red: gw_red(bvi) " + tunnel + "(shg 1)",
		}},
		{nil, &crossnodeapi.SpanChanged{Span: claimed}, nil},
		{&claimed, &crossnodeapi.SpanChanged{Span: claimed}, []string{
			"-" + vpp_interfaces.InterfaceKey(tunnel),
			"-" + vpp_l3.RouteKey("gw_red", red.Networks[0].TableID(), "10.70.0.0/26", "10.70.0.1"),
			"~bd red: gw_red(bvi)",
		}},
	} {
		if !handler.HandlesEvent(step.event) {
			t.Fatalf("handler does not handle %s", step.event)
		}
		if step.source != nil {
			source.span = *step.source
		}
		txn := newRecordingTxn()
		if step.event.Spec().Method.IsResync() {
			err = handler.Resync(step.event, txn)
		} else {
			_, err = handler.Update(step.event, txn)
		}
		if err != nil {
			t.Fatalf("step %d, %s: %v", i+1, step.event, err)
		}
		if got, want := applyChanges(state, txn), slices.Sorted(slices.Values(step.want)); !slices.Equal(got, want) {
			t.Errorf("step %d, %s changed:\n%s\nwant:\n%s", i+1, step.event, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// applyChanges applies txn to state and words what changed, sorted.
func applyChanges(state map[string]proto.Message, txn *recordingTxn) []string {
	var changes []string
	for key, value := range txn.changes {
		old, had := state[key]
		switch {
		case value == nil && had:
			changes = append(changes, "-"+key)
			delete(state, key)
		case value == nil:
		case !had:
			changes = append(changes, "+"+describeValues(map[string]proto.Message{key: value})[0])
		case !proto.Equal(old, value):
			changes = append(changes, "~"+describeValues(map[string]proto.Message{key: value})[0])
		}
		if value != nil {
			state[key] = value
		}
	}
	slices.Sort(changes)
	return changes
}
