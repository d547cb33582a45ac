package descriptor

import (
	"context"
	"errors"
	"fmt"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// maxHostIfName bounds a Linux interface name (IFNAMSIZ without the NUL).
const maxHostIfName = 15

// validateHostInterface checks an AF_PACKET interface: VPP on a Linux
// link (af_packet), such as the node's end of a veth into the underlay.
func validateHostInterface(iface *vpp_interfaces.Interface) error {
	switch name := iface.GetAfpacket().GetHostIfName(); {
	case name == "" || len(name) > maxHostIfName:
		return fmt.Errorf("host interface name %q: want the Linux interface's name, 1 to %d bytes", name, maxHostIfName)
	case len(iface.RxModes) > 0:
		return fmt.Errorf("rx modes of a host interface are not supported by this agent's VPP descriptor: leave them out")
	}
	return nil
}

// createHostInterface puts VPP on the Linux interface the model names
// (af_packet_create_v3, Ethernet mode, one rx and one tx queue), with the
// model's MAC address, or a random one.
func createHostInterface(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) (*InterfaceMetadata, error) {
	host := iface.GetAfpacket().GetHostIfName()
	req := &vppmsg.AfPacketCreateV3{Mode: vppmsg.AfPacketAPIModeEthernet, HostIfName: host, NumRxQueues: 1, NumTxQueues: 1, UseRandomHwAddr: true}
	if iface.PhysAddress != "" {
		req.HwAddr, _ = parseMAC(iface.PhysAddress)
		req.UseRandomHwAddr = false
	}
	var created vppmsg.AfPacketCreateV3Reply
	if err := request(ctx, conn, req, &created); err != nil {
		return nil, fmt.Errorf("on Linux interface %s (it must exist in VPP's network namespace): %w", host, err)
	}
	return &InterfaceMetadata{Index: created.SwIfIndex, connection: conn.Generation()}, nil
}

func removeHostInterface(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) error {
	return request(ctx, conn, &vppmsg.AfPacketDelete{HostIfName: iface.GetAfpacket().GetHostIfName()}, &vppmsg.AfPacketDeleteReply{})
}

// readHostInterfaces returns VPP's af_packet interfaces by index; none
// when VPP does not load the af_packet plugin.
func readHostInterfaces(ctx context.Context, conn *vppapi.Conn) (map[vppmsg.InterfaceIndex]*vppmsg.AfPacketDetails, error) {
	hosts, err := vppapi.Dump[vppmsg.AfPacketDetails](ctx, conn, &vppmsg.AfPacketDump{})
	if errors.Is(err, vppapi.ErrNoPlugin) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dump VPP host interfaces: %w", err)
	}
	byIndex := make(map[vppmsg.InterfaceIndex]*vppmsg.AfPacketDetails, len(hosts))
	for _, host := range hosts {
		byIndex[host.SwIfIndex] = host
	}
	return byIndex, nil
}
