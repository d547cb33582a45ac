package descriptor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gogo/protobuf/proto"
	"github.com/ligato/cn-infra/idxmap"
	"github.com/ligato/cn-infra/idxmap/mem"
	"github.com/ligato/cn-infra/logging"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// Names of the bridge domain descriptors.
const (
	BridgeDomainDescriptorName          = "vpp-bridge-domain"
	BridgeDomainInterfaceDescriptorName = "vpp-bridge-domain-interface"
)

// interfaceExists is the bridge domain interface's dependency label.
const interfaceExists = "interface-exists"

// BridgeDomains is the descriptor of vpp-agent bridge domain models and
// of their interfaces (derived values). It keeps each bridge domain's VPP
// ID as the scheduler's metadata, and finds interfaces in the interface
// index, so that binding an interface dumps nothing.
type BridgeDomains struct {
	conn       ConnFunc
	interfaces InterfaceIndex
	ids        idxmap.NamedMappingRW
}

// bridgeDomainMetadata is what the scheduler keeps of a bridge domain.
type bridgeDomainMetadata struct {
	id uint32
	// connection is the Generation of the connection over which VPP
	// reported id.
	connection uint64
}

// NewBridgeDomains returns the descriptors; conn gives the VPP connection
// of each call, interfaces the indexes of the interfaces to bind.
func NewBridgeDomains(conn ConnFunc, interfaces InterfaceIndex) *BridgeDomains {
	return &BridgeDomains{conn: conn, interfaces: interfaces, ids: mem.NewNamedMapping(logging.DefaultLogger, BridgeDomainDescriptorName, nil)}
}

// Descriptor returns the bridge domain descriptor.
func (d *BridgeDomains) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_l2.ModelBridgeDomain, typed[*vpp_l2.BridgeDomain, *bridgeDomainMetadata]{
		Name:            BridgeDomainDescriptorName,
		ValueComparator: equalBridgeDomains,
		Validate:        validateBridgeDomain,
		Create:          d.create,
		Delete:          d.delete,
		// Members are derived values: an update changes nothing in VPP
		// and keeps the bridge domain's ID.
		Update: func(_ string, _, _ *vpp_l2.BridgeDomain, metadata *bridgeDomainMetadata) (*bridgeDomainMetadata, error) {
			return metadata, nil
		},
		UpdateWithRecreate: func(_ string, old, new *vpp_l2.BridgeDomain, _ *bridgeDomainMetadata) bool {
			return !sameSettings(old, new)
		},
		Retrieve:             d.retrieve,
		DerivedValues:        bridgeDomainInterfaces,
		RetrieveDependencies: []string{InterfaceDescriptorName},
		WithMetadata:         true,
		MetadataMapFactory:   func() idxmap.NamedMappingRW { return d.ids },
	}.descriptor())
}

// InterfaceDescriptor returns the descriptor of a bridge domain's
// interfaces, which are derived from the bridge domain model.
func (d *BridgeDomains) InterfaceDescriptor() *kvs.KVDescriptor {
	return typed[*vpp_l2.BridgeDomain_Interface, kvs.Metadata]{
		Name: BridgeDomainInterfaceDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := vpp_l2.ParseBDInterfaceKey(key)
			return ok
		},
		ValueTypeName: proto.MessageName(&vpp_l2.BridgeDomain_Interface{}),
		Create:        d.bind,
		Delete:        d.unbind,
		Dependencies: func(key string, _ *vpp_l2.BridgeDomain_Interface) []kvs.Dependency {
			_, iface, _ := vpp_l2.ParseBDInterfaceKey(key)
			return []kvs.Dependency{{Label: interfaceExists, Key: vpp_interfaces.InterfaceKey(iface)}}
		},
	}.descriptor()
}

