package podtracking_test

import (
	"testing"
)

// BenchmarkGetPodMemifInfo measures GetPodMemifInfo against the real
// kubelet and dockerd. "bound" is a running pod whose allocation the event
// loop has bound: a lookup in the device manager's state, the baseline.
// "admitted" is a pod kubelet has just admitted, not yet seen by the event
// loop: the answer comes through the pod resolver (Docker listing by label
// and kubelet's pod-resources Get).
func BenchmarkGetPodMemifInfo(b *testing.B) {
	e := newEnv(b)
	a := e.startAgent(b)
	running := e.runPod(b, "running", false)
	boundMemif(b, a, running.spec)
	e.admit(b, "admitted")

	for _, pod := range []string{"running", "admitted"} {
		name := map[string]string{"running": "bound", "admitted": "admitted"}[pod]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.dm.GetPodMemifInfo(podID(pod)); err != nil {
					b.Fatalf("GetPodMemifInfo(%s): %v", pod, err)
				}
			}
		})
	}
}
