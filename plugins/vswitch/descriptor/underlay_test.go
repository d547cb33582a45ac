package descriptor_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// waitLimit bounds the wait for a ping through a new tunnel, which takes
// a second or less on a quiet machine (the neighbour is resolved first).
const waitLimit = time.Minute

// underlayPlugins are the VPP plugins of networks that span nodes, and
// ping for the traffic across them.
var underlayPlugins = vpp.Plugins("af_packet", "vxlan", "ping")

// vethPair creates a veth pair on the host for t, both ends up, and
// returns the ends' names; it is deleted when t ends.
func vethPair(t *testing.T) (string, string) {
	t.Helper()
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	a, b := "mu"+hex.EncodeToString(id[:])+"a", "mu"+hex.EncodeToString(id[:])+"b"
	for _, args := range [][]string{{"link", "add", a, "type", "veth", "peer", "name", b}, {"link", "set", a, "up"}, {"link", "set", b, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", a).Run() })
	return a, b
}

// hostInterface is the model of VPP on Linux interface host, with address.
func hostInterface(name, host, address string) *vpp_interfaces.Interface {
	return &vpp_interfaces.Interface{Name: name, Type: vpp_interfaces.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{address},
		Link: &vpp_interfaces.Interface_Afpacket{Afpacket: &vpp_interfaces.AfpacketLink{HostIfName: host}}}
}

// vxlanTunnel is the model of a VXLAN tunnel from src to dst.
func vxlanTunnel(name, src, dst string, vni uint32, change func(*vpp_interfaces.Interface)) *vpp_interfaces.Interface {
	iface := &vpp_interfaces.Interface{Name: name, Type: vpp_interfaces.Interface_VXLAN_TUNNEL, Enabled: true,
		Link: &vpp_interfaces.Interface_Vxlan{Vxlan: &vpp_interfaces.VxlanLink{SrcAddress: src, DstAddress: dst, Vni: vni}}}
	if change != nil {
		change(iface)
	}
	return iface
}

// routedOverVxlan is one node's side of an l3 network routed across the
// underlay: VRF 30, the node's host interface with its underlay address,
// a VXLAN tunnel to the peer, and bridge domain red joining the tunnel
// (split-horizon group 1) and a BVI loopback holding the node's address
// in VRF 30. The BVI's MAC address is the node's own (VPP numbers every
// node's first loopback de:ad:00:00:00:00): bvi carries it.
func routedOverVxlan(host, underlay, peer, overlay, mac string) map[string]proto.Message {
	bvi := loopback("gw-red", 30, overlay+"/24")
	bvi.PhysAddress = mac
	values := with(vrf(30, "red"), hostInterface("underlay", host, underlay+"/24"),
		vxlanTunnel("vx-red-peer", underlay, peer, 30, nil), bvi)
	values[vpp_l2.BridgeDomainKey("red")] = &vpp_l2.BridgeDomain{Name: "red", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true,
		Interfaces: []*vpp_l2.BridgeDomain_Interface{{Name: "gw-red", BridgedVirtualInterface: true}, {Name: "vx-red-peer", SplitHorizonGroup: 1}}}
	return values
}

// TestVxlanAcrossTheUnderlay runs two VPPs, each on one end of a veth
// pair (af_packet) with an underlay address, and routes VRF 30 between
// them over a VXLAN tunnel (routedOverVxlan): VPP holds the models, one
// VPP pings the other's BVI in VRF 30, an agent restart changes nothing,
// and removing the models leaves neither host interface nor tunnel.
func TestVxlanAcrossTheUnderlay(t *testing.T) {
	ends := [2]string{}
	ends[0], ends[1] = vethPair(t)
	underlay := [2]string{"192.168.230.1", "192.168.230.2"}
	overlay := [2]string{"10.30.0.1", "10.30.0.2"}
	var vpps [2]*vpp.VPP
	var values [2]map[string]proto.Message
	for i := range vpps {
		vpps[i] = vpp.Start(t, underlayPlugins)
		values[i] = routedOverVxlan(ends[i], underlay[i], underlay[1-i], overlay[i], fmt.Sprintf("02:fe:00:00:00:%02x", i+1))
		a := startAgent(t, vpps[i])
		a.commit(t, values[i])
		// The KV scheduler keeps its statistics in globals: two
		// schedulers of one process may not process at once.
		a.scheduler.TransactionBarrier()
	}

	conn, err := vppapi.Dial(t.Context(), vpps[0].APISocket, "descriptor-test-underlay", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hosts := dump[vppmsg.AfPacketDetails](t, conn, &vppmsg.AfPacketDump{})
	if len(hosts) != 1 || hosts[0].HostIfName != ends[0] {
		t.Fatalf("VPP's host interfaces: %+v, want one on %s", hosts, ends[0])
	}
	tunnels := dump[vppmsg.VxlanTunnelV2Details](t, conn, &vppmsg.VxlanTunnelV2Dump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if len(tunnels) != 1 || tunnels[0].Vni != 30 || tunnels[0].EncapVrfID != 0 {
		t.Fatalf("VPP's VXLAN tunnels: %+v, want one of VNI 30 encapsulated in table 0", tunnels)
	}
	if got := readVPP(t, vpps[0])["underlay"]; got == nil || !slices.Equal(got.addresses, []string{underlay[0] + "/24"}) {
		t.Fatalf("VPP's host interface: %+v, want tagged %s with %s/24", got, owner.Tag("underlay"), underlay[0])
	}
	wantMembers(t, vpps[0], "red", map[string]uint8{"gw-red": 0, "vx-red-peer": 1}, "gw-red")

	poll.Until(t, waitLimit, "a ping through the tunnel in VRF 30", func() error {
		out := vpps[0].CLI(t, "ping", overlay[1], "table-id", "30", "repeat", "3", "interval", "0.1")
		if !strings.Contains(out, "3 sent, 3 received") {
			return fmt.Errorf("ping says: %s", out)
		}
		return nil
	})

	restarted := startAgent(t, vpps[0])
	wantNoOps(t, "resync after an agent restart", restarted.resync(t, values[0]))
	restarted.scheduler.TransactionBarrier()

	startAgent(t, vpps[0]).resync(t, nil)
	if hosts := dump[vppmsg.AfPacketDetails](t, conn, &vppmsg.AfPacketDump{}); len(hosts) != 0 {
		t.Errorf("host interfaces left: %+v", hosts)
	}
	if tunnels := dump[vppmsg.VxlanTunnelV2Details](t, conn, &vppmsg.VxlanTunnelV2Dump{SwIfIndex: ^vppmsg.InterfaceIndex(0)}); len(tunnels) != 0 {
		t.Errorf("VXLAN tunnels left: %+v", tunnels)
	}
}

// TestVxlanTunnelsInABridgeDomain stretches an l2 network to two peers:
// one tunnel each, both in the network's bridge domain in split-horizon
// group 1 (what one peer floods does not go back out to the other); an
// agent restart changes nothing, and a peer's tunnel goes alone.
func TestVxlanTunnelsInABridgeDomain(t *testing.T) {
	v := vpp.Start(t, underlayPlugins)
	host, _ := vethPair(t)
	lab := func(members ...string) *vpp_l2.BridgeDomain {
		domain := &vpp_l2.BridgeDomain{Name: "lab", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true}
		for _, member := range members {
			domain.Interfaces = append(domain.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: member, SplitHorizonGroup: 1})
		}
		return domain
	}
	toB := vxlanTunnel("vx-lab-b", "192.168.231.1", "192.168.231.2", 40, nil)
	toC := vxlanTunnel("vx-lab-c", "192.168.231.1", "192.168.231.3", 40, nil)
	values := with(map[string]proto.Message{vpp_l2.BridgeDomainKey("lab"): lab(toB.Name, toC.Name)},
		hostInterface("underlay", host, "192.168.231.1/24"), toB, toC)
	a := startAgent(t, v)
	a.commit(t, values)
	a.scheduler.TransactionBarrier()
	wantMembers(t, v, "lab", map[string]uint8{toB.Name: 1, toC.Name: 1}, "")
	restarted := startAgent(t, v)
	wantNoOps(t, "resync after an agent restart", restarted.resync(t, values))
	restarted.scheduler.TransactionBarrier()

	restarted.commit(t, map[string]proto.Message{vpp_interfaces.InterfaceKey(toC.Name): nil, vpp_l2.BridgeDomainKey("lab"): lab(toB.Name)})
	wantMembers(t, v, "lab", map[string]uint8{toB.Name: 1}, "")
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-vxlan", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tunnels := dump[vppmsg.VxlanTunnelV2Details](t, conn, &vppmsg.VxlanTunnelV2Dump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if len(tunnels) != 1 || tunnels[0].DstAddress.Un[3] != 2 {
		t.Errorf("VPP's VXLAN tunnels: %+v, want the one to 192.168.231.2", tunnels)
	}
}

// wantMembers checks that bridge domain name holds exactly members, each
// in its split-horizon group, and bvi as its BVI ("": none).
func wantMembers(t *testing.T, v *vpp.VPP, name string, members map[string]uint8, bvi string) {
	t.Helper()
	ifaces := readVPP(t, v)
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-members", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	domains := dump[vppmsg.BridgeDomainDetails](t, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if len(domains) != 1 || domains[0].BdTag != owner.Tag(name) {
		t.Fatalf("VPP's bridge domains: %+v, want %s alone", domains, name)
	}
	got, gotBVI := map[string]uint8{}, ""
	for ifName, iface := range ifaces {
		for _, member := range domains[0].SwIfDetails {
			if iface.details.SwIfIndex == member.SwIfIndex {
				got[ifName] = member.Shg
			}
		}
		if iface.details.SwIfIndex == domains[0].BviSwIfIndex {
			gotBVI = ifName
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(members) || gotBVI != bvi {
		t.Errorf("bridge domain %s's members (split-horizon group): %v, BVI %q; want %v, BVI %q", name, got, gotBVI, members, bvi)
	}
}

func TestUnderlayModelsValidate(t *testing.T) {
	validate := descriptor.NewInterfaces(nil).Descriptor().Validate
	for _, tc := range []struct {
		name  string
		iface *vpp_interfaces.Interface
		want  string // "" for valid
	}{
		{"host interface", hostInterface("underlay", "eth1", "192.168.0.1/24"), ""},
		{"host interface without a host", hostInterface("underlay", "", "192.168.0.1/24"), "host interface name"},
		{"host name too long", hostInterface("underlay", "a-very-long-name", "192.168.0.1/24"), "1 to 15 bytes"},
		{"IPv6 tunnel", vxlanTunnel("vx", "fd00::1", "fd00::2", 5, nil), ""},
		{"tunnel in a VRF", vxlanTunnel("vx", "192.168.0.1", "192.168.0.2", 5, func(i *vpp_interfaces.Interface) { i.Vrf = 30 }), "an L2 port of a bridge domain"},
		{"tunnel with an address", vxlanTunnel("vx", "192.168.0.1", "192.168.0.2", 5, func(i *vpp_interfaces.Interface) { i.IpAddresses = []string{"10.0.0.1/24"} }), "route through the bridge domain's BVI"},
		{"tunnel between families", vxlanTunnel("vx", "192.168.0.1", "fd00::2", 5, nil), "one family"},
		{"tunnel to a name", vxlanTunnel("vx", "192.168.0.1", "node-b", 5, nil), "want two IP addresses"},
		{"tunnel to itself", vxlanTunnel("vx", "192.168.0.1", "192.168.0.1", 5, nil), "only unicast tunnels"},
		{"multicast tunnel", vxlanTunnel("vx", "192.168.0.1", "239.1.1.1", 5, nil), "only unicast tunnels"},
		{"VNI 0", vxlanTunnel("vx", "192.168.0.1", "192.168.0.2", 0, nil), "VNI 0"},
		{"VNI past 24 bits", vxlanTunnel("vx", "192.168.0.1", "192.168.0.2", 1<<24, nil), "want 1 to 16777215"},
		{"tunnel MTU", vxlanTunnel("vx", "192.168.0.1", "192.168.0.2", 5, func(i *vpp_interfaces.Interface) { i.Mtu = 1400 }), "leave them out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(vpp_interfaces.InterfaceKey(tc.iface.Name), tc.iface)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestBridgeDomainBVIValidate(t *testing.T) {
	validate := descriptor.NewBridgeDomains(nil, descriptor.InterfaceIndex{}).Descriptor().Validate
	member := func(name string, shg uint32, bvi bool) *vpp_l2.BridgeDomain_Interface {
		return &vpp_l2.BridgeDomain_Interface{Name: name, SplitHorizonGroup: shg, BridgedVirtualInterface: bvi}
	}
	for _, tc := range []struct {
		name    string
		members []*vpp_l2.BridgeDomain_Interface
		want    string // "" for valid
	}{
		{"a BVI and tunnels", []*vpp_l2.BridgeDomain_Interface{member("gw", 0, true), member("vx-b", 1, false), member("vx-c", 1, false)}, ""},
		{"two BVIs", []*vpp_l2.BridgeDomain_Interface{member("gw", 0, true), member("gw2", 0, true)}, "BVIs gw and gw2"},
		{"a BVI in a split-horizon group", []*vpp_l2.BridgeDomain_Interface{member("gw", 1, true)}, "a BVI is in none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &vpp_l2.BridgeDomain{Name: "red", Interfaces: tc.members}
			err := validate(vpp_l2.BridgeDomainKey(bd.Name), bd)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
