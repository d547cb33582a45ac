package descriptor_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// lifecycleCase is one descriptor's values through create, a change and
// delete, with what VPP must hold after each, read as one line per object
// by view.
type lifecycleCase struct {
	name string
	// base are values the case's own need, created first.
	base        map[string]proto.Message
	created     map[string]proto.Message
	changed     map[string]proto.Message
	view        func(t *testing.T, v *vpp.VPP) []string
	wantCreated []string
	wantChanged []string
}

func lifecycleCases(dir string) []lifecycleCase {
	xconnect := func(rx, tx string) map[string]proto.Message {
		return map[string]proto.Message{vpp_l2.XConnectKey(rx): &vpp_l2.XConnectPair{ReceiveInterface: rx, TransmitInterface: tx}}
	}
	bridgeDomain := func(learn bool, members ...string) map[string]proto.Message {
		bd := &vpp_l2.BridgeDomain{Name: "lab", Flood: true, Forward: true, Learn: learn}
		for _, member := range members {
			bd.Interfaces = append(bd.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: member})
		}
		return map[string]proto.Message{vpp_l2.BridgeDomainKey("lab"): bd}
	}
	route := func(dst string) map[string]proto.Message {
		r := &vpp_l3.Route{VrfId: 10, DstNetwork: dst, OutgoingInterface: "gw-red"}
		return map[string]proto.Message{vpp_l3.RouteKey(r.OutgoingInterface, r.VrfId, r.DstNetwork, ""): r}
	}
	return []lifecycleCase{
		// A VRF table has no update: a new label re-creates it.
		{name: "VRF table", created: vrf(10, "red"), changed: vrf(10, "blue"), view: tables,
			wantCreated: []string{"10 ipv4 red", "10 ipv6 red"}, wantChanged: []string{"10 ipv4 blue", "10 ipv6 blue"}},
		// Every field of a route is in its key or fixed: a change is
		// another route.
		{name: "route", base: with(vrf(10, "red"), loopback("gw-red", 10, "10.70.0.1/24")),
			created: route("10.70.0.2/32"), changed: merge(route("10.70.0.3/32"), map[string]proto.Message{keyOf(route("10.70.0.2/32")): nil}),
			view: routes, wantCreated: []string{"10.70.0.2/32 via gw-red"}, wantChanged: []string{"10.70.0.3/32 via gw-red"}},
		// Members join and leave in place (derived values); other
		// settings re-create the bridge domain.
		{name: "bridge domain", base: with(nil, memif(dir, "bd-a", nil), memif(dir, "bd-b", nil)),
			created: bridgeDomain(true, "bd-a", "bd-b"), changed: bridgeDomain(false, "bd-b"), view: bridgeDomains,
			wantCreated: []string{"lab learn true members [bd-a bd-b]"}, wantChanged: []string{"lab learn false members [bd-b]"}},
		// A cross-connect has no update: another transmit interface
		// re-creates it.
		{name: "cross-connect", base: with(nil, memif(dir, "xc-a", nil), memif(dir, "xc-b", nil), memif(dir, "xc-c", nil)),
			created: xconnect("xc-a", "xc-b"), changed: xconnect("xc-a", "xc-c"), view: xconnects,
			wantCreated: []string{"xc-a -> xc-b"}, wantChanged: []string{"xc-a -> xc-c"}},
	}
}

func keyOf(values map[string]proto.Message) string {
	for key := range values {
		return key
	}
	return ""
}

// TestDescriptorLifecycles takes each descriptor's values through create,
// an agent restart (Retrieve reads them back: no operation), a change, a
// restart again, and delete, each time checking what VPP holds.
func TestDescriptorLifecycles(t *testing.T) {
	v := vpp.Start(t)
	for _, c := range lifecycleCases(v.Dir) {
		t.Run(c.name, func(t *testing.T) {
			a := startAgent(t, v)
			created := merge(c.base, c.created)
			a.commit(t, created)
			wantView(t, v, c.view, "created", c.wantCreated)
			wantNoOps(t, "resync after an agent restart", startAgent(t, v).resync(t, created))

			changed := merge(created, c.changed)
			for key, value := range changed {
				if value == nil {
					delete(changed, key)
				}
			}
			a = startAgent(t, v)
			a.resync(t, created)
			a.commit(t, c.changed)
			wantView(t, v, c.view, "changed", c.wantChanged)
			wantNoOps(t, "resync after the change and an agent restart", startAgent(t, v).resync(t, changed))

			startAgent(t, v).resync(t, nil)
			wantView(t, v, c.view, "deleted", nil)
		})
	}
}

