package kubeletdriver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/devicehealth"
	"github.com/contivpp/memif-agent/plugins/dradriver/kubeletdriver"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// TestVswitchTaint (a short name: the socket paths under its temporary
// directory hold 108 bytes): once the vswitch has been
// unreachable for longer than the grace, every device of the node's
// ResourceSlice carries the NoSchedule taint, so the scheduler allocates
// none to a new claim; a claim already prepared keeps its memif; the taint
// goes when the vswitch answers again.
func TestVswitchTaint(t *testing.T) {
	var vswitch vswitchapi.ReachabilityCell
	vswitch.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
	watcher := devicehealth.New(&vswitch, time.Minute, testlog.New(t))
	go watcher.Run(t.Context())
	n := startNode(t)
	n.driver.Stop()
	n.cfg.Health = watcher
	n.startDriver(t)
	n.allocate(t, claimUID, claimName, "memif-dra-002")
	n.prepare(t, claimUID, claimName)

	steps := []struct {
		name        string
		reach       vswitchapi.Reachability
		wantTainted bool
	}{
		{name: "vswitch answers", reach: vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()}},
		{name: "unreachable for longer than the grace", wantTainted: true,
			reach: vswitchapi.Reachability{Configured: true, Since: time.Now().Add(-time.Hour), Err: errors.New("VPP did not answer")}},
		{name: "answers again", reach: vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()}},
	}
	for _, step := range steps {
		vswitch.Set(step.reach)
		poll.Until(t, waitLimit, fmt.Sprintf("%s: devices tainted=%v", step.name, step.wantTainted), func() error {
			return checkTaints(n, step.wantTainted)
		})
		if held := n.dm.ListAllocations(); len(held) != 1 || held[0].DeviceIDs[0] != "memif-dra-002" {
			t.Errorf("%s: the device manager holds %v, want the prepared claim's allocation", step.name, held)
		}
	}
}

// checkTaints checks that every device of the node's slice is tainted
// vswitch-unreachable NoSchedule, or that none is.
func checkTaints(n *node, wantTainted bool) error {
	list, err := n.apiServer.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		return fmt.Errorf("slices %v, %v", list, err)
	}
	for _, device := range list.Items[0].Spec.Devices {
		tainted := len(device.Taints) == 1 && device.Taints[0].Key == kubeletdriver.VswitchUnreachableTaint &&
			device.Taints[0].Effect == resourceapi.DeviceTaintEffectNoSchedule && device.Taints[0].TimeAdded != nil
		if tainted != wantTainted || !wantTainted && len(device.Taints) != 0 {
			return fmt.Errorf("device %s has taints %v", device.Name, device.Taints)
		}
	}
	return nil
}
