package descriptor

import (
	"context"
	"errors"
	"fmt"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// MemifDescriptorName names the memif interface descriptor.
const MemifDescriptorName = "vpp-memif-interface"

// Limits of VPP's API fields (NUL included).
const (
	maxTagLength      = 64
	maxSecretLength   = 24
	maxSocketFilename = 108
)

// errNotMemif is returned by Validate for interface models this
// descriptor cannot make.
var errNotMemif = errors.New("only memif interfaces are supported")

// MemifInterfaces is the descriptor of vpp-agent interface models of type
// MEMIF.
type MemifInterfaces struct {
	conn ConnFunc
}

// NewMemifInterfaces returns the descriptor; conn gives the VPP connection
// of each call.
func NewMemifInterfaces(conn ConnFunc) *MemifInterfaces {
	return &MemifInterfaces{conn: conn}
}

// Descriptor returns the KV scheduler descriptor.
func (d *MemifInterfaces) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_interfaces.ModelInterface, &kvs.KVDescriptor{
		Name:               MemifDescriptorName,
		Validate:           d.validate,
		Create:             d.create,
		Delete:             d.delete,
		Update:             d.update,
		UpdateWithRecreate: d.updateWithRecreate,
		Retrieve:           d.retrieve,
	})
}

func (d *MemifInterfaces) validate(_ string, value proto.Message) error {
	iface := value.(*vpp_interfaces.Interface)
	link := iface.GetMemif()
	switch {
	case iface.Type != vpp_interfaces.Interface_MEMIF || link == nil:
		return fmt.Errorf("interface %s of type %s: %w", iface.Name, iface.Type, errNotMemif)
	case iface.Name == "" || len(iface.Name) >= maxTagLength:
		return fmt.Errorf("interface name %q: want 1 to %d bytes (it is VPP's interface tag)", iface.Name, maxTagLength-1)
	case link.SocketFilename == "" || len(link.SocketFilename) >= maxSocketFilename:
		return fmt.Errorf("interface %s: socket filename %q: want 1 to %d bytes", iface.Name, link.SocketFilename, maxSocketFilename-1)
	case len(link.Secret) >= maxSecretLength:
		return fmt.Errorf("interface %s: secret of %d bytes, VPP holds at most %d", iface.Name, len(link.Secret), maxSecretLength-1)
	case iface.Vrf != 0 || iface.PhysAddress != "" || iface.Unnumbered != nil || iface.SetDhcpClient || len(iface.RxPlacements) > 0:
		return fmt.Errorf("interface %s: VRF, MAC address, unnumbered, DHCP and rx placement are not supported by this agent's VPP descriptor; leave them out of memifwiring.conf", iface.Name)
	case link.RingSize != 0 || link.BufferSize != 0 || link.RxQueues != 0 || link.TxQueues != 0:
		return fmt.Errorf("interface %s: ring size, buffer size and queue counts are VPP's defaults here; leave them 0", iface.Name)
	}
	for _, address := range iface.IpAddresses {
		if _, err := toVPPPrefix(address); err != nil {
			return fmt.Errorf("interface %s: %w", iface.Name, err)
		}
	}
	return nil
}

func memifRole(link *vpp_interfaces.MemifLink) vppmsg.MemifRole {
	if link.Master {
		return vppmsg.MemifRoleAPIMaster
	}
	return vppmsg.MemifRoleAPISlave
}

func memifMode(link *vpp_interfaces.MemifLink) vppmsg.MemifMode {
	switch link.Mode {
	case vpp_interfaces.MemifLink_IP:
		return vppmsg.MemifModeAPIIP
	case vpp_interfaces.MemifLink_PUNT_INJECT:
		return vppmsg.MemifModeAPIPuntInject
	}
	return vppmsg.MemifModeAPIEthernet
}

