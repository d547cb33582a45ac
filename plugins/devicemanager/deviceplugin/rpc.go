package deviceplugin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
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
	healthy, changed := s.health()
	for {
		if err := stream.Send(s.deviceList(healthy)); err != nil {
			return fmt.Errorf("send device list to kubelet: %w", err)
		}
		sent := healthy
		for healthy == sent {
			select {
			case <-stream.Context().Done():
				return nil
			case <-s.stopped:
				return nil
			case <-changed:
			}
			healthy, changed = s.health()
		}
	}
}

// health returns whether the devices are healthy and a channel closed at
// its next change; without a source, healthy for ever.
func (s *Server) health() (bool, <-chan struct{}) {
	if s.cfg.Health == nil {
		return true, nil
	}
	return s.cfg.Health()
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

// Allocate answers every container request through the Allocator. If one
// fails, or kubelet stops waiting, the call fails and the allocations
// already answered for it are abandoned, all in one Abandon call, so that
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
	s.observer.Answered(time.Since(start), err)
	if err != nil {
		s.log.WarnS("kubelet's Allocate failed", "code", status.Code(err).String(), "err", status.Convert(err).Message())
	}
	return response, err
}

func (s *Server) allocate(ctx context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	if err := s.checkRequest(request); err != nil {
		return nil, err
	}
	requests := request.GetContainerRequests()
	response := &pluginapi.AllocateResponse{ContainerResponses: make([]*pluginapi.ContainerAllocateResponse, 0, len(requests))}
	var made []string
	for i, containerRequest := range requests {
		answer, err := s.allocateContainer(ctx, containerRequest.GetDevicesIds())
		if err != nil {
			err = status.Errorf(Code(err), "allocate %s for container request %d of %d (devices %s): %v",
				s.cfg.ResourceName, i+1, len(requests), listIDs(containerRequest.GetDevicesIds()), err)
			if len(made) > 0 {
				s.allocator.Abandon(made, err.Error())
			}
			return nil, err
		}
		made = append(made, answer.AllocationID)
		response.ContainerResponses = append(response.ContainerResponses, toContainerResponse(answer))
	}
	return response, nil
}

// allocateContainer asks the Allocator for one container request, unless
// kubelet stopped waiting for the call already.
func (s *Server) allocateContainer(ctx context.Context, deviceIDs []string) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	return s.allocator.Allocate(ctx, deviceIDs)
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

func toContainerResponse(answer Answer) *pluginapi.ContainerAllocateResponse {
	response := &pluginapi.ContainerAllocateResponse{
		Envs: answer.Envs, Annotations: answer.Annotations,
		Mounts: make([]*pluginapi.Mount, len(answer.Mounts)),
	}
	for i, mount := range answer.Mounts {
		response.Mounts[i] = &pluginapi.Mount{HostPath: mount.HostPath, ContainerPath: mount.ContainerPath, ReadOnly: mount.ReadOnly}
	}
	return response
}
