package manager_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// TestAllocatorAnswersWhatTheLoopDid: the device manager as the device
// plugin's Allocator makes the allocation on the real event loop and
// answers with what the allocation holds.
func TestAllocatorAnswersWhatTheLoopDid(t *testing.T) {
	cfg := testConfig(t)
	a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t)})
	answer, err := a.dm.Allocator(a.loop).Allocate(context.Background(), []string{"memif-003", "memif-001"})
	if err != nil {
		t.Fatal(err)
	}
	held := a.dm.ListAllocations()
	if len(held) != 1 {
		t.Fatalf("the device manager holds %v, want the one allocation", held)
	}
	info := held[0]
	switch {
	case answer.AllocationID != info.AllocationID:
		t.Errorf("answered allocation %q, the device manager holds %q", answer.AllocationID, info.AllocationID)
	case answer.Envs[dmapi.EnvMemifSocket] != info.ContainerSocket || answer.Envs[dmapi.EnvMemifSecret] != info.Secret:
		t.Errorf("answered envs %v, want the allocation's socket %s and secret", answer.Envs, info.ContainerSocket)
	case answer.Annotations[dmapi.AnnotationSocketHost] != info.HostSocket || answer.Annotations[dmapi.AnnotationSecret] != info.Secret:
		t.Errorf("answered annotations %v, want the allocation's host socket %s and secret", answer.Annotations, info.HostSocket)
	case len(answer.Mounts) != 1 || answer.Mounts[0] != (deviceplugin.Mount{HostPath: info.HostDir, ContainerPath: cfg.ContainerDir}):
		t.Errorf("answered mounts %v, want %s at %s", answer.Mounts, info.HostDir, cfg.ContainerDir)
	}
	if _, err := os.Stat(info.HostDir); err != nil {
		t.Errorf("the answered directory: %v", err)
	}
}

// TestAllocatorFailures: each failure reaches the device plugin with the
// gRPC code kubelet is to see, and leaves nothing held.
func TestAllocatorFailures(t *testing.T) {
	cases := []struct {
		name      string
		deviceIDs []string
		extra     []controllerapi.EventHandler
		closeLoop bool
		// otherLoop: the Allocator is given a loop the device manager
		// does not handle events of.
		otherLoop bool
		wantCode  codes.Code
		wantIs    error
		wantMsg   string
	}{
		{name: "unknown device", deviceIDs: []string{"gpu-0"}, wantCode: codes.InvalidArgument, wantIs: dmapi.ErrInvalidRequest},
		{name: "device twice", deviceIDs: []string{"memif-001", "memif-001"}, wantCode: codes.InvalidArgument, wantIs: dmapi.ErrInvalidRequest},
		{name: "no device", wantCode: codes.InvalidArgument, wantIs: dmapi.ErrInvalidRequest},
		{name: "a claim's device", deviceIDs: []string{"memif-dra-000"}, wantCode: codes.InvalidArgument, wantIs: dmapi.ErrInvalidRequest},
		{name: "a sibling handler fails", deviceIDs: []string{"memif-000"}, extra: []controllerapi.EventHandler{failingWiring{}},
			wantCode: codes.Internal, wantIs: errWiring},
		{name: "event loop closed", deviceIDs: []string{"memif-000"}, closeLoop: true,
			wantCode: codes.Unavailable, wantIs: controllerapi.ErrClosedEventLoop},
		{name: "not a handler of the loop", deviceIDs: []string{"memif-000"}, otherLoop: true,
			wantCode: codes.Internal, wantMsg: "the device manager is not among its handlers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.ClaimDeviceCount = 1
			a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t)}, tc.extra...)
			if tc.closeLoop {
				a.loop.Close()
			}
			var loop controllerapi.EventLoop = a.loop
			if tc.otherLoop {
				loop = startLoop(t)
			}
			_, err := a.dm.Allocator(loop).Allocate(context.Background(), tc.deviceIDs)
			if code := deviceplugin.Code(err); code != tc.wantCode || err == nil || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Allocate = %v (code %s), want %s wrapping %v, saying %q", err, code, tc.wantCode, tc.wantIs, tc.wantMsg)
			}
			if held := a.dm.ListAllocations(); len(held) != 0 {
				t.Errorf("a failed Allocate left %v", held)
			}
		})
	}
}

// TestAllocatorReleasesWhatKubeletStoppedWaitingFor: kubelet stops waiting
// while the event is on the loop; the allocation the event makes after
// that is released, directory and all.
func TestAllocatorReleasesWhatKubeletStoppedWaitingFor(t *testing.T) {
	cfg := testConfig(t)
	wiring := &heldWiring{entered: make(chan struct{}), release: make(chan struct{})}
	a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t)}, wiring)
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	go func() {
		_, err := a.dm.Allocator(a.loop).Allocate(ctx, []string{"memif-002"})
		answered <- err
	}()
	<-wiring.entered // the device manager made the allocation; the wiring holds the event
	cancel()
	if err := <-answered; deviceplugin.Code(err) != codes.Canceled {
		t.Errorf("Allocate = %v, want it cancelled with kubelet's call", err)
	}
	close(wiring.release)
	waitForNothingHeld(t, a, cfg)
}

// TestAllocatorAbandonReleases: Abandon releases allocations answered
// before, directories included.
func TestAllocatorAbandonReleases(t *testing.T) {
	cfg := testConfig(t)
	a := startAgentWith(t, cfg, manager.Options{Log: testlog.New(t)})
	allocator := a.dm.Allocator(a.loop)
	var ids []string
	for _, device := range []string{"memif-000", "memif-005"} {
		answer, err := allocator.Allocate(context.Background(), []string{device})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, answer.AllocationID)
	}
	allocator.Abandon(ids, "a later container request of the call failed")
	waitForNothingHeld(t, a, cfg)
}

// heldWiring stands in for a sibling handler that takes its time: it
// holds each AllocateDevice, after the device manager made the
// allocation, until release is closed.
type heldWiring struct {
	entered chan struct{}
	release chan struct{}
}

func (*heldWiring) String() string { return "held-wiring" }
func (*heldWiring) HandlesEvent(event controllerapi.Event) bool {
	_, allocate := event.(*dmapi.AllocateDevice)
	return allocate
}
func (*heldWiring) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}
func (w *heldWiring) Update(controllerapi.Event, controllerapi.EventOperations) (string, error) {
	w.entered <- struct{}{}
	<-w.release
	return "", nil
}
func (*heldWiring) Revert(controllerapi.Event) error { return nil }

// startLoop starts an event loop with no handler.
func startLoop(t *testing.T) *eventloop.Loop {
	t.Helper()
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Committer: fakevswitch.Committer{}})
	if err != nil {
		t.Fatal(err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	return loop
}
