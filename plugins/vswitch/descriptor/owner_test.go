package descriptor_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// othersInVPP describes, one line each and sorted, every interface, bridge
// domain and IP table in VPP that is not the agent's: its name, tag,
// bridge domain members.
func othersInVPP(t *testing.T, v *vpp.VPP) []string {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-others", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var others []string
	names := map[vppmsg.InterfaceIndex]string{}
	ourInterfaces := map[vppmsg.InterfaceIndex]bool{}
	for _, iface := range dump[vppmsg.SwInterfaceDetails](t, conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)}) {
		names[iface.SwIfIndex] = iface.InterfaceName
		if _, ours := owner.Name(iface.Tag); ours {
			ourInterfaces[iface.SwIfIndex] = true
			continue
		}
		others = append(others, fmt.Sprintf("interface %s tag %q admin-up %v", iface.InterfaceName, iface.Tag, iface.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0))
	}
	for _, memif := range dump[vppmsg.MemifDetails](t, conn, &vppmsg.MemifDump{}) {
		if !ourInterfaces[memif.SwIfIndex] {
			others = append(others, fmt.Sprintf("memif %s id %d socket-id %d", names[memif.SwIfIndex], memif.ID, memif.SocketID))
		}
	}
	for _, domain := range dump[vppmsg.BridgeDomainDetails](t, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)}) {
		if _, ours := owner.Name(domain.BdTag); ours {
			continue
		}
		var members []string
		for _, member := range domain.SwIfDetails {
			members = append(members, names[member.SwIfIndex])
		}
		slices.Sort(members)
		others = append(others, fmt.Sprintf("bridge domain %d tag %q members %v", domain.BdID, domain.BdTag, members))
	}
	for _, table := range dump[vppmsg.IPTableDetails](t, conn, &vppmsg.IPTableDump{}) {
		if _, ours := owner.Name(table.Table.Name); !ours {
			others = append(others, fmt.Sprintf("table %d ipv6 %v name %q", table.Table.TableID, table.Table.IsIP6, table.Table.Name))
		}
	}
	slices.Sort(others)
	return others
}

// TestWhatOthersMadeInVPPSurvives: memifs, a loopback, bridge domains and
// IP tables made by hand (vppctl), untagged or tagged by another tool, or
// tagged with the very names of the agent's models but not as the
// agent's, stay as they are while the agent makes its own, resyncs,
// restarts and deletes everything it made.
func TestWhatOthersMadeInVPPSurvives(t *testing.T) {
	v := vpp.Start(t)
	for _, command := range [][]string{
		{"create", "memif", "socket", "id", "5", "filename", filepath.Join(v.Dir, "by-hand.sock")},
		{"create", "interface", "memif", "id", "0", "socket-id", "5", "master"},
		{"set", "interface", "tag", "memif5/0", "other-tool:uplink"},
		{"set", "interface", "state", "memif5/0", "up"},
		{"create", "interface", "memif", "id", "1", "socket-id", "5", "master"},
		{"create", "interface", "memif", "id", "2", "socket-id", "5", "master"},
		{"set", "interface", "tag", "memif5/2", "pod-a"},
		{"create", "loopback", "interface"},
		{"set", "interface", "tag", "loop0", "gw-red"},
		{"create", "bridge-domain", "77", "bd-tag", "other-tool:bd"},
		{"set", "interface", "l2", "bridge", "memif5/0", "77"},
		{"create", "bridge-domain", "78", "bd-tag", "pods"},
		{"set", "interface", "l2", "bridge", "memif5/2", "78"},
		{"create", "bridge-domain", "79"},
		{"set", "interface", "l2", "bridge", "memif5/1", "79"},
		{"ip", "table", "add", "9", "name", "red"},
		{"ip", "table", "add", "10"},
	} {
		v.CLI(t, command...)
	}
	before := othersInVPP(t, v)
	if len(before) < 12 {
		t.Fatalf("VPP holds %d objects made by hand, want the 12 made and local0:\n%s", len(before), strings.Join(before, "\n"))
	}
	wantUntouched := func(when string) {
		t.Helper()
		if after := othersInVPP(t, v); !slices.Equal(after, before) {
			t.Errorf("%s, what others made in VPP changed from\n%s\nto\n%s", when, strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
	}

	podA := memif(v.Dir, "pod-a", nil)
	values := with(routedNetwork(v.Dir, 20, "red", "10.20.0.", "fd00:20::"), podA)
	values[vpp_l2.BridgeDomainKey("pods")] = &vpp_l2.BridgeDomain{Name: "pods", Flood: true, Forward: true, Learn: true,
		Interfaces: []*vpp_l2.BridgeDomain_Interface{{Name: podA.Name}}}
	first := startAgent(t, v)
	for _, op := range first.resync(t, values) {
		if op.PrevValue != nil {
			t.Errorf("the agent's first resync changed %s, which it did not make (%s)", op.Key, op.Operation)
		}
	}
	wantUntouched("after the agent's first resync")
	if ours := readVPP(t, v); len(ours) != 4 || ours["pod-a"] == nil || ours["gw-red"] == nil {
		t.Errorf("the agent's interfaces in VPP are %v, want pod-a, gw-red, red-pod2 and red-pod3", keys(ours))
	}
	wantNoOps(t, "a second resync", first.resync(t, values))

	restarted := startAgent(t, v)
	wantNoOps(t, "resync after an agent restart", restarted.resync(t, values))
	wantUntouched("after an agent restart")

	startAgent(t, v).resync(t, nil)
	wantUntouched("after the agent deleted everything it made")
	if ours := readVPP(t, v); len(ours) != 0 {
		t.Errorf("after the agent deleted everything, VPP still has its interfaces %v", keys(ours))
	}
	if domains := v.CLI(t, "show", "bridge-domain"); strings.Contains(domains, owner.Prefix) {
		t.Errorf("after the agent deleted everything, VPP still has its bridge domain:\n%s", domains)
	}
}

func keys[V any](m map[string]V) []string {
	var names []string
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
