package descriptor

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/ligato/cn-infra/idxmap"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// InterfaceDescriptorName names the interface descriptor.
const InterfaceDescriptorName = "vpp-interface"

// Limits of VPP's API fields (NUL included).
const (
	maxSecretLength   = 24
	maxSocketFilename = 108
)

// Dependency labels of an interface.
const (
	vrfIPv4Exists        = "vrf-table-ipv4-exists"
	vrfIPv6Exists        = "vrf-table-ipv6-exists"
	unnumberedToExisting = "unnumbered-interface-exists"
)

// errUnsupportedType is returned by Validate for interface models this
// descriptor cannot make.
var errUnsupportedType = errors.New("only memif, loopback, af_packet host and VXLAN tunnel interfaces are supported")

// Interfaces is the descriptor of vpp-agent interface models of type MEMIF,
// SOFTWARE_LOOPBACK, AF_PACKET and VXLAN_TUNNEL. It keeps each interface's VPP index in the KV
// scheduler's metadata map (Index), so that no operation dumps VPP's
// interfaces to find one.
type Interfaces struct {
	conn  ConnFunc
	names idxmap.NamedMappingRW
	// links, when set, keeps the link states each Retrieve reads.
	links *LinkStates
}

// NewInterfaces returns the descriptor; conn gives the VPP connection of
// each call.
func NewInterfaces(conn ConnFunc) *Interfaces {
	return &Interfaces{conn: conn, names: newInterfaceMap()}
}

// WithLinkStates returns the descriptor of the interfaces' link states,
// which reads them in this descriptor's Retrieve; push is the KV
// scheduler's PushSBNotification.
func (d *Interfaces) WithLinkStates(push func(...kvs.KVWithMetadata) error) *LinkStates {
	d.links = NewLinkStates(push)
	return d.links
}

// Index reads the interfaces the scheduler holds, for the descriptors that
// refer to them.
func (d *Interfaces) Index() InterfaceIndex { return InterfaceIndex{names: d.names} }

// Descriptor returns the KV scheduler descriptor.
func (d *Interfaces) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_interfaces.ModelInterface, typed[*vpp_interfaces.Interface, *InterfaceMetadata]{
		Name:               InterfaceDescriptorName,
		ValueComparator:    sameInterface,
		Validate:           validateInterface,
		Create:             d.create,
		Delete:             d.delete,
		Update:             d.update,
		UpdateWithRecreate: updateWithRecreate,
		Retrieve:           d.retrieve,
		Dependencies:       interfaceDependencies,
		DerivedValues:      func(_ string, iface *vpp_interfaces.Interface) []kvs.KeyValuePair { return rxModesOf(iface) },
		WithMetadata:       true,
		MetadataMapFactory: func() idxmap.NamedMappingRW { return d.names },
	}.descriptor())
}

// interfaceDependencies: an interface in a VRF waits for both of the VRF's
// tables (VPP binds it to the IPv4 and the IPv6 one), an unnumbered one
// for the interface whose addresses it borrows.
func interfaceDependencies(_ string, iface *vpp_interfaces.Interface) []kvs.Dependency {
	var deps []kvs.Dependency
	if iface.Vrf != 0 {
		deps = append(deps,
			kvs.Dependency{Label: vrfIPv4Exists, Key: vpp_l3.VrfTableKey(iface.Vrf, vpp_l3.VrfTable_IPV4)},
			kvs.Dependency{Label: vrfIPv6Exists, Key: vpp_l3.VrfTableKey(iface.Vrf, vpp_l3.VrfTable_IPV6)})
	}
	if target := iface.GetUnnumbered().GetInterfaceWithIp(); target != "" {
		deps = append(deps, kvs.Dependency{Label: unnumberedToExisting, Key: vpp_interfaces.InterfaceKey(target)})
	}
	return deps
}