// create makes the memif; on any error it removes what it made.
func (d *MemifInterfaces) create(_ string, value proto.Message) (kvs.Metadata, error) {
	iface := value.(*vpp_interfaces.Interface)
	link := iface.GetMemif()
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("create memif %s: %w", iface.Name, err)
	}
	ctx := context.Background()
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("create memif %s: %w", iface.Name, err)
	}
	if _, exists := state.byTag(iface.Name); exists {
		return nil, fmt.Errorf("create memif %s: VPP already has an interface tagged %s", iface.Name, iface.Name)
	}
	socketID, socketKnown := state.socketID(link.SocketFilename)
	if !socketKnown {
		var added vppmsg.MemifSocketFilenameAddDelV2Reply
		if err := request(ctx, conn, &vppmsg.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: link.SocketFilename}, &added); err != nil {
			return nil, fmt.Errorf("create memif %s: add socket %s: %w", iface.Name, link.SocketFilename, err)
		}
		socketID = added.SocketID
	}
	var created vppmsg.MemifCreateV2Reply
	err = request(ctx, conn, &vppmsg.MemifCreateV2{Role: memifRole(link), Mode: memifMode(link), ID: link.Id, SocketID: socketID, Secret: link.Secret}, &created)
	if err == nil {
		err = d.configure(ctx, conn, created.SwIfIndex, iface)
		if err != nil {
			request(ctx, conn, &vppmsg.MemifDelete{SwIfIndex: created.SwIfIndex}, &vppmsg.MemifDeleteReply{})
		}
	}
	if err != nil {
		if !socketKnown {
			request(ctx, conn, &vppmsg.MemifSocketFilenameAddDelV2{SocketID: socketID}, &vppmsg.MemifSocketFilenameAddDelV2Reply{})
		}
		return nil, fmt.Errorf("create memif %s on %s: %w", iface.Name, link.SocketFilename, err)
	}
	return nil, nil
}

// configure tags a new memif with its name, then sets its addresses, MTU
// and admin state.
func (d *MemifInterfaces) configure(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, iface *vpp_interfaces.Interface) error {
	if err := request(ctx, conn, &vppmsg.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index, Tag: iface.Name}, &vppmsg.SwInterfaceTagAddDelReply{}); err != nil {
		return err
	}
	if err := setAddresses(ctx, conn, index, iface.IpAddresses); err != nil {
		return err
	}
	if iface.Mtu != 0 {
		if err := request(ctx, conn, &vppmsg.HwInterfaceSetMTU{SwIfIndex: index, MTU: uint16(iface.Mtu)}, &vppmsg.HwInterfaceSetMTUReply{}); err != nil {
			return err
		}
	}
	return setAdminState(ctx, conn, index, iface.Enabled)
}

func setAdminState(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, up bool) error {
	var flags vppmsg.IfStatusFlags
	if up {
		flags = vppmsg.IfStatusAPIFlagAdminUp
	}
	return request(ctx, conn, &vppmsg.SwInterfaceSetFlags{SwIfIndex: index, Flags: flags}, &vppmsg.SwInterfaceSetFlagsReply{})
}

// delete removes the memif, and its socket filename when no other memif
// uses it; VPP then closes the listener and removes the socket file. A
// memif VPP no longer has (VPP restarted) is already deleted.
func (d *MemifInterfaces) delete(_ string, value proto.Message, _ kvs.Metadata) error {
	iface := value.(*vpp_interfaces.Interface)
	conn, err := d.conn()
	if err != nil {
		return fmt.Errorf("delete memif %s: %w", iface.Name, err)
	}
	ctx := context.Background()
	state, err := readState(ctx, conn)
	if err != nil {
		return fmt.Errorf("delete memif %s: %w", iface.Name, err)
	}
	index, exists := state.byTag(iface.Name)
	memif := state.memifs[index]
	if !exists || memif == nil {
		return nil
	}
	if err := request(ctx, conn, &vppmsg.MemifDelete{SwIfIndex: index}, &vppmsg.MemifDeleteReply{}); err != nil {
		return fmt.Errorf("delete memif %s: %w", iface.Name, err)
	}
	if memif.SocketID != 0 && !state.socketInUse(memif.SocketID, index) {
		if err := request(ctx, conn, &vppmsg.MemifSocketFilenameAddDelV2{SocketID: memif.SocketID}, &vppmsg.MemifSocketFilenameAddDelV2Reply{}); err != nil {
			return fmt.Errorf("delete memif %s: remove its socket %s: %w", iface.Name, state.sockets[memif.SocketID], err)
		}
	}
	return nil
}

