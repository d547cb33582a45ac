package descriptor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// routedNetwork is the vswitch side of an l3 network with two pods: VRF
// id's tables, a loopback holding the gateways, each pod's memif in IP
// mode unnumbered to it, and a /32 and a /128 route per pod address via
// its memif.
func routedNetwork(dir string, id uint32, name, v4Prefix, v6Prefix string) map[string]proto.Message {
	gateway := "gw-" + name
	values := with(vrf(id, name), loopback(gateway, id, v4Prefix+"1/24", v6Prefix+"1/64"))
	for pod := 2; pod <= 3; pod++ {
		iface := memif(dir, fmt.Sprintf("%s-pod%d", name, pod), func(i *vpp_interfaces.Interface) {
			i.GetMemif().Mode = vpp_interfaces.MemifLink_IP
			i.GetMemif().RxQueues, i.GetMemif().TxQueues = 2, 2
			i.Vrf, i.Unnumbered = id, &vpp_interfaces.Interface_Unnumbered{InterfaceWithIp: gateway}
		})
		values = with(values, iface)
		for _, dst := range []string{fmt.Sprintf("%s%d/32", v4Prefix, pod), fmt.Sprintf("%s%d/128", v6Prefix, pod)} {
			route := &vpp_l3.Route{VrfId: id, DstNetwork: dst, OutgoingInterface: iface.Name}
			values[vpp_l3.RouteKey(route.OutgoingInterface, route.VrfId, route.DstNetwork, "")] = route
		}
	}
	return values
}

// fib is what show ip[6] fib table says of dst.
func fib(t *testing.T, v *vpp.VPP, ipv6 bool, table uint32, dst string) string {
	t.Helper()
	command := "ip"
	if ipv6 {
		command = "ip6"
	}
	return v.CLI(t, "show", command, "fib", "table", fmt.Sprint(table), dst)
}

// TestRoutedNetworks builds two l3 networks (VRFs 10 and 20) and checks
// that VPP holds their shape: the tables by name, the memifs in their VRF
// and unnumbered to their gateway loopback, each pod route in its own
// table through its memif and in no other table. An agent restart changes
// nothing; removing a pod removes its routes, and removing everything
// leaves VPP without the networks' tables.
func TestRoutedNetworks(t *testing.T) {
	v := vpp.Start(t)
	red := routedNetwork(v.Dir, 10, "red", "10.70.0.", "fd00:70::")
	blue := routedNetwork(v.Dir, 20, "blue", "10.80.0.", "fd00:80::")
	values := merge(red, blue)
	first := startAgent(t, v)
	first.commit(t, values)

	ifaces := readVPP(t, v)
	for _, network := range []struct {
		name string
		vrf  uint32
	}{{"red", 10}, {"blue", 20}} {
		for pod := 2; pod <= 3; pod++ {
			name := fmt.Sprintf("%s-pod%d", network.name, pod)
			got := ifaces[name]
			if got == nil {
				t.Fatalf("VPP has no memif %s", name)
			}
			wantUnnumbered(network.vrf, "gw-"+network.name)(t, got)
			if got.memif.Mode != vppmsg.MemifModeAPIIP {
				t.Errorf("memif %s mode %d, want IP", name, got.memif.Mode)
			}
		}
	}
	checks := []struct {
		ipv6      bool
		table     uint32
		dst, via  string
		otherVRFs []uint32
	}{
		{false, 10, "10.70.0.2/32", "red-pod2", []uint32{0, 20}},
		{false, 10, "10.70.0.3/32", "red-pod3", []uint32{0, 20}},
		{true, 10, "fd00:70::2/128", "red-pod2", []uint32{0, 20}},
		{false, 20, "10.80.0.3/32", "blue-pod3", []uint32{0, 10}},
		{true, 20, "fd00:80::3/128", "blue-pod3", []uint32{0, 10}},
	}
	for _, c := range checks {
		vppName := vppNameOf(t, ifaces, c.via)
		if out := fib(t, v, c.ipv6, c.table, c.dst); !strings.Contains(out, c.dst) || !strings.Contains(out, vppName) {
			t.Errorf("show fib table %d %s: want the route via %s (%s):\n%s", c.table, c.dst, c.via, vppName, out)
		}
		for _, other := range c.otherVRFs {
			if out := fib(t, v, c.ipv6, other, c.dst); strings.Contains(out, vppName) {
				t.Errorf("show fib table %d %s: the route via %s leaks into it:\n%s", other, c.dst, vppName, out)
			}
		}
	}
	if routes := apiRoutes(t, v, 10, false); len(routes) != 2 {
		t.Errorf("VPP's table 10 holds API routes %v, want the two pod routes", routes)
	}

	wantNoOps(t, "resync after an agent restart", startAgent(t, v).resync(t, values))

	second := startAgent(t, v)
	second.resync(t, values)
	gone := map[string]proto.Message{vpp_interfaces.InterfaceKey("red-pod3"): nil}
	for key, value := range red {
		if route, ok := value.(*vpp_l3.Route); ok && route.OutgoingInterface == "red-pod3" {
			gone[key] = nil
		}
	}
	second.commit(t, gone)
	if routes := apiRoutes(t, v, 10, false); len(routes) != 1 || routes[0] != "10.70.0.2/32" {
		t.Errorf("after red-pod3 left, table 10 holds API routes %v, want only 10.70.0.2/32", routes)
	}
	if out := fib(t, v, true, 10, "fd00:70::3/128"); strings.Contains(out, "fd00:70::3/128") {
		t.Errorf("after red-pod3 left, its IPv6 route is still there:\n%s", out)
	}

	startAgent(t, v).resync(t, nil)
	if left := readVPP(t, v); len(left) != 0 {
		t.Errorf("after deleting everything VPP still has interfaces %v", left)
	}
	if tables := v.CLI(t, "show", "ip", "table"); strings.Contains(tables, "red") || strings.Contains(tables, "blue") {
		t.Errorf("after deleting everything VPP still has the networks' tables:\n%s", tables)
	}
}

func vppNameOf(t *testing.T, ifaces map[string]*vppInterface, tag string) string {
	t.Helper()
	iface := ifaces[tag]
	if iface == nil {
		t.Fatalf("VPP has no interface tagged %s", tag)
	}
	return iface.details.InterfaceName
}

// apiRoutes returns the prefixes of the routes added over the API to
// table, read with ip_route_v2_dump.
func apiRoutes(t *testing.T, v *vpp.VPP, table uint32, ipv6 bool) []string {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-routes", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var prefixes []string
	for _, route := range dump[vppmsg.IPRouteV2Details](t, conn, &vppmsg.IPRouteV2Dump{Src: 8, Table: vppmsg.IPTable{TableID: table, IsIP6: ipv6}}) {
		prefixes = append(prefixes, prefixString(route.Route.Prefix))
	}
	return prefixes
}