func (d *Interfaces) create(_ string, iface *vpp_interfaces.Interface) (*InterfaceMetadata, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("create interface %s: %w", iface.Name, err)
	}
	ctx := context.Background()
	var meta *InterfaceMetadata
	switch iface.Type {
	case vpp_interfaces.Interface_MEMIF:
		meta, err = d.createMemif(ctx, conn, iface)
	case vpp_interfaces.Interface_AF_PACKET:
		meta, err = createHostInterface(ctx, conn, iface)
	case vpp_interfaces.Interface_VXLAN_TUNNEL:
		meta, err = createVxlanTunnel(ctx, conn, iface)
	default:
		meta, err = createLoopback(ctx, conn, iface)
	}
	if err != nil {
		return nil, fmt.Errorf("create interface %s: %w", iface.Name, err)
	}
	if err := d.configure(ctx, conn, meta.Index, iface); err != nil {
		d.remove(ctx, conn, iface, meta)
		return nil, fmt.Errorf("create interface %s: %w", iface.Name, err)
	}
	return meta, nil
}

// configure tags a new interface as the agent's, then sets its VRF,
// unnumbered or addresses, MTU and admin state. VPP takes a table only
// while the interface has no address, and unnumbered only to an interface
// in the same tables.
func (d *Interfaces) configure(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, iface *vpp_interfaces.Interface) error {
	if err := request(ctx, conn, &vppmsg.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index, Tag: owner.Tag(iface.Name)}, &vppmsg.SwInterfaceTagAddDelReply{}); err != nil {
		return err
	}
	if iface.Vrf != 0 {
		if err := setTable(ctx, conn, index, iface.Vrf); err != nil {
			return err
		}
	}
	if err := d.setUnnumbered(ctx, conn, index, iface.GetUnnumbered().GetInterfaceWithIp(), true); err != nil {
		return err
	}
	if err := setAddresses(ctx, conn, index, iface.IpAddresses); err != nil {
		return err
	}
	if err := setMTU(ctx, conn, index, iface); err != nil {
		return err
	}
	return setAdminState(ctx, conn, index, iface.Enabled)
}

func setTable(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, vrf uint32) error {
	for _, ipv6 := range []bool{false, true} {
		if err := request(ctx, conn, &vppmsg.SwInterfaceSetTable{SwIfIndex: index, IsIPv6: ipv6, VrfID: vrf}, &vppmsg.SwInterfaceSetTableReply{}); err != nil {
			return fmt.Errorf("put it into VRF %d: %w", vrf, err)
		}
	}
	return nil
}

// setUnnumbered makes index borrow the addresses of interface target, or
// stops it; an empty target does nothing.
func (d *Interfaces) setUnnumbered(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, target string, add bool) error {
	if target == "" {
		return nil
	}
	withIP, err := d.Index().lookup(conn, target)
	if err != nil {
		return fmt.Errorf("unnumbered to %s: %w", target, err)
	}
	req := &vppmsg.SwInterfaceSetUnnumbered{SwIfIndex: withIP.Index, UnnumberedSwIfIndex: index, IsAdd: add}
	if err := request(ctx, conn, req, &vppmsg.SwInterfaceSetUnnumberedReply{}); err != nil {
		return fmt.Errorf("unnumbered to %s: %w", target, err)
	}
	return nil
}

// setMTU sets a model's MTU: the hardware MTU, except on a memif in IP
// mode, which has none in VPP and takes the L3 MTU instead.
func setMTU(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, iface *vpp_interfaces.Interface) error {
	if iface.Mtu == 0 {
		return nil
	}
	var err error
	if isIPMemif(iface) {
		err = request(ctx, conn, &vppmsg.SwInterfaceSetMTU{SwIfIndex: index, MTU: [4]uint32{iface.Mtu}}, &vppmsg.SwInterfaceSetMTUReply{})
	} else {
		err = request(ctx, conn, &vppmsg.HwInterfaceSetMTU{SwIfIndex: index, MTU: uint16(iface.Mtu)}, &vppmsg.HwInterfaceSetMTUReply{})
	}
	if err != nil {
		return fmt.Errorf("set MTU %d: %w", iface.Mtu, err)
	}
	return nil
}

func isIPMemif(iface *vpp_interfaces.Interface) bool {
	return iface.GetMemif().GetMode() == vpp_interfaces.MemifLink_IP
}