// updateWithRecreate: only the admin state and the MTU change in place.
func (d *MemifInterfaces) updateWithRecreate(_ string, oldValue, newValue proto.Message, _ kvs.Metadata) bool {
	oldIface := proto.Clone(oldValue).(*vpp_interfaces.Interface)
	newIface := proto.Clone(newValue).(*vpp_interfaces.Interface)
	for _, iface := range []*vpp_interfaces.Interface{oldIface, newIface} {
		iface.Enabled, iface.Mtu = false, 0
	}
	return !proto.Equal(oldIface, newIface)
}

func (d *MemifInterfaces) update(_ string, _, newValue proto.Message, _ kvs.Metadata) (kvs.Metadata, error) {
	iface := newValue.(*vpp_interfaces.Interface)
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("update memif %s: %w", iface.Name, err)
	}
	ctx := context.Background()
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("update memif %s: %w", iface.Name, err)
	}
	index, exists := state.byTag(iface.Name)
	if !exists {
		return nil, fmt.Errorf("update memif %s: VPP has no interface tagged %s", iface.Name, iface.Name)
	}
	if iface.Mtu != 0 {
		if err := request(ctx, conn, &vppmsg.HwInterfaceSetMTU{SwIfIndex: index, MTU: uint16(iface.Mtu)}, &vppmsg.HwInterfaceSetMTUReply{}); err != nil {
			return nil, fmt.Errorf("update memif %s: %w", iface.Name, err)
		}
	}
	if err := setAdminState(ctx, conn, index, iface.Enabled); err != nil {
		return nil, fmt.Errorf("update memif %s: %w", iface.Name, err)
	}
	return nil, nil
}

// retrieve reports every tagged memif as the model that made it.
func (d *MemifInterfaces) retrieve(correlate []kvs.KVWithMetadata) ([]kvs.KVWithMetadata, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read memifs from VPP: %w", err)
	}
	ctx := context.Background()
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, err
	}
	wanted := map[string]*vpp_interfaces.Interface{}
	for _, kv := range correlate {
		iface := kv.Value.(*vpp_interfaces.Interface)
		wanted[iface.Name] = iface
	}
	var values []kvs.KVWithMetadata
	for index, memif := range state.memifs {
		details := state.interfaces[index]
		if details == nil || details.Tag == "" {
			continue
		}
		iface := readBack(details, memif, state.sockets[memif.SocketID], wanted[details.Tag])
		if iface.IpAddresses, err = readAddresses(ctx, conn, index, wanted[details.Tag].GetIpAddresses()); err != nil {
			return nil, err
		}
		values = append(values, kvs.KVWithMetadata{Key: vpp_interfaces.InterfaceKey(iface.Name), Value: iface, Origin: kvs.FromNB})
	}
	return values, nil
}

// readBack is the model of a memif as VPP reports it, with what VPP does
// not report taken from want (see the package doc).
func readBack(details *vppmsg.SwInterfaceDetails, memif *vppmsg.MemifDetails, socket string, want *vpp_interfaces.Interface) *vpp_interfaces.Interface {
	link := &vpp_interfaces.MemifLink{
		Master:         memif.Role == vppmsg.MemifRoleAPIMaster,
		Id:             memif.ID,
		SocketFilename: socket,
	}
	switch memif.Mode {
	case vppmsg.MemifModeAPIIP:
		link.Mode = vpp_interfaces.MemifLink_IP
	case vppmsg.MemifModeAPIPuntInject:
		link.Mode = vpp_interfaces.MemifLink_PUNT_INJECT
	}
	iface := &vpp_interfaces.Interface{
		Name:    details.Tag,
		Type:    vpp_interfaces.Interface_MEMIF,
		Enabled: details.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0,
		Link:    &vpp_interfaces.Interface_Memif{Memif: link},
	}
	if want == nil {
		return iface
	}
	// A model without MTU leaves VPP's default, whatever it is.
	if want.Mtu != 0 {
		iface.Mtu = uint32(details.LinkMTU)
	}
	if wantLink := want.GetMemif(); wantLink != nil && wantLink.SocketFilename == socket && wantLink.Id == link.Id {
		link.Secret = wantLink.Secret
	}
	iface.RxModes = want.RxModes
	return iface
}
