package descriptor

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// RouteDescriptorName names the route descriptor.
const RouteDescriptorName = "vpp-route"

// fibSourceAPI is VPP's FIB source of routes added over the binary API
// (FIB_SOURCE_API in vnet/fib/fib_source.h), the one ip_route_add_del_v2
// uses when told 0. Retrieve dumps only the routes of that source.
const fibSourceAPI = 8

// Dependency labels of a route.
const (
	outgoingInterfaceExists = "outgoing-interface-exists"
	vrfTableExists          = "vrf-table-exists"
)

// Routes is the descriptor of vpp-agent route models of type INTRA_VRF
// through an outgoing interface, with or without a next hop: a pod
// address's /32 (/128) route via its memif is one. A route waits for its
// interface and its VRF table and is removed before either.
type Routes struct {
	conn       ConnFunc
	interfaces InterfaceIndex
}

// NewRoutes returns the descriptor; conn gives the VPP connection of each
// call, interfaces the outgoing interfaces' indexes.
func NewRoutes(conn ConnFunc, interfaces InterfaceIndex) *Routes {
	return &Routes{conn: conn, interfaces: interfaces}
}

// Descriptor returns the KV scheduler descriptor.
func (d *Routes) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_l3.ModelRoute, typed[*vpp_l3.Route, kvs.Metadata]{
		Name:                 RouteDescriptorName,
		Validate:             validateRoute,
		ValueComparator:      equalRoutes,
		Create:               d.create,
		Delete:               d.delete,
		Retrieve:             d.retrieve,
		Dependencies:         routeDependencies,
		RetrieveDependencies: []string{InterfaceDescriptorName, VrfTableDescriptorName},
	}.descriptor())
}

func validateRoute(_ string, route *vpp_l3.Route) error {
	dst, err := netip.ParsePrefix(route.DstNetwork)
	switch {
	case err != nil:
		err = fmt.Errorf("destination %q: want a prefix such as 10.70.0.2/32: %w", route.DstNetwork, err)
	case route.Type != vpp_l3.Route_INTRA_VRF || route.ViaVrfId != 0:
		err = fmt.Errorf("type %s: only INTRA_VRF routes are supported by this agent's VPP descriptor", route.Type)
	case route.OutgoingInterface == "":
		err = fmt.Errorf("no outgoing interface: this agent's VPP descriptor routes through an interface")
	case route.Weight > 1 || route.Preference != 0:
		err = fmt.Errorf("weight %d, preference %d: only single-path routes (weight 0 or 1, preference 0) are supported", route.Weight, route.Preference)
	case route.NextHopAddr != "":
		if hop, hopErr := netip.ParseAddr(route.NextHopAddr); hopErr != nil || hop.Is4() != dst.Addr().Is4() {
			err = fmt.Errorf("next hop %q: want an address of the destination's family, or none", route.NextHopAddr)
		}
	}
	if err != nil {
		return fmt.Errorf("route to %s in VRF %d: %w", route.DstNetwork, route.VrfId, err)
	}
	return nil
}

// canonicalRoute spells the prefix and next hop one way, with weight 0 as
// VPP's 1 and a host route's next hop that is the host as none.
func canonicalRoute(route *vpp_l3.Route) *vpp_l3.Route {
	route = proto.Clone(route).(*vpp_l3.Route)
	if dst, err := netip.ParsePrefix(route.DstNetwork); err == nil {
		route.DstNetwork = dst.Masked().String()
	}
	if hop, err := netip.ParseAddr(route.NextHopAddr); err == nil {
		route.NextHopAddr = hop.String()
		// VPP reports a host route through an interface with the host
		// as its next hop (attached-nexthop): the same route.
		if dst, err := netip.ParsePrefix(route.DstNetwork); err == nil && dst.IsSingleIP() && dst.Addr() == hop {
			route.NextHopAddr = ""
		}
	}
	route.Weight = max(route.Weight, 1)
	return route
}

func equalRoutes(_ string, oldRoute, route *vpp_l3.Route) bool {
	return proto.Equal(canonicalRoute(oldRoute), canonicalRoute(route))
}

func routeDependencies(_ string, route *vpp_l3.Route) []kvs.Dependency {
	deps := []kvs.Dependency{{Label: outgoingInterfaceExists, Key: vpp_interfaces.InterfaceKey(route.OutgoingInterface)}}
	if route.VrfId != 0 {
		protocol := vpp_l3.VrfTable_IPV4
		if dst, err := netip.ParsePrefix(route.DstNetwork); err == nil && dst.Addr().Is6() {
			protocol = vpp_l3.VrfTable_IPV6
		}
		deps = append(deps, kvs.Dependency{Label: vrfTableExists, Key: vpp_l3.VrfTableKey(route.VrfId, protocol)})
	}
	return deps
}

func (d *Routes) create(_ string, route *vpp_l3.Route) (kvs.Metadata, error) {
	if err := d.addDel(route, true); err != nil {
		return nil, err
	}
	return nil, nil
}

