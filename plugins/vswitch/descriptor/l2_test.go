package descriptor_test

import (
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// TestBridgeDomainMembersJoinOneAtATime adds a pod's memif to a bridge
// domain that already holds another: the bridge domain model changes (an
// update), and the new member must still find the bridge domain's VPP ID.
func TestBridgeDomainMembersJoinOneAtATime(t *testing.T) {
	v := vpp.Start(t)
	a := startAgent(t, v)
	bd := func(members ...string) *vpp_l2.BridgeDomain {
		domain := &vpp_l2.BridgeDomain{Name: "lab", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true}
		for _, member := range members {
			domain.Interfaces = append(domain.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: member})
		}
		return domain
	}
	first, second := memif(v.Dir, "lab-pod1", nil), memif(v.Dir, "lab-pod2", nil)
	a.commit(t, map[string]proto.Message{vpp_interfaces.InterfaceKey(first.Name): first, vpp_l2.BridgeDomainKey("lab"): bd(first.Name)})
	a.commit(t, map[string]proto.Message{vpp_interfaces.InterfaceKey(second.Name): second, vpp_l2.BridgeDomainKey("lab"): bd(first.Name, second.Name)})

	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test-bd", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	domains := dump[vppmsg.BridgeDomainDetails](t, conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if len(domains) != 1 || domains[0].BdTag != owner.Tag("lab") || len(domains[0].SwIfDetails) != 2 {
		for _, domain := range domains {
			t.Errorf("VPP has bridge domain %q with %d members", domain.BdTag, len(domain.SwIfDetails))
		}
		t.Errorf("want one bridge domain, lab, with both memifs")
	}
	values := map[string]proto.Message{vpp_interfaces.InterfaceKey(first.Name): first, vpp_interfaces.InterfaceKey(second.Name): second,
		vpp_l2.BridgeDomainKey("lab"): bd(first.Name, second.Name)}
	wantNoOps(t, "resync after an agent restart", startAgent(t, v).resync(t, values))
}
