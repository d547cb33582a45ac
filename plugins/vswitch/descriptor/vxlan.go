package descriptor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// maxVNI is the largest VXLAN network identifier (24 bits).
const maxVNI = 1<<24 - 1

// validateVxlanTunnel checks a VXLAN_TUNNEL interface: a unicast tunnel
// between two underlay addresses of one family, encapsulated in the
// default table, and an L2 port: it carries a network as a member of the
// network's bridge domain, which a BVI routes in the network's VRF. (VPP's
// L3 mode of VXLAN has no MAC address, and this VPP crashes in ip4-glean
// when it resolves a neighbour through one.) VPP sets its MTU and MAC
// address itself.
func validateVxlanTunnel(iface *vpp_interfaces.Interface) error {
	link := iface.GetVxlan()
	src, srcErr := netip.ParseAddr(link.SrcAddress)
	dst, dstErr := netip.ParseAddr(link.DstAddress)
	switch {
	case srcErr != nil || dstErr != nil || src.Zone() != "" || dst.Zone() != "":
		return fmt.Errorf("VXLAN from %q to %q: want two IP addresses", link.SrcAddress, link.DstAddress)
	case src.Unmap().Is4() != dst.Unmap().Is4():
		return fmt.Errorf("VXLAN from %s to %s: want two addresses of one family", src, dst)
	case src.Unmap() == dst.Unmap() || dst.IsMulticast() || link.Multicast != "" || link.Gpe != nil:
		return fmt.Errorf("VXLAN from %s to %s: only unicast tunnels between two addresses, without GPE, are supported", src, dst)
	case link.Vni == 0 || link.Vni > maxVNI:
		return fmt.Errorf("VNI %d: want 1 to %d", link.Vni, maxVNI)
	case iface.Mtu != 0 || iface.PhysAddress != "" || len(iface.RxModes) > 0:
		return fmt.Errorf("MTU, MAC address and rx modes of a VXLAN tunnel are VPP's: leave them out")
	case iface.Vrf != 0 || len(iface.IpAddresses) > 0 || iface.Unnumbered != nil:
		return fmt.Errorf("a VXLAN tunnel is an L2 port of a bridge domain: route through the bridge domain's BVI (a loopback in the VRF) instead of a VRF or addresses on the tunnel")
	}
	return nil
}

// vxlanRequest is the request that adds or deletes the model's tunnel:
// VPP finds a tunnel to delete by the same addresses, ports and VNI.
func vxlanRequest(iface *vpp_interfaces.Interface, add bool) *vppmsg.VxlanAddDelTunnelV3 {
	link := iface.GetVxlan()
	src, _ := netip.ParseAddr(link.SrcAddress)
	dst, _ := netip.ParseAddr(link.DstAddress)
	return &vppmsg.VxlanAddDelTunnelV3{IsAdd: add, Instance: ^uint32(0), SrcAddress: toVPPAddress(src.Unmap()), DstAddress: toVPPAddress(dst.Unmap()),
		McastSwIfIndex: allInterfaces, DecapNextIndex: ^uint32(0), Vni: link.Vni}
}

func createVxlanTunnel(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) (*InterfaceMetadata, error) {
	var created vppmsg.VxlanAddDelTunnelV3Reply
	if err := request(ctx, conn, vxlanRequest(iface, true), &created); err != nil {
		link := iface.GetVxlan()
		return nil, fmt.Errorf("VXLAN from %s to %s, VNI %d: %w", link.SrcAddress, link.DstAddress, link.Vni, err)
	}
	return &InterfaceMetadata{Index: created.SwIfIndex, connection: conn.Generation()}, nil
}

func removeVxlanTunnel(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) error {
	return request(ctx, conn, vxlanRequest(iface, false), &vppmsg.VxlanAddDelTunnelV3Reply{})
}

// readVxlanTunnels returns VPP's VXLAN tunnels by index; none when VPP
// does not load the vxlan plugin.
func readVxlanTunnels(ctx context.Context, conn *vppapi.Conn) (map[vppmsg.InterfaceIndex]*vppmsg.VxlanTunnelV2Details, error) {
	tunnels, err := vppapi.Dump[vppmsg.VxlanTunnelV2Details](ctx, conn, &vppmsg.VxlanTunnelV2Dump{SwIfIndex: allInterfaces})
	if errors.Is(err, vppapi.ErrNoPlugin) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dump VPP VXLAN tunnels: %w", err)
	}
	byIndex := make(map[vppmsg.InterfaceIndex]*vppmsg.VxlanTunnelV2Details, len(tunnels))
	for _, tunnel := range tunnels {
		byIndex[tunnel.SwIfIndex] = tunnel
	}
	return byIndex, nil
}

// readBackVxlan is the tunnel as VPP reports it, its addresses written as
// want writes them when they are the same.
func readBackVxlan(tunnel *vppmsg.VxlanTunnelV2Details, want *vpp_interfaces.VxlanLink) *vpp_interfaces.VxlanLink {
	sameAs := func(addr netip.Addr, written string) string {
		if parsed, err := netip.ParseAddr(written); err == nil && parsed.Unmap() == addr {
			return written
		}
		return addr.String()
	}
	src, dst := fromVPPAddress(tunnel.SrcAddress), fromVPPAddress(tunnel.DstAddress)
	return &vpp_interfaces.VxlanLink{SrcAddress: sameAs(src, want.GetSrcAddress()), DstAddress: sameAs(dst, want.GetDstAddress()), Vni: tunnel.Vni}
}

// toVPPAddress encodes an address, IPv4 or IPv6.
func toVPPAddress(addr netip.Addr) vppmsg.Address {
	var vpp vppmsg.Address
	if addr.Is4() {
		ip4 := addr.As4()
		copy(vpp.Un[:], ip4[:])
		return vpp
	}
	vpp.Af = vppmsg.AddressIP6
	vpp.Un = addr.As16()
	return vpp
}

func fromVPPAddress(vpp vppmsg.Address) netip.Addr {
	if vpp.Af == vppmsg.AddressIP4 {
		return netip.AddrFrom4([4]byte(vpp.Un[:4]))
	}
	return netip.AddrFrom16(vpp.Un)
}