func validateBridgeDomain(_ string, bd *vpp_l2.BridgeDomain) error {
	switch {
	case bd.Name == "" || len(bd.Name) > owner.MaxNameLength:
		return fmt.Errorf("bridge domain name %q: want 1 to %d bytes (VPP's bridge domain tag holds it after %q)", bd.Name, owner.MaxNameLength, owner.Prefix)
	case bd.ArpTermination || len(bd.ArpTerminationTable) > 0:
		return fmt.Errorf("bridge domain %s: ARP termination is not supported by this agent's VPP descriptor", bd.Name)
	case bd.MacAge > 255:
		return fmt.Errorf("bridge domain %s: mac age %d minutes, VPP holds at most 255", bd.Name, bd.MacAge)
	}
	return validateBVI(bd)
}

// settings is a bridge domain without its interfaces.
func settings(bd *vpp_l2.BridgeDomain) *vpp_l2.BridgeDomain {
	bd = proto.Clone(bd).(*vpp_l2.BridgeDomain)
	bd.Interfaces = nil
	return bd
}

func sameSettings(a, b *vpp_l2.BridgeDomain) bool { return proto.Equal(settings(a), settings(b)) }

// equalBridgeDomains ignores the order of the interfaces.
func equalBridgeDomains(_ string, oldValue, newValue *vpp_l2.BridgeDomain) bool {
	names := func(bd *vpp_l2.BridgeDomain) []string {
		var names []string
		for _, iface := range bd.Interfaces {
			names = append(names, fmt.Sprintf("%s/%d/%t", iface.Name, iface.SplitHorizonGroup, iface.BridgedVirtualInterface))
		}
		slices.Sort(names)
		return names
	}
	return sameSettings(oldValue, newValue) && slices.Equal(names(oldValue), names(newValue))
}

func bridgeDomainInterfaces(_ string, bd *vpp_l2.BridgeDomain) []kvs.KeyValuePair {
	var derived []kvs.KeyValuePair
	for _, iface := range bd.Interfaces {
		derived = append(derived, kvs.KeyValuePair{Key: vpp_l2.BDInterfaceKey(bd.Name, iface.Name), Value: iface})
	}
	return derived
}

func (d *BridgeDomains) create(_ string, bd *vpp_l2.BridgeDomain) (*bridgeDomainMetadata, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("create bridge domain %s: %w", bd.Name, err)
	}
	// bd_id ~0: VPP picks an unused ID; the tag names it from then on.
	req := &vppmsg.BridgeDomainAddDelV2{BdID: ^uint32(0), Flood: bd.Flood, UuFlood: bd.UnknownUnicastFlood, Forward: bd.Forward,
		Learn: bd.Learn, MACAge: uint8(bd.MacAge), BdTag: owner.Tag(bd.Name), IsAdd: true}
	var created vppmsg.BridgeDomainAddDelV2Reply
	if err := request(context.Background(), conn, req, &created); err != nil {
		return nil, fmt.Errorf("create bridge domain %s: %w", bd.Name, err)
	}
	return &bridgeDomainMetadata{id: created.BdID, connection: conn.Generation()}, nil
}

func (d *BridgeDomains) delete(_ string, bd *vpp_l2.BridgeDomain, metadata *bridgeDomainMetadata) error {
	conn, err := d.conn()
	var meta *bridgeDomainMetadata
	if err == nil {
		meta, err = d.current(conn, bd.Name, metadata)
	}
	if err == nil && meta != nil {
		err = request(context.Background(), conn, &vppmsg.BridgeDomainAddDelV2{BdID: meta.id, IsAdd: false}, &vppmsg.BridgeDomainAddDelV2Reply{})
	}
	if err != nil {
		return fmt.Errorf("delete bridge domain %s: %w", bd.Name, err)
	}
	return nil
}

// current returns the metadata of bridge domain name as VPP holds it now:
// the scheduler's, unless it was made over an earlier connection, when VPP
// is asked by the bridge domain's tag. Nil: VPP has no such bridge domain
// of the agent's.
func (d *BridgeDomains) current(conn *vppapi.Conn, name string, metadata *bridgeDomainMetadata) (*bridgeDomainMetadata, error) {
	if metadata != nil && metadata.connection == conn.Generation() {
		return metadata, nil
	}
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](context.Background(), conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: allInterfaces})
	if err != nil {
		return nil, fmt.Errorf("dump VPP bridge domains: %w", err)
	}
	for _, domain := range domains {
		if domain.BdTag == owner.Tag(name) {
			return &bridgeDomainMetadata{id: domain.BdID, connection: conn.Generation()}, nil
		}
	}
	return nil, nil
}

