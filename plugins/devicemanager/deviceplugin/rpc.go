package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// pluginOptions: no PreStartContainer (the directory is ready at Allocate)
// and no GetPreferredAllocation (every device is alike).
func pluginOptions() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{PreStartRequired: false, GetPreferredAllocationAvailable: false}
}

// GetDevicePluginOptions implements pluginapi.DevicePluginServer.
func (s *Server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return pluginOptions(), nil
}

// ListAndWatch sends the device list, then again each time the devices'
// health changes, until its context ends (kubelet left, or the gRPC server
// stopped) or the server stops. The devices are fixed for the agent's
// lifetime (device-count); they are all healthy, or all unhealthy while
// the vswitch has been unreachable for longer than its grace (Config.Health):
// a memif device is a name, and a socket directory that cannot be made
// fails that Allocate, not the device. kubelet then admits no new pod that
// asks for one, and the scheduler sees the node's allocatable count drop;
// running pods keep theirs.
func (s *Server) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	health, changed := s.health()
	for {
		if err := stream.Send(s.deviceList(health.Healthy)); err != nil {
			return fmt.Errorf("send device list to kubelet: %w", err)
		}
		sent := health.Healthy
		for health.Healthy == sent {
			select {
			case <-stream.Context().Done():
				return nil
			case <-s.stopped:
				return nil
			case <-changed:
			}
			health, changed = s.health()
		}
	}
}

// health returns the devices' health and a channel closed at its next
// change; without a source, healthy for ever.
func (s *Server) health() (dmapi.DeviceHealth, <-chan struct{}) {
	if s.cfg.Health == nil {
		return dmapi.DeviceHealth{Healthy: true}, nil
	}
	return s.cfg.Health.DeviceHealth()
}

// deviceList is every device, healthy or not.
func (s *Server) deviceList(healthy bool) *pluginapi.ListAndWatchResponse {
	health := pluginapi.Healthy
	if !healthy {
		health = pluginapi.Unhealthy
	}
	response := &pluginapi.ListAndWatchResponse{Devices: make([]*pluginapi.Device, len(s.cfg.Devices))}
	for i, id := range s.cfg.Devices {
		response.Devices[i] = &pluginapi.Device{ID: id, Health: health}
	}
	return response
}

