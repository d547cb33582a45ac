package descriptor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// Names of the bridge domain descriptors.
const (
	BridgeDomainDescriptorName          = "vpp-bridge-domain"
	BridgeDomainInterfaceDescriptorName = "vpp-bridge-domain-interface"
)

// interfaceExists is the bridge domain interface's dependency label.
const interfaceExists = "interface-exists"

// BridgeDomains is the descriptor of vpp-agent bridge domain models and
// of their interfaces (derived values).
type BridgeDomains struct {
	conn ConnFunc
}

// NewBridgeDomains returns the descriptors; conn gives the VPP connection
// of each call.
func NewBridgeDomains(conn ConnFunc) *BridgeDomains {
	return &BridgeDomains{conn: conn}
}

// Descriptor returns the bridge domain descriptor.
func (d *BridgeDomains) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_l2.ModelBridgeDomain, &kvs.KVDescriptor{
		Name:            BridgeDomainDescriptorName,
		ValueComparator: equalBridgeDomains,
		Validate:        validateBridgeDomain,
		Create:          d.create,
		Delete:          d.delete,
		Update:          func(string, proto.Message, proto.Message, kvs.Metadata) (kvs.Metadata, error) { return nil, nil },
		UpdateWithRecreate: func(_ string, oldValue, newValue proto.Message, _ kvs.Metadata) bool {
			return !sameSettings(oldValue, newValue)
		},
		Retrieve:             d.retrieve,
		DerivedValues:        bridgeDomainInterfaces,
		RetrieveDependencies: []string{MemifDescriptorName},
	})
}

// InterfaceDescriptor returns the descriptor of a bridge domain's
// interfaces, which are derived from the bridge domain model.
func (d *BridgeDomains) InterfaceDescriptor() *kvs.KVDescriptor {
	return &kvs.KVDescriptor{
		Name: BridgeDomainInterfaceDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := vpp_l2.ParseBDInterfaceKey(key)
			return ok
		},
		ValueTypeName: proto.MessageName(&vpp_l2.BridgeDomain_Interface{}),
		Create:        d.bind,
		Delete:        d.unbind,
		Dependencies: func(key string, _ proto.Message) []kvs.Dependency {
			_, iface, _ := vpp_l2.ParseBDInterfaceKey(key)
			return []kvs.Dependency{{Label: interfaceExists, Key: vpp_interfaces.InterfaceKey(iface)}}
		},
	}
}

func validateBridgeDomain(_ string, value proto.Message) error {
	bd := value.(*vpp_l2.BridgeDomain)
	switch {
	case bd.Name == "" || len(bd.Name) >= maxTagLength:
		return fmt.Errorf("bridge domain name %q: want 1 to %d bytes (it is VPP's bridge domain tag)", bd.Name, maxTagLength-1)
	case bd.ArpTermination || len(bd.ArpTerminationTable) > 0:
		return fmt.Errorf("bridge domain %s: ARP termination is not supported by this agent's VPP descriptor", bd.Name)
	case bd.MacAge > 255:
		return fmt.Errorf("bridge domain %s: mac age %d minutes, VPP holds at most 255", bd.Name, bd.MacAge)
	}
	for _, iface := range bd.Interfaces {
		if iface.BridgedVirtualInterface {
			return fmt.Errorf("bridge domain %s: BVI %s is not supported by this agent's VPP descriptor", bd.Name, iface.Name)
		}
	}
	return nil
}

// settings is a bridge domain without its interfaces.
func settings(value proto.Message) *vpp_l2.BridgeDomain {
	bd := proto.Clone(value).(*vpp_l2.BridgeDomain)
	bd.Interfaces = nil
	return bd
}

func sameSettings(a, b proto.Message) bool { return proto.Equal(settings(a), settings(b)) }

// equalBridgeDomains ignores the order of the interfaces.
func equalBridgeDomains(_ string, oldValue, newValue proto.Message) bool {
	names := func(value proto.Message) []string {
		var names []string
		for _, iface := range value.(*vpp_l2.BridgeDomain).Interfaces {
			names = append(names, fmt.Sprintf("%s/%d", iface.Name, iface.SplitHorizonGroup))
		}
		slices.Sort(names)
		return names
	}
	return sameSettings(oldValue, newValue) && slices.Equal(names(oldValue), names(newValue))
}

func bridgeDomainInterfaces(_ string, value proto.Message) []kvs.KeyValuePair {
	bd := value.(*vpp_l2.BridgeDomain)
	var derived []kvs.KeyValuePair
	for _, iface := range bd.Interfaces {
		derived = append(derived, kvs.KeyValuePair{Key: vpp_l2.BDInterfaceKey(bd.Name, iface.Name), Value: iface})
	}
	return derived
}

// bridgeDomainID finds the bridge domain tagged name.
func bridgeDomainID(ctx context.Context, conn *vppapi.Conn, name string) (uint32, bool, error) {
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](ctx, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: allInterfaces})
	if err != nil {
		return 0, false, fmt.Errorf("dump VPP bridge domains: %w", err)
	}
	for _, domain := range domains {
		if domain.BdTag == name {
			return domain.BdID, true, nil
		}
	}
	return 0, false, nil
}