func wantView(t *testing.T, v *vpp.VPP, view func(*testing.T, *vpp.VPP) []string, when string, want []string) {
	t.Helper()
	if got := view(t, v); !slices.Equal(got, want) {
		t.Errorf("%s: VPP holds %q, want %q", when, got, want)
	}
}

// viewConn is a connection of the test's own, until t's end.
func viewConn(t *testing.T, v *vpp.VPP) *vppapi.Conn {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-view", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// tags returns the agent's name of each of its interfaces, by index.
func tags(t *testing.T, conn *vppapi.Conn) map[uint32]string {
	names := map[uint32]string{}
	for _, iface := range dump[vppmsg.SwInterfaceDetails](t, conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)}) {
		if name, ours := owner.Name(iface.Tag); ours {
			names[uint32(iface.SwIfIndex)] = name
		}
	}
	return names
}

func tables(t *testing.T, v *vpp.VPP) []string {
	var lines []string
	for _, table := range dump[vppmsg.IPTableDetails](t, viewConn(t, v), &vppmsg.IPTableDump{}) {
		if label, ours := owner.Name(table.Table.Name); ours {
			family := map[bool]string{false: "ipv4", true: "ipv6"}[table.Table.IsIP6]
			lines = append(lines, fmt.Sprintf("%d %s %s", table.Table.TableID, family, label))
		}
	}
	slices.Sort(lines)
	return lines
}

func routes(t *testing.T, v *vpp.VPP) []string {
	conn := viewConn(t, v)
	names := tags(t, conn)
	var lines []string
	for _, route := range dump[vppmsg.IPRouteV2Details](t, conn, &vppmsg.IPRouteV2Dump{Src: 8, Table: vppmsg.IPTable{TableID: 10}}) {
		var via []string
		for _, path := range route.Route.Paths {
			via = append(via, names[path.SwIfIndex])
		}
		lines = append(lines, prefixString(route.Route.Prefix)+" via "+strings.Join(via, ","))
	}
	slices.Sort(lines)
	return lines
}

func bridgeDomains(t *testing.T, v *vpp.VPP) []string {
	conn := viewConn(t, v)
	names := tags(t, conn)
	var lines []string
	for _, domain := range dump[vppmsg.BridgeDomainDetails](t, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)}) {
		name, ours := owner.Name(domain.BdTag)
		if !ours {
			continue
		}
		var members []string
		for _, member := range domain.SwIfDetails {
			members = append(members, names[uint32(member.SwIfIndex)])
		}
		slices.Sort(members)
		lines = append(lines, fmt.Sprintf("%s learn %t members %v", name, domain.Learn, members))
	}
	return lines
}

func xconnects(t *testing.T, v *vpp.VPP) []string {
	conn := viewConn(t, v)
	names := tags(t, conn)
	var lines []string
	for _, xc := range dump[vppmsg.L2XconnectDetails](t, conn, &vppmsg.L2XconnectDump{}) {
		lines = append(lines, names[uint32(xc.RxSwIfIndex)]+" -> "+names[uint32(xc.TxSwIfIndex)])
	}
	slices.Sort(lines)
	return lines
}

// TestLinkStatesFromRetrieve: a resync reports the link state of each of
// the agent's interfaces as VPP holds it, from the interfaces' Retrieve:
// a loopback admin up has its link up, a memif without its pod side down.
func TestLinkStatesFromRetrieve(t *testing.T) {
	v := vpp.Start(t)
	a := startAgent(t, v)
	values := with(nil, loopback("gw", 0), memif(v.Dir, "waiting", nil))
	a.commit(t, values)
	restarted := startAgent(t, v)
	restarted.resync(t, values)
	states, err := restarted.scheduler.DumpValuesByDescriptor(descriptor.LinkStateDescriptorName, kvs.CachedView)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range states {
		got = append(got, kv.Key)
	}
	slices.Sort(got)
	if want := []string{vpp_interfaces.LinkStateKey("gw", true), vpp_interfaces.LinkStateKey("waiting", false)}; !slices.Equal(got, want) {
		t.Errorf("the scheduler holds link states %v, want %v", got, want)
	}
}
