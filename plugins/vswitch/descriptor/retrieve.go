package descriptor

import (
	"context"
	"fmt"
	"net"
	"slices"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// loopbackDevType is how sw_interface_details names a loopback's device.
const loopbackDevType = "Loopback"

// retrieve reports every memif, loopback, host interface and VXLAN tunnel
// tagged as the agent's as the model that made it, with its metadata. It
// reads VPP's interfaces, memifs, sockets, host interfaces, tunnels and
// unnumbered bindings once, and each interface's addresses, tables and
// rx queues: a cost linear in the number of interfaces.
func (d *Interfaces) retrieve(correlate []typedKV[*vpp_interfaces.Interface, *InterfaceMetadata]) ([]typedKV[*vpp_interfaces.Interface, *InterfaceMetadata], error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read interfaces from VPP: %w", err)
	}
	ctx := context.Background()
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, err
	}
	if d.links != nil {
		d.links.observe(state)
	}
	underlay, err := readUnderlayState(ctx, conn)
	if err != nil {
		return nil, err
	}
	unnumbered, err := vppapi.Dump[vppmsg.IPUnnumberedDetails](ctx, conn, &vppmsg.IPUnnumberedDump{SwIfIndex: allInterfaces})
	if err != nil {
		return nil, fmt.Errorf("dump VPP unnumbered interfaces: %w", err)
	}
	borrows := make(map[vppmsg.InterfaceIndex]string, len(unnumbered))
	for _, u := range unnumbered {
		if withIP := state.interfaces[u.IPSwIfIndex]; withIP != nil {
			if name, ours := owner.Name(withIP.Tag); ours {
				borrows[u.SwIfIndex] = name
			}
		}
	}
	wanted := map[string]*vpp_interfaces.Interface{}
	for _, kv := range correlate {
		wanted[kv.Value.Name] = kv.Value
	}
	var values []typedKV[*vpp_interfaces.Interface, *InterfaceMetadata]
	for index, details := range state.interfaces {
		memif := state.memifs[index]
		name, ours := owner.Name(details.Tag)
		if !ours || (memif == nil && details.InterfaceDevType != loopbackDevType && !underlay.holds(index)) {
			continue
		}
		want := wanted[name]
		var socket string
		if memif != nil {
			socket = state.sockets[memif.SocketID]
		}
		iface := readBackInterface(name, details, memif, socket, borrows[index], want)
		underlay.readBack(iface, index, want)
		if err := readL3(ctx, conn, index, iface, want); err != nil {
			return nil, fmt.Errorf("read interface %s from VPP: %w", name, err)
		}
		values = append(values, typedKV[*vpp_interfaces.Interface, *InterfaceMetadata]{Key: vpp_interfaces.InterfaceKey(iface.Name), Value: iface,
			Metadata: state.metadata(conn, index), Origin: kvs.FromNB})
	}
	return values, nil
}

// readBackInterface is the model of the agent's interface name from what
// the dumps say. A model without MTU or MAC address leaves VPP's own, whatever it
// is, so those are reported only when want has them.
func readBackInterface(name string, details *vppmsg.SwInterfaceDetails, memif *vppmsg.MemifDetails, socket, borrowsFrom string, want *vpp_interfaces.Interface) *vpp_interfaces.Interface {
	iface := &vpp_interfaces.Interface{
		Name:    name,
		Type:    vpp_interfaces.Interface_SOFTWARE_LOOPBACK,
		Enabled: details.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0,
	}
	if memif != nil {
		iface.Type = vpp_interfaces.Interface_MEMIF
		iface.Link = &vpp_interfaces.Interface_Memif{Memif: readBackMemif(memif, socket, want.GetMemif())}
	}
	if borrowsFrom != "" {
		iface.Unnumbered = &vpp_interfaces.Interface_Unnumbered{InterfaceWithIp: borrowsFrom}
	}
	if want.GetMtu() != 0 {
		iface.Mtu = uint32(details.LinkMTU)
		if isIPMemif(iface) {
			iface.Mtu = details.MTU[0]
		}
	}
	if want.GetPhysAddress() != "" {
		iface.PhysAddress = net.HardwareAddr(details.L2Address[:]).String()
		if mac, err := parseMAC(want.PhysAddress); err == nil && mac == details.L2Address {
			iface.PhysAddress = want.PhysAddress
		}
	}
	return iface
}

// readL3 reads an interface's addresses, VRF and rx modes into iface.
func readL3(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, iface, want *vpp_interfaces.Interface) error {
	var err error
	if iface.IpAddresses, err = readAddresses(ctx, conn, index, want.GetIpAddresses()); err != nil {
		return err
	}
	if iface.Vrf, err = readVRF(ctx, conn, index, want.GetVrf()); err != nil {
		return err
	}
	if iface.Type == vpp_interfaces.Interface_MEMIF {
		iface.RxModes, err = readRxModes(ctx, conn, index, want.GetRxModes())
	}
	return err
}

// readVRF returns the interface's table: the IPv4 one, unless the IPv6 one
// differs from it and the IPv4 one is want, so that a half-moved interface
// never looks as wanted.
func readVRF(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, want uint32) (uint32, error) {
	var tables [2]uint32
	for i, ipv6 := range []bool{false, true} {
		var reply vppmsg.SwInterfaceGetTableReply
		if err := request(ctx, conn, &vppmsg.SwInterfaceGetTable{SwIfIndex: index, IsIPv6: ipv6}, &reply); err != nil {
			return 0, err
		}
		tables[i] = reply.VrfID
	}
	if tables[0] == want {
		return tables[1], nil
	}
	return tables[0], nil
}

// readRxModes returns want when every queue VPP has is in the mode want
// gives it, and the queues' modes otherwise. A queue that want leaves at
// DEFAULT (or does not name) may be in any mode. A memif master without a
// peer has no queues, and none: its rx modes (RxModes) wait for its link.
func readRxModes(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, want []*vpp_interfaces.Interface_RxMode) ([]*vpp_interfaces.Interface_RxMode, error) {
	queues, err := vppapi.Dump[vppmsg.SwInterfaceRxPlacementDetails](ctx, conn, &vppmsg.SwInterfaceRxPlacementDump{SwIfIndex: index})
	if err != nil {
		return nil, fmt.Errorf("dump VPP rx placement: %w", err)
	}
	if len(queues) == 0 {
		return nil, nil
	}
	var actual []*vpp_interfaces.Interface_RxMode
	matches := true
	for _, queue := range queues {
		mode := vpp_interfaces.Interface_RxMode_Type(queue.Mode)
		actual = append(actual, &vpp_interfaces.Interface_RxMode{Queue: queue.QueueID, Mode: mode})
		if wanted := rxModeOf(want, queue.QueueID); wanted != vpp_interfaces.Interface_RxMode_DEFAULT && wanted != mode {
			matches = false
		}
	}
	if matches {
		return want, nil
	}
	slices.SortFunc(actual, func(a, b *vpp_interfaces.Interface_RxMode) int { return int(a.Queue) - int(b.Queue) })
	return actual, nil
}

// rxModeOf is the mode modes give queue: its own, or the default one.
func rxModeOf(modes []*vpp_interfaces.Interface_RxMode, queue uint32) vpp_interfaces.Interface_RxMode_Type {
	mode := vpp_interfaces.Interface_RxMode_DEFAULT
	for _, m := range modes {
		if m.DefaultMode {
			mode = m.Mode
		}
	}
	for _, m := range modes {
		if !m.DefaultMode && m.Queue == queue {
			return m.Mode
		}
	}
	return mode
}