// PreStartContainer implements pluginapi.DevicePluginServer; kubelet does
// not call it because the options say it is not required.
func (s *Server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// Allocate answers every container request through the event loop. If one
// fails, or kubelet stops waiting, the call fails and the allocations
// already made for it are reported Abandoned, all in one call, so that
// nothing is held for a container that will never get it.
func (s *Server) Allocate(ctx context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	s.forward.inUse.RLock()
	if s.forward.successor != "" {
		s.forward.inUse.RUnlock()
		return s.forwardAllocate(ctx, request)
	}
	defer s.forward.inUse.RUnlock()
	start := time.Now()
	response, err := s.allocate(ctx, request)
	if s.hooks.Allocated != nil {
		s.hooks.Allocated(time.Since(start), err)
	}
	if err != nil {
		s.log.Warnf("kubelet's Allocate failed (%s): %s", status.Code(err), status.Convert(err).Message())
	}
	return response, err
}

func (s *Server) allocate(ctx context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	if err := s.checkRequest(request); err != nil {
		return nil, err
	}
	response := &pluginapi.AllocateResponse{}
	var made []string
	for i, containerRequest := range request.GetContainerRequests() {
		event, pending, err := s.allocateContainer(ctx, containerRequest.GetDevicesIds())
		if event != nil && event.AllocationID != "" {
			made = append(made, event.AllocationID)
		}
		var containerResponse *pluginapi.ContainerAllocateResponse
		if err == nil {
			containerResponse, err = toContainerResponse(event)
		}
		if err != nil {
			err = status.Errorf(statusCode(err), "allocate %s for container request %d of %d (devices %s): %v",
				s.cfg.ResourceName, i+1, len(request.GetContainerRequests()), listIDs(containerRequest.GetDevicesIds()), err)
			s.rollBack(made, pending, err.Error())
			return nil, err
		}
		response.ContainerResponses = append(response.ContainerResponses, containerResponse)
	}
	return response, nil
}

// maxDeviceIDLength bounds a device ID from kubelet before it is in any
// message, log line or event: this plugin's IDs are a few bytes long, and a
// hostile request's megabyte-long one would otherwise be repeated in each.
const maxDeviceIDLength = 64

// checkRequest refuses, before anything is allocated, a call no kubelet
// sends and no allocation could grant. kubelet (v1.37, endpoint.allocate)
// sends one container request per call; the API allows one per container
// of a pod. Each must hold a device of its own, so a call holding more
// container requests than the plugin has devices, or naming one device in
// two of them, is refused whole: granting it would hand the same device,
// or a device taken over from the call's own earlier container, to two
// containers.
func (s *Server) checkRequest(request *pluginapi.AllocateRequest) error {
	requests := request.GetContainerRequests()
	switch {
	case len(requests) == 0:
		return status.Errorf(codes.InvalidArgument, "allocate %s: the request holds no container request", s.cfg.ResourceName)
	case len(requests) > len(s.cfg.Devices):
		return status.Errorf(codes.InvalidArgument, "allocate %s: the request holds %d container requests, more than the %d devices of this plugin; each container needs a device of its own",
			s.cfg.ResourceName, len(requests), len(s.cfg.Devices))
	}
	if err := s.checkIDLengths(requests); err != nil {
		return err
	}
	return s.checkRepeatedDevices(requests)
}

func (s *Server) checkIDLengths(requests []*pluginapi.ContainerAllocateRequest) error {
	for i, containerRequest := range requests {
		for _, id := range containerRequest.GetDevicesIds() {
			if len(id) > maxDeviceIDLength {
				return status.Errorf(codes.InvalidArgument, "allocate %s: container request %d of %d holds a device ID of %d bytes (%q...); no device of this plugin has an ID longer than %d",
					s.cfg.ResourceName, i+1, len(requests), len(id), id[:16], maxDeviceIDLength)
			}
		}
	}
	return nil
}

// checkRepeatedDevices refuses a device named in two container requests of
// one call. A device repeated within one container request is the event's
// to refuse, with the others of that request.
func (s *Server) checkRepeatedDevices(requests []*pluginapi.ContainerAllocateRequest) error {
	firstRequest := map[string]int{}
	for i, containerRequest := range requests {
		for _, id := range containerRequest.GetDevicesIds() {
			first, seen := firstRequest[id]
			switch {
			case !seen:
				firstRequest[id] = i
			case first != i:
				return status.Errorf(codes.InvalidArgument, "allocate %s: device %q is in container requests %d and %d of %d; a device serves one container, so nothing was allocated",
					s.cfg.ResourceName, id, first+1, i+1, len(requests))
			}
		}
	}
	return nil
}

// maxListedIDs bounds the device IDs an error message repeats: a hostile
// request may send thousands, and the message is logged and sent back.
const maxListedIDs = 8

func listIDs(ids []string) string {
	if len(ids) <= maxListedIDs {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v ... and %d more", ids[:maxListedIDs], len(ids)-maxListedIDs)
}

// errNotAllocated: the event loop processed the event but no handler made
// an allocation, so there is nothing to hand to the container.
var errNotAllocated = errors.New("no handler made the allocation: the device manager is not among the event loop's handlers")

// allocateContainer pushes the event of one container request and waits
// for it, and returns it once processed, failed or not. An event kubelet
// stopped waiting for is returned as pending instead: the event loop may
// still be processing it, and make its allocation later.
func (s *Server) allocateContainer(ctx context.Context, deviceIDs []string) (processed, pending *dmapi.AllocateDevice, err error) {
	// kubelet stopped waiting: push nothing more for this call.
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	event := dmapi.NewAllocateDevice(s.cfg.ResourceName, deviceIDs)
	if s.hooks.Prepare != nil {
		s.hooks.Prepare(ctx, event)
	}
	if err := s.loop.PushEvent(event); err != nil {
		return nil, nil, fmt.Errorf("queue the allocation: %w", err)
	}
	if err := event.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, event, err
		}
		return event, nil, err
	}
	return event, nil, nil
}

func toContainerResponse(event *dmapi.AllocateDevice) (*pluginapi.ContainerAllocateResponse, error) {
	if event.AllocationID == "" || len(event.Mounts) == 0 || len(event.Envs) == 0 {
		return nil, errNotAllocated
	}
	containerResponse := &pluginapi.ContainerAllocateResponse{Envs: event.Envs, Annotations: event.Annotations}
	for _, mount := range event.Mounts {
		containerResponse.Mounts = append(containerResponse.Mounts, &pluginapi.Mount{
			HostPath: mount.HostPath, ContainerPath: mount.ContainerPath, ReadOnly: mount.ReadOnly,
		})
	}
	return containerResponse, nil
}

// rollBack reports the allocations made for a failed call Abandoned, in one
// call, so that their release is one event however many there are. When
// kubelet stopped waiting for an event still in flight, it first waits,
// until Stop, for that event, so that its allocation, if made, goes with
// the others.
func (s *Server) rollBack(made []string, late *dmapi.AllocateDevice, reason string) {
	if s.hooks.Abandoned == nil {
		return
	}
	if late == nil {
		s.abandon(made, reason)
		return
	}
	s.lateMu.Lock()
	defer s.lateMu.Unlock()
	if s.lifetime.Err() != nil {
		s.abandon(made, reason)
		return
	}
	s.pendingLate.Add(1)
	go func() {
		defer s.pendingLate.Done()
		if late.Wait(s.lifetime) == nil && late.AllocationID != "" {
			made = append(made, late.AllocationID)
		}
		s.abandon(made, reason)
	}()
}

func (s *Server) abandon(allocationIDs []string, reason string) {
	if len(allocationIDs) > 0 {
		s.hooks.Abandoned(allocationIDs, reason)
	}
}

// statusCode maps an allocation failure to the gRPC code kubelet sees.
func statusCode(err error) codes.Code {
	switch {
	case errors.Is(err, dmapi.ErrInvalidRequest):
		return codes.InvalidArgument
	case errors.Is(err, dmapi.ErrDeviceInUse):
		return codes.FailedPrecondition
	case errors.Is(err, controllerapi.ErrEventQueueFull), errors.Is(err, controllerapi.ErrClosedEventLoop):
		return codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}
