package manager_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
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
	lister := &cancellingLister{}
	a := startAgent(t, cfg, lister)
	lister.waitForFirstListing(t)
	// An allocation of the device of request cancelAt makes the device
	// manager ask the pod sources before that request's event, and the
	// stand-in answers by making kubelet stop waiting.
	if _, err := allocate(a, []string{allocation.DeviceIDs(devices)[cancelAt-1]}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lister.arm(cancel)
	response, err := a.kubelet.Allocate(ctx, containerRequests(devices, devices))
	if status.Code(err) != codes.Canceled || response != nil {
		t.Fatalf("Allocate = %v, %v; want it cancelled", response, err)
	}
	if lister.fired() != 1 {
		t.Fatalf("the pod sources were asked %d times during the Allocate, want once", lister.fired())
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

// cancellingLister stands in for the pod sources: it lists no pod, and,
// once armed, answers the next question by cancelling kubelet's call and
// waiting until the call sees it.
type cancellingLister struct {
	mu       sync.Mutex
	listings int
	cancel   context.CancelFunc
	fires    int
}

func (l *cancellingLister) ListPods(ctx context.Context) (podapi.Listing, error) {
	l.mu.Lock()
	l.listings++
	cancel := l.cancel
	if cancel != nil {
		l.cancel = nil
		l.fires++
	}
	l.mu.Unlock()
	if cancel == nil {
		return podapi.Listing{Authoritative: true, RuntimeAnswered: true}, nil
	}
	cancel()
	<-ctx.Done()
	return podapi.Listing{}, ctx.Err()
}

func (l *cancellingLister) arm(cancel context.CancelFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel = cancel
}

func (l *cancellingLister) fired() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fires
}

// waitForFirstListing waits for the listing the startup resync asks for,
// so that no later one comes before reconcile-period.
func (l *cancellingLister) waitForFirstListing(t *testing.T) {
	poll.Until(t, waitLimit, "the startup listing of the pods", func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.listings == 0 {
			return errors.New("not listed yet")
		}
		return nil
	})
}
