package memifwiring_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// BenchmarkAgentRestartWithMemifsInVPP measures an agent restart on a node
// whose VPP already holds every pod's memif: from the agent's start to its
// startup resync done, with VPP's binary API messages the restart sent
// (vpp-messages/op, from VPP's own API trace) and the changes it made in
// VPP (vpp-changes/op, which must be 0), for 10, 100 and 1,000 memifs. The
// 10-memif case is the baseline: the resync's cost should grow linearly
// with the memifs, not as their square.
// The link watcher's period is long, so that its reads of VPP do not count
// as the restart's.
func BenchmarkAgentRestartWithMemifsInVPP(b *testing.B) {
	for _, memifs := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("memifs=%d", memifs), func(b *testing.B) {
			v := vpp.Start(b)
			lister := newLivePods()
			dir := vppAgentDir(b)
			devices := deviceManagerConfig(dir)
			devices.DeviceCount = memifs
			fakekubelet.StartForAgent(b, devices.PluginDir)
			setup := agentSetup{
				dir:           dir,
				deviceManager: &devices,
				vswitchConf:   fmt.Sprintf("vpp-api-socket: %s\nlink-check-period: 10m\n", v.APISocket),
				vswitchLog:    io.Discard,
				livePods:      lister,
			}
			first := startAgentWith(b, setup)
			var pods []podapi.PodState
			for i, device := range allocation.DeviceIDs(memifs) {
				memif := first.allocate(b, device)
				pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: fmt.Sprintf("pod-%d", i)}, UID: fmt.Sprintf("uid-%d", i)}
				containers := []podapi.PodContainer{container("app", memif)}
				first.Push(b, &podapi.AddPod{Pod: pod, Containers: containers})
				pods = append(pods, podapi.PodState{Pod: pod, Containers: containers})
				if i%50 == 49 {
					// Each barrier waits for what it follows, within its limit.
					first.Barrier(b)
				}
			}
			first.Barrier(b)
			lister.set(pods)
			first.Stop()

			var messages, changes int
			for b.Loop() {
				b.StopTimer()
				v.TraceAPI(b)
				b.StartTimer()
				restarted := startAgentWith(b, setup)
				b.StopTimer()
				messages += len(v.TracedAPI(b))
				changes += len(executedOperations(restarted))
				restarted.Stop()
				b.StartTimer()
			}
			if changes != 0 {
				b.Errorf("the restarts changed VPP %d times; want none", changes)
			}
			b.ReportMetric(float64(messages)/float64(b.N), "vpp-messages/op")
			b.ReportMetric(float64(changes)/float64(b.N), "vpp-changes/op")
		})
	}
}