// retrieve reports every bridge domain tagged as the agent's, with the
// agent's interfaces in it.
func (d *BridgeDomains) retrieve([]typedKV[*vpp_l2.BridgeDomain, *bridgeDomainMetadata]) ([]typedKV[*vpp_l2.BridgeDomain, *bridgeDomainMetadata], error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read bridge domains from VPP: %w", err)
	}
	ctx := context.Background()
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](ctx, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: allInterfaces})
	if err != nil {
		return nil, fmt.Errorf("dump VPP bridge domains: %w", err)
	}
	var values []typedKV[*vpp_l2.BridgeDomain, *bridgeDomainMetadata]
	for _, domain := range domains {
		name, ours := owner.Name(domain.BdTag)
		if !ours {
			continue
		}
		bd := &vpp_l2.BridgeDomain{Name: name, Flood: domain.Flood, UnknownUnicastFlood: domain.UuFlood,
			Forward: domain.Forward, Learn: domain.Learn, MacAge: uint32(domain.MACAge)}
		for _, member := range domain.SwIfDetails {
			if name, found := d.interfaces.Name(member.SwIfIndex); found {
				bd.Interfaces = append(bd.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: name, SplitHorizonGroup: uint32(member.Shg),
					BridgedVirtualInterface: member.SwIfIndex == domain.BviSwIfIndex})
			}
		}
		values = append(values, typedKV[*vpp_l2.BridgeDomain, *bridgeDomainMetadata]{Key: vpp_l2.BridgeDomainKey(bd.Name), Value: bd,
			Metadata: &bridgeDomainMetadata{id: domain.BdID, connection: conn.Generation()}, Origin: kvs.FromNB})
	}
	return values, nil
}

// bindArgs finds the bridge domain and the interface a derived key names.
func (d *BridgeDomains) bindArgs(key string) (*vppapi.Conn, uint32, vppmsg.InterfaceIndex, error) {
	bdName, ifName, _ := vpp_l2.ParseBDInterfaceKey(key)
	conn, err := d.conn()
	if err != nil {
		return nil, 0, 0, err
	}
	value, found := d.ids.GetValue(bdName)
	meta, _ := value.(*bridgeDomainMetadata)
	switch {
	case !found || meta == nil:
		return nil, 0, 0, fmt.Errorf("the KV scheduler holds no bridge domain %s", bdName)
	case meta.connection != conn.Generation():
		return nil, 0, 0, fmt.Errorf("bridge domain %s: %w", bdName, errStaleIndex)
	}
	iface, err := d.interfaces.lookup(conn, ifName)
	if err != nil {
		return nil, 0, 0, err
	}
	return conn, meta.id, iface.Index, nil
}

func (d *BridgeDomains) bind(key string, iface *vpp_l2.BridgeDomain_Interface) (kvs.Metadata, error) {
	conn, id, index, err := d.bindArgs(key)
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.SwInterfaceSetL2Bridge{RxSwIfIndex: index, BdID: id,
			PortType: portType(iface), Shg: uint8(iface.SplitHorizonGroup), Enable: true}, &vppmsg.SwInterfaceSetL2BridgeReply{})
	}
	if err != nil {
		return nil, fmt.Errorf("put %s into its bridge domain: %w", strings.TrimPrefix(key, "vpp/bd/"), err)
	}
	return nil, nil
}

// unbind takes the interface out of the bridge domain.
func (d *BridgeDomains) unbind(key string, _ *vpp_l2.BridgeDomain_Interface, _ kvs.Metadata) error {
	conn, _, index, err := d.bindArgs(key)
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.SwInterfaceSetL2Bridge{RxSwIfIndex: index, Enable: false}, &vppmsg.SwInterfaceSetL2BridgeReply{})
	}
	if err != nil {
		return fmt.Errorf("take %s out of its bridge domain: %w", strings.TrimPrefix(key, "vpp/bd/"), err)
	}
	return nil
}