func setAdminState(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, up bool) error {
	var flags vppmsg.IfStatusFlags
	if up {
		flags = vppmsg.IfStatusAPIFlagAdminUp
	}
	return request(ctx, conn, &vppmsg.SwInterfaceSetFlags{SwIfIndex: index, Flags: flags}, &vppmsg.SwInterfaceSetFlagsReply{})
}

func parseMAC(address string) (vppmsg.MACAddress, error) {
	var mac vppmsg.MACAddress
	hw, err := net.ParseMAC(address)
	if err == nil && len(hw) != len(mac) {
		err = fmt.Errorf("%d bytes, want 6", len(hw))
	}
	if err != nil {
		return mac, fmt.Errorf("MAC address %q: want six bytes such as 02:fe:00:00:00:01: %w", address, err)
	}
	copy(mac[:], hw)
	return mac, nil
}

// delete removes the interface VPP holds under the metadata's index.
func (d *Interfaces) delete(_ string, iface *vpp_interfaces.Interface, metadata *InterfaceMetadata) error {
	conn, err := d.conn()
	if err != nil {
		return fmt.Errorf("delete interface %s: %w", iface.Name, err)
	}
	meta, err := d.current(context.Background(), conn, iface.Name, metadata)
	if err != nil {
		return err
	}
	if meta == nil {
		// Gone already, as a delete that failed after the memif went
		// leaves it: its socket filename may still be there.
		if d.memifSocketUnused(iface) {
			return removeSocketFilename(context.Background(), conn, iface.GetMemif().GetSocketFilename())
		}
		return nil
	}
	if err := d.remove(context.Background(), conn, iface, meta); err != nil {
		return fmt.Errorf("delete interface %s: %w", iface.Name, err)
	}
	return nil
}

// remove deletes a memif (and its socket filename when no other memif
// uses it; VPP then closes the listener and removes the socket file), a
// loopback, a host interface or a VXLAN tunnel.
func (d *Interfaces) remove(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface, meta *InterfaceMetadata) error {
	switch iface.Type {
	case vpp_interfaces.Interface_MEMIF:
	case vpp_interfaces.Interface_AF_PACKET:
		return removeHostInterface(ctx, conn, iface)
	case vpp_interfaces.Interface_VXLAN_TUNNEL:
		return removeVxlanTunnel(ctx, conn, iface)
	default:
		return request(ctx, conn, &vppmsg.DeleteLoopback{SwIfIndex: meta.Index}, &vppmsg.DeleteLoopbackReply{})
	}
	if err := request(ctx, conn, &vppmsg.MemifDelete{SwIfIndex: meta.Index}, &vppmsg.MemifDeleteReply{}); err != nil {
		return err
	}
	if !d.memifSocketUnused(iface) {
		return nil
	}
	return removeSocketFilename(ctx, conn, iface.GetMemif().GetSocketFilename())
}

// memifSocketUnused tells whether iface is a memif whose socket filename
// no other memif of the scheduler's uses.
func (d *Interfaces) memifSocketUnused(iface *vpp_interfaces.Interface) bool {
	filename := iface.GetMemif().GetSocketFilename()
	if iface.Type != vpp_interfaces.Interface_MEMIF || filename == "" {
		return false
	}
	for _, user := range d.Index().socketUsers(filename) {
		if user != iface.Name {
			return false
		}
	}
	return true
}

// current returns the metadata of interface name as VPP holds it now: the
// scheduler's, unless it was made over an earlier connection (VPP may have
// restarted and given its index to another interface), when VPP is asked
// by the interface's tag. Nil: VPP has no such interface of the agent's.
func (d *Interfaces) current(ctx context.Context, conn *vppapi.Conn, name string, metadata *InterfaceMetadata) (*InterfaceMetadata, error) {
	if metadata != nil && metadata.connection == conn.Generation() {
		return metadata, nil
	}
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	index, exists := state.byName(name)
	if !exists {
		return nil, nil
	}
	return state.metadata(conn, index), nil
}
