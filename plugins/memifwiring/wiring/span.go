package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"

	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// UnderlayInterface names VPP's interface into the underlay between nodes.
const UnderlayInterface = "underlay"

// splitHorizonGroup holds a network's tunnels in its bridge domain: what
// one peer floods does not go back out to the others, as every node
// floods to every peer itself (head-end replication).
const splitHorizonGroup = 1

// TunnelName names the VXLAN tunnel of network to the peer at addr: a
// peer that moves to another address gets another tunnel.
func TunnelName(network string, peer netip.Addr) string {
	sum := sha256.Sum256([]byte(peer.String()))
	return "vx_" + network + nameSeparator + hex.EncodeToString(sum[:])[:nameHashLength]
}

// gatewayMAC is the MAC address of the node's gateway loopbacks, which
// spanning nodes meet in the networks' bridge domains: VPP gives every
// node's first loopback the same one. It is derived from the node's
// underlay address (its last 32 bits), so it is the node's own, and the
// same after a restart.
func gatewayMAC(underlay netip.Addr) string {
	b := underlay.As16()
	return fmt.Sprintf("02:fe:%02x:%02x:%02x:%02x", b[12], b[13], b[14], b[15])
}

// RenderSpan adds to values, the networks' own values as RenderNetworks
// made them, what carries the networks to the other nodes when span is
// enabled (nothing otherwise): VPP's AF_PACKET interface into the
// underlay with the node's underlay address; for each network rendered,
// a VXLAN tunnel (the network's VNI) to each peer of the underlay's
// family, in the network's bridge domain in split-horizon group 1. An l2
// network's bridge domain is the one of its memifs; an l3 network's
// gateway loopback becomes the BVI of a bridge domain of its own, with a
// MAC address of the node's, and the network's VRF routes each peer's
// share through that peer's gateway, on link in the whole subnet the
// loopback holds.
func RenderSpan(networks netconf.Config, span crossnodeapi.Span, values map[string]proto.Message) {
	if !span.Enabled() {
		return
	}
	self := span.Address.Addr()
	underlay := &vpp_interfaces.Interface{Name: UnderlayInterface, Type: vpp_interfaces.Interface_AF_PACKET, Enabled: true,
		IpAddresses: []string{span.Address.String()},
		Link:        &vpp_interfaces.Interface_Afpacket{Afpacket: &vpp_interfaces.AfpacketLink{HostIfName: span.Interface}}}
	values[vpp_interfaces.InterfaceKey(underlay.Name)] = underlay
	var peers []string
	for _, name := range slices.Sorted(maps.Keys(span.Peers)) {
		if addr := span.Peers[name].Address; addr.Is4() == self.Is4() && addr != self {
			peers = append(peers, name)
		}
	}
	for _, n := range networks.Networks {
		var domain *vpp_l2.BridgeDomain
		switch n.Type {
		case netconf.L2:
			bd, ok := values[vpp_l2.BridgeDomainKey(n.Name)].(*vpp_l2.BridgeDomain)
			if !ok {
				continue
			}
			domain = bd
		case netconf.L3:
			gateway, ok := values[vpp_interfaces.InterfaceKey(gatewayName(n.Name))].(*vpp_interfaces.Interface)
			if !ok {
				continue
			}
			gateway.PhysAddress = gatewayMAC(self)
			domain = RenderBridgeDomain(n.Name, nil)
			domain.Interfaces = []*vpp_l2.BridgeDomain_Interface{{Name: gateway.Name, BridgedVirtualInterface: true}}
			values[vpp_l2.BridgeDomainKey(n.Name)] = domain
			renderPeerRoutes(n, span, peers, gateway.Name, values)
		default:
			continue
		}
		for _, name := range peers {
			tunnel := &vpp_interfaces.Interface{Name: TunnelName(n.Name, span.Peers[name].Address), Type: vpp_interfaces.Interface_VXLAN_TUNNEL, Enabled: true,
				Link: &vpp_interfaces.Interface_Vxlan{Vxlan: &vpp_interfaces.VxlanLink{SrcAddress: self.String(), DstAddress: span.Peers[name].Address.String(), Vni: n.VNI()}}}
			values[vpp_interfaces.InterfaceKey(tunnel.Name)] = tunnel
			domain.Interfaces = append(domain.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: tunnel.Name, SplitHorizonGroup: splitHorizonGroup})
		}
	}
}

// renderPeerRoutes routes, in l3 network n's VRF, each peer's share of
// n's subnet through that peer's gateway. A share that is not of the
// subnet, or overlaps the node's own (networks.conf differs between the
// nodes, or changes), is left out.
func renderPeerRoutes(n netconf.Network, span crossnodeapi.Span, peers []string, gateway string, values map[string]proto.Message) {
	subnet, own := n.Prefix(), span.Shares[n.Name]
	for _, name := range peers {
		share, ok := span.Peers[name].Shares[n.Name]
		if !ok || share.Bits() < subnet.Bits() || !subnet.Contains(share.Addr()) || own.IsValid() && own.Overlaps(share) {
			continue
		}
		route := &vpp_l3.Route{Type: vpp_l3.Route_INTRA_VRF, VrfId: n.TableID(), DstNetwork: share.String(),
			NextHopAddr: ipam.GatewayOf(subnet, share).String(), OutgoingInterface: gateway}
		values[routeKey(route)] = route
	}
}
