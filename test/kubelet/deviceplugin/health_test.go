package deviceplugin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// TestUnreachableVswitchEmptiesAllocatable: kubelet's real device manager
// reports no memif allocatable, and refuses a new memif pod, while the
// vswitch has been unreachable for longer than the grace; the pod already
// admitted keeps its device; once the vswitch answers, every device is
// allocatable again and the refused pod is admitted. The node's
// allocatable is what the scheduler places pods by.
func TestUnreachableVswitchEmptiesAllocatable(t *testing.T) {
	n := newNode(t)
	var vswitch vswitchapi.ReachabilityCell
	vswitch.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
	// n.cfg's vswitch-health-grace is the default, 10 s.
	n.startAgentWith(t, n.cfg, agentSetup{reachability: &vswitch})
	n.waitForCapacity(t, deviceCount)
	running := kubelettest.NewPod("running", resource, 1)
	n.runContainers(t, running)

	vswitch.Set(vswitchapi.Reachability{Configured: true, Since: time.Now().Add(-time.Minute), Err: errors.New("VPP did not answer control_ping")})
	n.waitForCapacity(t, 0)
	if capacity, _ := n.kubelet.Capacity(resource); capacity != deviceCount {
		t.Errorf("capacity = %d, want all %d devices, unhealthy", capacity, deviceCount)
	}
	refused := kubelettest.NewPod("refused", resource, 1)
	if _, err := n.kubelet.AdmitPod(n.ctx, refused); err == nil || !strings.Contains(err.Error(), "no healthy devices") {
		t.Errorf("AdmitPod with every device unhealthy = %v, want kubelet's \"no healthy devices\"", err)
	}
	if devices := n.kubelet.Devices(running.UID, running.Spec.Containers[0].Name, resource); len(devices) != 1 {
		t.Errorf("the running pod holds %v, want its device", devices)
	}

	vswitch.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
	n.waitForCapacity(t, deviceCount)
	n.runContainers(t, refused)
}