func (d *Routes) delete(_ string, route *vpp_l3.Route, _ kvs.Metadata) error {
	return d.addDel(route, false)
}

func (d *Routes) addDel(route *vpp_l3.Route, add bool) error {
	conn, err := d.conn()
	var out *InterfaceMetadata
	if err == nil {
		out, err = d.interfaces.lookup(conn, route.OutgoingInterface)
	}
	if err == nil {
		req := &vppmsg.IPRouteAddDelV2{IsAdd: add, Route: vppRoute(route, out.Index)}
		err = request(context.Background(), conn, req, &vppmsg.IPRouteAddDelV2Reply{})
	}
	if err != nil {
		verb := "add"
		if !add {
			verb = "remove"
		}
		return fmt.Errorf("%s route to %s via %s in VRF %d: %w", verb, route.DstNetwork, route.OutgoingInterface, route.VrfId, err)
	}
	return nil
}

// vppRoute is a valid route with its one path through interface out.
func vppRoute(route *vpp_l3.Route, out vppmsg.InterfaceIndex) vppmsg.IPRouteV2 {
	dst, _ := toVPPPrefix(route.DstNetwork)
	path := vppmsg.FibPath{SwIfIndex: uint32(out), TableID: route.VrfId, Weight: 1, Proto: vppmsg.FibAPIPathNhProtoIP4}
	if dst.Address.Af == vppmsg.AddressIP6 {
		path.Proto = vppmsg.FibAPIPathNhProtoIP6
	}
	if hop, err := netip.ParseAddr(route.NextHopAddr); err == nil {
		if hop.Is4() {
			ip4 := hop.As4()
			copy(path.Nh.Address[:], ip4[:])
		} else {
			path.Nh.Address = hop.As16()
		}
	}
	return vppmsg.IPRouteV2{TableID: route.VrfId, Prefix: dst, NPaths: 1, Paths: []vppmsg.FibPath{path}}
}

// retrieve reports the API routes of table 0 and of the agent's tables
// whose one path leaves through an interface of the agent's (one the
// scheduler holds).
func (d *Routes) retrieve([]typedKV[*vpp_l3.Route, kvs.Metadata]) ([]typedKV[*vpp_l3.Route, kvs.Metadata], error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read routes from VPP: %w", err)
	}
	ctx := context.Background()
	tables, err := ownTables(ctx, conn)
	if err != nil {
		return nil, err
	}
	tables = append(tables, &vpp_l3.VrfTable{Protocol: vpp_l3.VrfTable_IPV4}, &vpp_l3.VrfTable{Protocol: vpp_l3.VrfTable_IPV6})
	var values []typedKV[*vpp_l3.Route, kvs.Metadata]
	for _, table := range tables {
		req := &vppmsg.IPRouteV2Dump{Src: fibSourceAPI, Table: vppmsg.IPTable{TableID: table.Id, IsIP6: table.Protocol == vpp_l3.VrfTable_IPV6}}
		details, err := vppapi.Dump[vppmsg.IPRouteV2Details](ctx, conn, req)
		if err != nil {
			return nil, fmt.Errorf("dump VPP routes of table %d: %w", table.Id, err)
		}
		for _, detail := range details {
			if route := d.readBack(detail.Route); route != nil {
				values = append(values, typedKV[*vpp_l3.Route, kvs.Metadata]{Key: routeKey(route), Value: route, Origin: kvs.FromNB})
			}
		}
	}
	return values, nil
}

// readBack is the model of a VPP route, nil when it is not one this
// descriptor makes.
func (d *Routes) readBack(vpp vppmsg.IPRouteV2) *vpp_l3.Route {
	if len(vpp.Paths) != 1 || vpp.Paths[0].Type != vppmsg.FibAPIPathTypeNormal {
		return nil
	}
	path := vpp.Paths[0]
	out, found := d.interfaces.Name(vppmsg.InterfaceIndex(path.SwIfIndex))
	if !found {
		return nil
	}
	route := &vpp_l3.Route{Type: vpp_l3.Route_INTRA_VRF, VrfId: vpp.TableID, DstNetwork: fromVPPPrefix(vpp.Prefix),
		OutgoingInterface: out, Weight: uint32(path.Weight)}
	hop := netip.AddrFrom16(path.Nh.Address)
	if path.Proto == vppmsg.FibAPIPathNhProtoIP4 {
		hop = netip.AddrFrom4([4]byte(path.Nh.Address[:4]))
	}
	if !hop.IsUnspecified() {
		route.NextHopAddr = hop.String()
	}
	return canonicalRoute(route)
}

// routeKey is the key of a route model.
func routeKey(route *vpp_l3.Route) string {
	return vpp_l3.RouteKey(route.OutgoingInterface, route.VrfId, route.DstNetwork, route.NextHopAddr)
}
