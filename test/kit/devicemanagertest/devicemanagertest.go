package devicemanagertest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// DeviceCount is how many devices the manager offers kubelet's device
// plugin; ClaimDeviceCount how many it offers ResourceClaims.
const (
	DeviceCount      = 100
	ClaimDeviceCount = 8
)

// waitLimit only bounds waits for what should happen; nothing asserts time.
const waitLimit = 20 * time.Second

// New returns the real device manager over temporary directories of t.
// now, when not nil, is the manager's clock (allocation times).
func New(t testing.TB, now func() time.Time) *manager.Manager {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DeviceCount = DeviceCount
	cfg.ClaimDeviceCount = ClaimDeviceCount
	cfg.PluginDir = filepath.Join(dir, "device-plugins")
	cfg.SocketRoot = filepath.Join(dir, "memif")
	cfg.CheckpointPath = filepath.Join(dir, "checkpoint.json")
	cfg.DeviceInfoDir = filepath.Join(dir, "devinfo")
	devices, err := manager.New(cfg, manager.Options{Log: testlog.New(t), Now: now})
	if err != nil {
		t.Fatalf("create device manager: %v", err)
	}
	return devices
}

// StartLoop runs the real event loop with handlers, committing to
// committer, until t ends.
func StartLoop(t testing.TB, committer controllerapi.Committer, handlers ...controllerapi.EventHandler) *eventloop.Loop {
	t.Helper()
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: handlers, Committer: committer})
	if err != nil {
		t.Fatalf("create event loop: %v", err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	return loop
}

// Start returns the real device manager running as the only handler of the
// real event loop.
func Start(t testing.TB, now func() time.Time) (*manager.Manager, *eventloop.Loop) {
	t.Helper()
	devices := New(t, now)
	return devices, StartLoop(t, fakevswitch.Committer{}, devices)
}

// Allocate pushes the AllocateDevice event kubelet's Allocate of deviceIDs
// would push, and returns it once processed, with the allocation's envs
// and annotations.
func Allocate(t testing.TB, loop controllerapi.EventLoop, deviceIDs ...string) *dmapi.AllocateDevice {
	t.Helper()
	event := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, deviceIDs)
	if err := loop.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := event.Wait(ctx); err != nil {
		t.Fatalf("%s: %v", event, err)
	}
	return event
}

// PrepareClaim pushes the PrepareClaim event kubelet's NodePrepareResources
// of a claim would push and returns it once processed, or the error it
// failed with.
func PrepareClaim(t testing.TB, loop controllerapi.EventLoop, claimUID string, pod podapi.Pod, requests ...dmapi.ClaimRequest) (*dmapi.PrepareClaim, error) {
	t.Helper()
	event := dmapi.NewPrepareClaim(claimUID, pod.ID.Namespace, "claim-"+claimUID, pod, requests)
	return event, push(t, loop, event, event.Result)
}

// UnprepareClaim pushes the UnprepareClaim event of a claim and returns the
// error it failed with.
func UnprepareClaim(t testing.TB, loop controllerapi.EventLoop, claimUID string) error {
	t.Helper()
	event := dmapi.NewUnprepareClaim(claimUID, "default", "claim-"+claimUID)
	return push(t, loop, event, event.Result)
}

func push(t testing.TB, loop controllerapi.EventLoop, event controllerapi.Event, result *controllerapi.Result) error {
	t.Helper()
	if err := loop.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return result.Wait(ctx)
}

// Container is a container of a pod and the allocation kubelet gave it.
type Container struct {
	Name       string
	Allocation *dmapi.AllocateDevice
}

// AddPod pushes the AddPod event of pod with containers, carrying their
// allocations' annotations as the runtime shows them, and returns once
// devices has bound each of these allocations to the pod.
func AddPod(t testing.TB, loop controllerapi.EventLoop, devices dmapi.DeviceManagerAPI, pod podapi.Pod, containers ...Container) {
	t.Helper()
	event := &podapi.AddPod{Pod: pod}
	for _, container := range containers {
		event.Containers = append(event.Containers, podapi.PodContainer{
			Name: container.Name, Annotations: container.Allocation.Annotations,
		})
	}
	if err := loop.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event, err)
	}
	waitFor(t, event.String(), func() bool {
		bound := map[string]bool{}
		for _, memif := range devices.ListAllocations() {
			bound[memif.AllocationID] = memif.Pod == pod.ID && memif.PodUID == pod.UID
		}
		for _, container := range containers {
			if !bound[container.Allocation.AllocationID] {
				return false
			}
		}
		return true
	})
}

// DeletePod pushes the DeletePod event of pod and returns once devices
// holds no memif of it.
func DeletePod(t testing.TB, loop controllerapi.EventLoop, devices dmapi.DeviceManagerAPI, pod podapi.Pod) {
	t.Helper()
	event := &podapi.DeletePod{Pod: pod}
	if err := loop.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event, err)
	}
	waitFor(t, event.String(), func() bool {
		_, err := devices.GetPodMemifs(pod.ID)
		return errors.Is(err, dmapi.ErrNoMemif)
	})
}

// WaitForHistory returns once the event loop of source has recorded count
// events: a non-blocking event's effect may be visible before its record.
func WaitForHistory(t testing.TB, source controllerapi.EventHistory, count int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("event %d", count), func() bool { return len(source.EventHistory(controllerapi.HistoryQuery{})) >= count })
}

func waitFor(t testing.TB, what string, done func() bool) {
	t.Helper()
	poll.Until(t, waitLimit, what, func() error {
		if !done() {
			return errors.New("not seen yet")
		}
		return nil
	})
}
