package descriptor

import (
	"context"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// underlayState is VPP's af_packet interfaces and VXLAN tunnels, by
// index: the interfaces of networks that span nodes, which the interface
// Retrieve reads back beside memifs and loopbacks.
type underlayState struct {
	hosts   map[vppmsg.InterfaceIndex]*vppmsg.AfPacketDetails
	tunnels map[vppmsg.InterfaceIndex]*vppmsg.VxlanTunnelV2Details
}

func readUnderlayState(ctx context.Context, conn *vppapi.Conn) (underlayState, error) {
	hosts, err := readHostInterfaces(ctx, conn)
	if err != nil {
		return underlayState{}, err
	}
	tunnels, err := readVxlanTunnels(ctx, conn)
	return underlayState{hosts: hosts, tunnels: tunnels}, err
}

// holds tells whether the interface at index is a host interface or a
// VXLAN tunnel.
func (s underlayState) holds(index vppmsg.InterfaceIndex) bool {
	return s.hosts[index] != nil || s.tunnels[index] != nil
}

// readBack sets iface's type and link when the interface at index is a
// host interface or a VXLAN tunnel.
func (s underlayState) readBack(iface *vpp_interfaces.Interface, index vppmsg.InterfaceIndex, want *vpp_interfaces.Interface) {
	if host := s.hosts[index]; host != nil {
		iface.Type = vpp_interfaces.Interface_AF_PACKET
		iface.Link = &vpp_interfaces.Interface_Afpacket{Afpacket: &vpp_interfaces.AfpacketLink{HostIfName: host.HostIfName}}
	}
	if tunnel := s.tunnels[index]; tunnel != nil {
		iface.Type = vpp_interfaces.Interface_VXLAN_TUNNEL
		iface.Link = &vpp_interfaces.Interface_Vxlan{Vxlan: readBackVxlan(tunnel, want.GetVxlan())}
	}
}
