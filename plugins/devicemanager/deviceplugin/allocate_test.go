package deviceplugin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// fakeAllocator stands in for the device manager: it answers each
// container request with an allocation named after its devices, or with
// the error fail gives for them, and records what it was asked and what
// was abandoned.
type fakeAllocator struct {
	// fail, when set, says how a request for deviceIDs fails; nil: it
	// is answered.
	fail func(ctx context.Context, deviceIDs []string) error

	mu        sync.Mutex
	asked     [][]string
	abandoned [][]string
	reasons   []string
}

func (f *fakeAllocator) Allocate(ctx context.Context, deviceIDs []string) (deviceplugin.Answer, error) {
	f.mu.Lock()
	f.asked = append(f.asked, deviceIDs)
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(ctx, deviceIDs); err != nil {
			return deviceplugin.Answer{}, err
		}
	}
	id := "alloc-" + strings.Join(deviceIDs, "+")
	return deviceplugin.Answer{
		AllocationID: id,
		Envs:         map[string]string{"MEMIF_SOCKET": "/run/memif/" + id + ".sock"},
		Annotations:  map[string]string{"contivpp.io/allocation": id},
		Mounts:       []deviceplugin.Mount{{HostPath: "/var/run/memif/" + id, ContainerPath: "/run/memif"}},
	}, nil
}

func (f *fakeAllocator) Abandon(allocationIDs []string, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abandoned = append(f.abandoned, allocationIDs)
	f.reasons = append(f.reasons, reason)
}

func (f *fakeAllocator) record() (asked, abandoned [][]string, reasons []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked), slices.Clone(f.abandoned), slices.Clone(f.reasons)
}

// failOn fails the request for device with err.
func failOn(device string, err error) func(context.Context, []string) error {
	return func(_ context.Context, ids []string) error {
		if slices.Contains(ids, device) {
			return err
		}
		return nil
	}
}

