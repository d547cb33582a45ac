package memifwiring_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// failingSibling is another handler of pod events that fails while armed.
type failingSibling struct{ armed bool }

var errSiblingFailed = errors.New("sibling handler failed")

func (h *failingSibling) String() string                        { return "failing-sibling" }
func (h *failingSibling) HandlesEvent(controllerapi.Event) bool { return true }
func (h *failingSibling) Revert(controllerapi.Event) error      { return nil }
func (h *failingSibling) Update(controllerapi.Event, controllerapi.EventOperations) (string, error) {
	if h.armed {
		return "", errSiblingFailed
	}
	return "", nil
}
func (h *failingSibling) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}

const (
	appInterface     = "memif_default_web_app_0"
	sidecarInterface = "memif_default_web_sidecar_0"
)

var webInterfaces = []string{appInterface, sidecarInterface}

func TestPodMemifsAreWiredThenRemoved(t *testing.T) {
	a := startAgent(t)
	pod, app, sidecar := a.addWebPod(t)
	a.Push(t, &podapi.AddPod{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "no-memif"}, UID: "uid-2"}})
	a.Barrier(t)

	interfaces := a.restDumpInterfaces(t)
	for _, tc := range []struct {
		name       string
		allocation *dmapi.AllocateDevice
	}{
		{appInterface, app},
		{sidecarInterface, sidecar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iface := interfaces[tc.name]
			link := iface.GetMemif()
			wantSocket := tc.allocation.Annotations[dmapi.AnnotationSocketHost]
			wantSecret := tc.allocation.Envs[dmapi.EnvMemifSecret]
			if iface.GetType() != vpp_interfaces.Interface_MEMIF || !iface.GetEnabled() || !link.GetMaster() ||
				link.GetSocketFilename() != wantSocket || link.GetId() != 0 {
				t.Errorf("scheduler holds %v, want an enabled memif master on %s", withoutSecret(iface), wantSocket)
			}
			// The agent's HTTP server masks secrets; the scheduler holds
			// the allocation's.
			if link.GetSecret() != "***" {
				t.Errorf("the REST dump shows the secret of %s unmasked", tc.name)
			}
			if held := a.schedulerInterfaces(t)[tc.name].GetMemif().GetSecret(); held != wantSecret {
				t.Errorf("scheduler holds %v (secret matches: %v), want the allocation's secret", withoutSecret(iface), held == wantSecret)
			}
			if iface.GetMtu() != 9000 {
				t.Errorf("MTU = %d, want 9000 from memifwiring.conf", iface.GetMtu())
			}
			if state := a.KVScheduler.GetValueStatus(vpp_interfaces.InterfaceKey(tc.name)).GetValue().GetState(); state != kvs.ValueState_CONFIGURED {
				t.Errorf("scheduler state = %s, want CONFIGURED", state)
			}
			if got := a.vswitch.get(tc.name); got.GetMemif().GetSocketFilename() != wantSocket {
				t.Errorf("vswitch was told %v, want the memif on %s", withoutSecret(got), wantSocket)
			}
		})
	}
	if len(interfaces) != 2 {
		t.Errorf("scheduler holds %v, want the web pod's 2 interfaces", names(interfaces))
	}

	a.Push(t, &podapi.DeletePod{Pod: pod})
	a.Barrier(t)
	if interfaces := a.restDumpInterfaces(t); len(interfaces) != 0 {
		t.Errorf("after DeletePod the scheduler holds %v, want nothing", names(interfaces))
	}
	if names := a.vswitch.names(); len(names) != 0 {
		t.Errorf("after DeletePod the vswitch holds %v, want nothing", names)
	}
	if allocations := a.DeviceManager.ListAllocations(); len(allocations) != 0 {
		t.Errorf("after DeletePod the device manager holds %v, want the allocations released", allocations)
	}
}

// revertOnFailureDeletePod is a DeletePod that the controller processes
// under RevertOnFailure and that its pusher waits for.
type revertOnFailureDeletePod struct {
	*podapi.DeletePod
	result *controllerapi.Result
}

func (e revertOnFailureDeletePod) Spec() controllerapi.EventSpec {
	spec := e.DeletePod.Spec()
	spec.Blocking, spec.Transaction = true, controllerapi.RevertOnFailure
	return spec
}
func (e revertOnFailureDeletePod) Done(err error) { e.result.Done(err) }

func TestHandlerFailureUnderRevertOnFailureLeavesSchedulerUnchanged(t *testing.T) {
	a := startAgent(t)
	pod, _, _ := a.addWebPod(t)
	before := a.schedulerInterfaces(t)

	a.sibling.armed = true
	event := revertOnFailureDeletePod{DeletePod: &podapi.DeletePod{Pod: pod}, result: controllerapi.NewResult()}
	a.Push(t, event)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := event.result.Wait(ctx); !errors.Is(err, errSiblingFailed) {
		t.Fatalf("event error = %v, want the sibling's failure", err)
	}
	after := a.schedulerInterfaces(t)
	if len(after) != len(before) || after[appInterface] == nil || after[sidecarInterface] == nil {
		t.Errorf("after the reverted event the scheduler holds %v, want it unchanged: %v", names(after), names(before))
	}
	if names := a.vswitch.names(); !slices.Equal(names, webInterfaces) {
		t.Errorf("after the reverted event the vswitch holds %v, want %v", names, webInterfaces)
	}

	// The handler's own record was reverted too: a real DeletePod still
	// knows what to remove.
	a.sibling.armed = false
	a.Push(t, &podapi.DeletePod{Pod: pod})
	a.Barrier(t)
	if interfaces := a.schedulerInterfaces(t); len(interfaces) != 0 {
		t.Errorf("after DeletePod the scheduler holds %v, want nothing", names(interfaces))
	}
}

func TestVswitchFailureKeepsAllocationAndHeals(t *testing.T) {
	a := startAgent(t)
	a.vswitch.refuse(true)
	pod, _, _ := a.addWebPod(t)

	if names := a.vswitch.names(); len(names) != 0 {
		t.Fatalf("the refusing vswitch holds %v", names)
	}
	memifs, err := a.DeviceManager.GetPodMemifs(pod.ID)
	if err != nil || len(memifs) != 2 {
		t.Fatalf("after the vswitch failed the pod's memifs are %v (%v), want both allocations kept", memifs, err)
	}

	a.vswitch.refuse(false)
	poll.Until(t, waitLimit, "the healing resync wiring the pod", func() error {
		if names := a.vswitch.names(); !slices.Equal(names, webInterfaces) {
			return fmt.Errorf("vswitch holds %v, want %v", names, webInterfaces)
		}
		return nil
	})
}

func TestResyncRewiresFromTheDeviceManager(t *testing.T) {
	a := startAgent(t)
	a.addWebPod(t)
	a.Resync(t)
	interfaces := a.schedulerInterfaces(t)
	if len(interfaces) != 2 || interfaces[appInterface] == nil || interfaces[sidecarInterface] == nil {
		t.Errorf("after a full resync the scheduler holds %v, want the web pod's interfaces", names(interfaces))
	}
}
