package wiring

import (
	"net/netip"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// gatewayName names the loopback that holds an l3 network's gateway.
func gatewayName(network string) string { return "gw_" + network }

// renderInNetwork fills in iface, a memif of an allocation, from what it
// was assigned, and returns the route to its pod address (nil for an l2
// network).
func renderInNetwork(iface *vpp_interfaces.Interface, assignment assign.Assignment) *vpp_l3.Route {
	memif := assignment.Memif
	link := iface.GetMemif()
	link.RxQueues, link.TxQueues = memif.Queues, memif.Queues
	link.RingSize, link.BufferSize = memif.RingSize, memif.BufferSize
	iface.Mtu = memif.MTU
	iface.Vrf = 0
	iface.RxModes = nil
	if mode, ok := rxModes[string(memif.RxMode)]; ok {
		iface.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: mode}}
	}
	if memif.Network.Type != netconf.L3 {
		link.Mode = vpp_interfaces.MemifLink_ETHERNET
		return nil
	}
	link.Mode = vpp_interfaces.MemifLink_IP
	iface.Vrf = memif.Network.TableID()
	iface.Unnumbered = &vpp_interfaces.Interface_Unnumbered{InterfaceWithIp: gatewayName(memif.Network.Name)}
	host := netip.PrefixFrom(assignment.Address.Addr(), assignment.Address.Addr().BitLen())
	return &vpp_l3.Route{Type: vpp_l3.Route_INTRA_VRF, VrfId: iface.Vrf, DstNetwork: host.String(), OutgoingInterface: iface.Name}
}

func routeKey(route *vpp_l3.Route) string {
	return vpp_l3.RouteKey(route.OutgoingInterface, route.VrfId, route.DstNetwork, route.NextHopAddr)
}

// RenderNetworks returns the vswitch side of the networks themselves:
// for each l3 network its VRF tables (IPv4 and IPv6, named after it) and
// the loopback in that VRF holding its gateway; for each l2 network with
// members, its bridge domain holding them. members are the interface
// names of each network's memifs.
func RenderNetworks(networks netconf.Config, gateways map[string]netip.Prefix, members map[string][]string) map[string]proto.Message {
	values := map[string]proto.Message{}
	for _, n := range networks.Networks {
		switch n.Type {
		case netconf.L3:
			gateway, ok := gateways[n.Name]
			if !ok {
				continue
			}
			for _, protocol := range []vpp_l3.VrfTable_Protocol{vpp_l3.VrfTable_IPV4, vpp_l3.VrfTable_IPV6} {
				values[vpp_l3.VrfTableKey(n.TableID(), protocol)] = &vpp_l3.VrfTable{Id: n.TableID(), Protocol: protocol, Label: n.Name}
			}
			loopback := &vpp_interfaces.Interface{Name: gatewayName(n.Name), Type: vpp_interfaces.Interface_SOFTWARE_LOOPBACK,
				Enabled: true, Vrf: n.TableID(), IpAddresses: []string{gateway.String()}}
			values[vpp_interfaces.InterfaceKey(loopback.Name)] = loopback
		case netconf.L2:
			if len(members[n.Name]) == 0 {
				continue
			}
			var keys []string
			for _, name := range members[n.Name] {
				keys = append(keys, vpp_interfaces.InterfaceKey(name))
			}
			values[vpp_l2.BridgeDomainKey(n.Name)] = RenderBridgeDomain(n.Name, keys)
		}
	}
	return values
}

// gatewayOf is the gateway loopback's address of an l3 network: the
// share's first address with the subnet's prefix length.
func gatewayOf(assignment assign.Assignment) netip.Prefix {
	return netip.PrefixFrom(assignment.Gateway, assignment.Address.Bits())
}

// memifNetwork words an assignment for the device manager's lookups.
func memifNetwork(assignment assign.Assignment) dmapi.MemifNetwork {
	if assignment.Refused != nil {
		return dmapi.MemifNetwork{MemifID: assignment.MemifID, Refused: assignment.Refused.Message, Reason: string(assignment.Refused.Reason)}
	}
	memif := assignment.Memif
	info := dmapi.MemifNetwork{MemifID: assignment.MemifID, Network: memif.Network.Name, Mode: string(memif.Mode),
		Queues: memif.Queues, RingSize: memif.RingSize, BufferSize: memif.BufferSize, MTU: memif.MTU, RxMode: string(memif.RxMode)}
	if memif.MAC != nil {
		info.MAC = memif.MAC.String()
	}
	if assignment.Address.IsValid() {
		info.IPs = []string{assignment.Address.String()}
		info.Gateway = []string{assignment.Gateway.String()}
	}
	return info
}

// legacyNetwork words a memif in no network.
func legacyNetwork(memifID int) dmapi.MemifNetwork {
	return dmapi.MemifNetwork{MemifID: uint32(memifID), Mode: string(memifspec.ModeEthernet),
		Queues: memifspec.DefaultQueues, RingSize: memifspec.DefaultRingSize, BufferSize: memifspec.DefaultBufferSize}
}