func requestOf(containers ...[]string) *pluginapi.AllocateRequest {
	request := &pluginapi.AllocateRequest{}
	for _, ids := range containers {
		request.ContainerRequests = append(request.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
	}
	return request
}

// TestAllocateAnswersEachContainer: each container request is one
// Allocate of the Allocator, in order, and its answer is the container's
// response as kubelet gets it.
func TestAllocateAnswersEachContainer(t *testing.T) {
	dir := t.TempDir()
	registry := startRegistry(t, dir)
	allocator := &fakeAllocator{}
	startServer(t, dir, allocator, nil)
	r := nextRegistration(t, registry)
	response, err := r.Client.Allocate(context.Background(), requestOf([]string{"memif-000"}, []string{"memif-002", "memif-001"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(response.ContainerResponses) != 2 {
		t.Fatalf("%d container responses, want 2", len(response.ContainerResponses))
	}
	for i, want := range []string{"alloc-memif-000", "alloc-memif-002+memif-001"} {
		got := response.ContainerResponses[i]
		mounts := got.GetMounts()
		if got.Envs["MEMIF_SOCKET"] != "/run/memif/"+want+".sock" || got.Annotations["contivpp.io/allocation"] != want ||
			len(mounts) != 1 || mounts[0].HostPath != "/var/run/memif/"+want || mounts[0].ContainerPath != "/run/memif" || mounts[0].ReadOnly {
			t.Errorf("container response %d = %v, want the answer for %s", i, got, want)
		}
	}
	asked, abandoned, _ := allocator.record()
	if want := [][]string{{"memif-000"}, {"memif-002", "memif-001"}}; !slices.EqualFunc(asked, want, slices.Equal) {
		t.Errorf("the Allocator was asked for %v, want %v", asked, want)
	}
	if len(abandoned) != 0 {
		t.Errorf("abandoned %v after a call that succeeded", abandoned)
	}
}

// TestAllocateFailures: a call no allocation can grant is refused before
// the Allocator is asked; an Allocator's error reaches kubelet with the
// code it was given, and the allocations already answered for the call
// are abandoned in one Abandon call.
func TestAllocateFailures(t *testing.T) {
	cases := []struct {
		name          string
		fail          func(context.Context, []string) error
		request       *pluginapi.AllocateRequest
		wantCode      codes.Code
		wantMsg       string
		wantAsked     int
		wantAbandoned [][]string
	}{
		{name: "no container request", request: requestOf(),
			wantCode: codes.InvalidArgument, wantMsg: "holds no container request"},
		{name: "more container requests than devices",
			request:  requestOf([]string{"memif-000"}, []string{"memif-001"}, []string{"memif-002"}, []string{"memif-003"}, []string{"memif-004"}),
			wantCode: codes.InvalidArgument, wantMsg: "holds 5 container requests, more than the 4 devices of this plugin"},
		{name: "one device in two container requests", request: requestOf([]string{"memif-002"}, []string{"memif-001", "memif-002"}),
			wantCode: codes.InvalidArgument, wantMsg: `device "memif-002" is in container requests 1 and 2 of 2`},
		{name: "a device ID too long", request: requestOf([]string{strings.Repeat("m", 65)}),
			wantCode: codes.InvalidArgument, wantMsg: "holds a device ID of 65 bytes"},
		{name: "refused with a code", fail: failOn("memif-000", deviceplugin.WithCode(codes.FailedPrecondition, errors.New("held by another"))),
			request: requestOf([]string{"memif-000"}), wantCode: codes.FailedPrecondition, wantMsg: "held by another", wantAsked: 1},
		{name: "unavailable", fail: failOn("memif-000", deviceplugin.WithCode(codes.Unavailable, fmt.Errorf("queue the allocation: %w", errors.New("queue full")))),
			request: requestOf([]string{"memif-000"}), wantCode: codes.Unavailable, wantMsg: "queue the allocation: queue full", wantAsked: 1},
		{name: "failed without a code", fail: failOn("memif-000", errors.New("mkdir: no space left")),
			request: requestOf([]string{"memif-000"}), wantCode: codes.Internal, wantMsg: "mkdir: no space left", wantAsked: 1},
		{name: "the third container fails", fail: failOn("memif-002", deviceplugin.WithCode(codes.InvalidArgument, errors.New("unknown device"))),
			request:  requestOf([]string{"memif-000"}, []string{"memif-001", "memif-003"}, []string{"memif-002"}),
			wantCode: codes.InvalidArgument, wantMsg: "container request 3 of 3 (devices [memif-002]): unknown device", wantAsked: 3,
			wantAbandoned: [][]string{{"alloc-memif-000", "alloc-memif-001+memif-003"}}},
		{name: "kubelet's deadline passes", fail: func(ctx context.Context, ids []string) error {
			if ids[0] != "memif-001" {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		}, request: requestOf([]string{"memif-000"}, []string{"memif-001"}, []string{"memif-002"}),
			wantCode: codes.DeadlineExceeded, wantAsked: 2,
			wantAbandoned: [][]string{{"alloc-memif-000"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			registry := startRegistry(t, dir)
			allocator := &fakeAllocator{fail: tc.fail}
			startServer(t, dir, allocator, nil)
			r := nextRegistration(t, registry)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			response, err := r.Client.Allocate(ctx, tc.request)
			if status.Code(err) != tc.wantCode || response != nil {
				t.Fatalf("Allocate = %v, %v; want code %s", response, err, tc.wantCode)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("Allocate message = %q, want %q", msg, tc.wantMsg)
			}
			// kubelet's side returns at its deadline, maybe before the
			// server has abandoned what the call got.
			poll.Until(t, waitLimit, "the allocations of the failed call abandoned", func() error {
				if _, abandoned, _ := allocator.record(); !slices.EqualFunc(abandoned, tc.wantAbandoned, slices.Equal) {
					return fmt.Errorf("abandoned %v, want %v", abandoned, tc.wantAbandoned)
				}
				return nil
			})
			asked, _, reasons := allocator.record()
			if len(asked) != tc.wantAsked {
				t.Errorf("the Allocator was asked %d times (%v), want %d", len(asked), asked, tc.wantAsked)
			}
			for _, reason := range reasons {
				if !strings.Contains(reason, "for container request") {
					t.Errorf("abandoned because %q, want the call's error", reason)
				}
			}
		})
	}
}

// TestAnsweredObservesEachCall: the Observer hears every answered call
// with its outcome.
func TestAnsweredObservesEachCall(t *testing.T) {
	dir := t.TempDir()
	registry := startRegistry(t, dir)
	observer := &answerRecorder{}
	startServer(t, dir, &fakeAllocator{fail: failOn("memif-001", errors.New("refused"))}, observer)
	r := nextRegistration(t, registry)
	for _, device := range []string{"memif-000", "memif-001"} {
		_, _ = r.Client.Allocate(context.Background(), requestOf([]string{device})) // the outcome is what the observer heard
	}
	if got := observer.outcomes(); !slices.Equal(got, []codes.Code{codes.OK, codes.Internal}) {
		t.Errorf("the observer heard %v, want [OK Internal]", got)
	}
}

type answerRecorder struct {
	mu    sync.Mutex
	codes []codes.Code
}

func (*answerRecorder) Registered(bool)          {}
func (*answerRecorder) RegistrationFailed(error) {}
func (a *answerRecorder) Answered(_ time.Duration, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.codes = append(a.codes, status.Code(err))
}

func (a *answerRecorder) outcomes() []codes.Code {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.codes)
}
