package memifwiring_test

import (
	"fmt"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// BenchmarkAdmissionWithVPPStopped measures kubelet's Allocate over the
// device plugin's gRPC socket, each followed by its pod's AddPod, whose
// memif the agent then commits to VPP: with VPP answering, and with VPP
// stopped (SIGSTOP), where every pod's wiring waits on VPP and each next
// Allocate is queued behind it. Both run in one agent on one VPP, one
// after the other, so that they see the same machine; the figure to
// compare is stopped/answering (ns/op), which a hung VPP would make as
// large as the VPP call's bound (request-timeout 2m here).
func BenchmarkAdmissionWithVPPStopped(b *testing.B) {
	v := vpp.Start(b)
	n := startKubeletNode(b, v, patientVswitchConf)
	pod := 0
	for _, vppState := range []string{"answering", "stopped"} {
		b.Run("vpp="+vppState, func(b *testing.B) {
			if vppState == "stopped" {
				v.Pause(b)
				b.Cleanup(func() { v.Resume(b) })
			}
			b.ResetTimer()
			for i := range b.N {
				// kubelet hands a device out again once its pod is gone:
				// the agent takes it over from the pod before.
				response := n.allocateOverGRPC(b, fmt.Sprintf("memif-%03d", i%8))
				n.addPod(b, fmt.Sprintf("pod-%d", pod), response)
				pod++
			}
		})
	}
}
