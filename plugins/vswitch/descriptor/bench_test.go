package descriptor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"

	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// BenchmarkMemifCreate measures, in one run and alternating, the commit
// that makes a plain memif (ethernet, VPP's defaults, as the agent made
// every memif before networks) and the one that makes a memif with a full
// spec in an l3 network: IP mode, 2 queues, ring and buffer size, MTU, rx
// mode, in VRF 10 unnumbered to the network's gateway loopback, and the
// /32 route of its pod address. full/plain is the figure to compare.
func BenchmarkMemifCreate(b *testing.B) {
	v := vpp.Start(b)
	a := startAgent(b, v)
	a.commit(b, with(vrf(10, "red"), loopback("gw-red", 10, "10.70.0.1/24")))
	var plain, full time.Duration
	for i := 0; b.Loop(); i++ {
		plainMemif := memif(v.Dir, fmt.Sprintf("plain%d", i), nil)
		fullMemif := memif(v.Dir, fmt.Sprintf("full%d", i), func(iface *vpp_interfaces.Interface) {
			link := iface.GetMemif()
			link.Mode, link.RxQueues, link.TxQueues, link.RingSize, link.BufferSize = vpp_interfaces.MemifLink_IP, 2, 2, 1024, 2048
			iface.Mtu, iface.Vrf = 9000, 10
			iface.Unnumbered = &vpp_interfaces.Interface_Unnumbered{InterfaceWithIp: "gw-red"}
			iface.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: vpp_interfaces.Interface_RxMode_POLLING}}
		})
		route := &vpp_l3.Route{VrfId: 10, DstNetwork: fmt.Sprintf("10.70.%d.%d/32", i/250, 2+i%250), OutgoingInterface: fullMemif.Name}
		routeKey := vpp_l3.RouteKey(route.OutgoingInterface, route.VrfId, route.DstNetwork, "")

		start := time.Now()
		a.commit(b, with(nil, plainMemif))
		plain += time.Since(start)
		start = time.Now()
		a.commit(b, with(map[string]proto.Message{routeKey: route}, fullMemif))
		full += time.Since(start)

		b.StopTimer()
		a.commit(b, map[string]proto.Message{vpp_interfaces.InterfaceKey(plainMemif.Name): nil,
			vpp_interfaces.InterfaceKey(fullMemif.Name): nil, routeKey: nil})
		b.StartTimer()
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/create")
	b.ReportMetric(float64(full.Nanoseconds())/float64(b.N), "full-ns/create")
	b.ReportMetric(float64(full)/float64(plain), "full/plain")
}
