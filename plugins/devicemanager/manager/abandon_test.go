package manager_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// maxStatusMessage bounds what a refusal may say: kubelet logs it and puts
// it in the pod's events.
const maxStatusMessage = 1024

// containerRequests makes count container requests of one device each,
// cycling through the first devices devices.
func containerRequests(count, devices int) *pluginapi.AllocateRequest {
	ids := allocation.DeviceIDs(devices)
	request := &pluginapi.AllocateRequest{ContainerRequests: make([]*pluginapi.ContainerAllocateRequest, count)}
	for i := range request.ContainerRequests {
		request.ContainerRequests[i] = &pluginapi.ContainerAllocateRequest{DevicesIds: []string{ids[i%devices]}}
	}
	return request
}

// TestBadAllocateLeavesNothing: an Allocate no kubelet sends is refused
// before anything is allocated; before, the one of 100k container requests
// allocated until its deadline and its rollback, one event per
// allocation, overflowed the queue and left hundreds of allocations and
// directories behind, and the one naming a device twice was granted with
// the first container's directory already removed. The deadline is
// kubelet's: long enough for 100k requests to be sent on a loaded machine
// under -race (2 s was not, at a load of 28), and the refusal comes
// before it.
func TestBadAllocateLeavesNothing(t *testing.T) {
	cases := []struct {
		name     string
		request  *pluginapi.AllocateRequest
		deadline time.Duration
		wantMsg  string
	}{
		{"100k requests, deadline", containerRequests(100_000, 1000), 15 * time.Second,
			"holds 100000 container requests, more than the 1000 devices"},
		{"device twice", &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
			{DevicesIds: []string{"memif-000"}}, {DevicesIds: []string{"memif-001"}}, {DevicesIds: []string{"memif-002", "memif-001"}},
		}}, waitLimit, `device "memif-001" is in container requests 2 and 3 of 3`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DeviceCount = 1000
			a := startAgent(t, cfg, nil)
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			response, err := a.kubelet.Allocate(ctx, tc.request)
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.InvalidArgument || response != nil || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("Allocate = %v, %s: %.2000s; want InvalidArgument with %q", response, status.Code(err), msg, tc.wantMsg)
			}
			if len(msg) > maxStatusMessage {
				t.Errorf("the refusal says %d bytes, want at most %d", len(msg), maxStatusMessage)
			}
			waitForNothingHeld(t, a, cfg)
		})
	}
}

// TestCancelledAllocateRolledBackInOneEvent: kubelet stops waiting in the
// middle of an Allocate of more container requests than the event queue
// holds. Every allocation made for it, the one in flight included, is
// released; before, each was released by an event of its own, and those
// that did not fit in the queue stayed.
func TestCancelledAllocateRolledBackInOneEvent(t *testing.T) {
	const devices, cancelAt = 300, 250
	cfg := testConfig(t)
	cfg.DeviceCount = devices
	kubelet := &cancellingKubelet{device: allocation.DeviceIDs(devices)[cancelAt-1]}
	a := startAgent(t, cfg, nil, kubelet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubelet.arm(cancel)
	response, err := a.kubelet.Allocate(ctx, containerRequests(devices, devices))
	if status.Code(err) != codes.Canceled || response != nil {
		t.Fatalf("Allocate = %v, %v; want it cancelled", response, err)
	}
	if kubelet.fired() != 1 {
		t.Fatalf("kubelet's call was cancelled %d times, want once", kubelet.fired())
	}
	waitForNothingHeld(t, a, cfg)
}

// waitForNothingHeld waits until the device manager holds no allocation
// and the socket root no directory; it fails the test if that does not
// come within waitLimit (unbound allocations are otherwise collected only
// after unbound-grace-period).
func waitForNothingHeld(t *testing.T, a *agent, cfg config.Config) {
	t.Helper()
	poll.Until(t, waitLimit, "no allocation and no directory left", func() error {
		entries, err := os.ReadDir(cfg.SocketRoot)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if held := a.dm.ListAllocations(); len(held) > 0 || len(entries) > 0 {
			return fmt.Errorf("%d allocations and %d directories left", len(held), len(entries))
		}
		return nil
	})
}

// cancellingKubelet is an event handler after the device manager that
// stands in for kubelet giving up: once armed, it cancels kubelet's call
// while the AllocateDevice of device is in flight.
type cancellingKubelet struct {
	device string

	mu     sync.Mutex
	cancel context.CancelFunc
	fires  int
}

func (k *cancellingKubelet) String() string { return "cancelling-kubelet" }

func (k *cancellingKubelet) HandlesEvent(event controllerapi.Event) bool {
	_, ok := event.(*dmapi.AllocateDevice)
	return ok
}

func (k *cancellingKubelet) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}

func (k *cancellingKubelet) Update(event controllerapi.Event, _ controllerapi.EventOperations) (string, error) {
	if !slices.Contains(event.(*dmapi.AllocateDevice).DeviceIDs, k.device) {
		return "", nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil {
		k.cancel()
		k.cancel = nil
		k.fires++
	}
	return "", nil
}

func (k *cancellingKubelet) Revert(controllerapi.Event) error { return nil }

func (k *cancellingKubelet) arm(cancel context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel = cancel
}

func (k *cancellingKubelet) fired() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fires
}