func (d *BridgeDomains) create(_ string, value proto.Message) (kvs.Metadata, error) {
	bd := value.(*vpp_l2.BridgeDomain)
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("create bridge domain %s: %w", bd.Name, err)
	}
	// bd_id ~0: VPP picks an unused ID; the tag names it from then on.
	req := &vppmsg.BridgeDomainAddDelV2{BdID: ^uint32(0), Flood: bd.Flood, UuFlood: bd.UnknownUnicastFlood, Forward: bd.Forward,
		Learn: bd.Learn, MACAge: uint8(bd.MacAge), BdTag: bd.Name, IsAdd: true}
	if err := request(context.Background(), conn, req, &vppmsg.BridgeDomainAddDelV2Reply{}); err != nil {
		return nil, fmt.Errorf("create bridge domain %s: %w", bd.Name, err)
	}
	return nil, nil
}

func (d *BridgeDomains) delete(_ string, value proto.Message, _ kvs.Metadata) error {
	bd := value.(*vpp_l2.BridgeDomain)
	conn, err := d.conn()
	if err != nil {
		return fmt.Errorf("delete bridge domain %s: %w", bd.Name, err)
	}
	ctx := context.Background()
	id, exists, err := bridgeDomainID(ctx, conn, bd.Name)
	if err != nil || !exists {
		return err
	}
	if err := request(ctx, conn, &vppmsg.BridgeDomainAddDelV2{BdID: id, IsAdd: false}, &vppmsg.BridgeDomainAddDelV2Reply{}); err != nil {
		return fmt.Errorf("delete bridge domain %s: %w", bd.Name, err)
	}
	return nil
}

// retrieve reports every tagged bridge domain with its tagged interfaces.
func (d *BridgeDomains) retrieve([]kvs.KVWithMetadata) ([]kvs.KVWithMetadata, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read bridge domains from VPP: %w", err)
	}
	ctx := context.Background()
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](ctx, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: allInterfaces})
	if err != nil {
		return nil, fmt.Errorf("dump VPP bridge domains: %w", err)
	}
	tags, err := interfaceTags(ctx, conn)
	if err != nil {
		return nil, err
	}
	var values []kvs.KVWithMetadata
	for _, domain := range domains {
		if domain.BdTag == "" {
			continue
		}
		bd := &vpp_l2.BridgeDomain{Name: domain.BdTag, Flood: domain.Flood, UnknownUnicastFlood: domain.UuFlood,
			Forward: domain.Forward, Learn: domain.Learn, MacAge: uint32(domain.MACAge)}
		for _, member := range domain.SwIfDetails {
			if tag := tags[member.SwIfIndex]; tag != "" {
				bd.Interfaces = append(bd.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: tag, SplitHorizonGroup: uint32(member.Shg)})
			}
		}
		values = append(values, kvs.KVWithMetadata{Key: vpp_l2.BridgeDomainKey(bd.Name), Value: bd, Origin: kvs.FromNB})
	}
	return values, nil
}

// bindArgs finds the bridge domain and the interface a derived key names.
func (d *BridgeDomains) bindArgs(key string) (*vppapi.Conn, uint32, vppmsg.InterfaceIndex, bool, error) {
	bdName, ifName, _ := vpp_l2.ParseBDInterfaceKey(key)
	conn, err := d.conn()
	if err != nil {
		return nil, 0, 0, false, err
	}
	ctx := context.Background()
	id, bdExists, err := bridgeDomainID(ctx, conn, bdName)
	if err != nil {
		return nil, 0, 0, false, err
	}
	tags, err := interfaceTags(ctx, conn)
	if err != nil {
		return nil, 0, 0, false, err
	}
	for index, tag := range tags {
		if tag == ifName {
			return conn, id, index, bdExists, nil
		}
	}
	return conn, id, 0, false, nil
}

func (d *BridgeDomains) bind(key string, value proto.Message) (kvs.Metadata, error) {
	iface := value.(*vpp_l2.BridgeDomain_Interface)
	conn, id, index, found, err := d.bindArgs(key)
	if err == nil && !found {
		err = fmt.Errorf("VPP lacks the bridge domain or the interface")
	}
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.SwInterfaceSetL2Bridge{RxSwIfIndex: index, BdID: id,
			PortType: vppmsg.L2APIPortTypeNormal, Shg: uint8(iface.SplitHorizonGroup), Enable: true}, &vppmsg.SwInterfaceSetL2BridgeReply{})
	}
	if err != nil {
		return nil, fmt.Errorf("put %s into its bridge domain: %w", strings.TrimPrefix(key, "vpp/bd/"), err)
	}
	return nil, nil
}

// unbind takes the interface out of the bridge domain, unless VPP no
// longer has either.
func (d *BridgeDomains) unbind(key string, _ proto.Message, _ kvs.Metadata) error {
	conn, _, index, found, err := d.bindArgs(key)
	if err == nil && found {
		err = request(context.Background(), conn, &vppmsg.SwInterfaceSetL2Bridge{RxSwIfIndex: index, Enable: false}, &vppmsg.SwInterfaceSetL2BridgeReply{})
	}
	if err != nil {
		return fmt.Errorf("take %s out of its bridge domain: %w", strings.TrimPrefix(key, "vpp/bd/"), err)
	}
	return nil
}
