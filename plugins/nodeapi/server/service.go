package server

import (
	"context"
	"errors"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// DefaultWatchBuffer is how many allocation changes a watcher may lag
// behind before the device manager drops it.
const DefaultWatchBuffer = 64

// Service implements memifv1.MemifAgentServer. It holds no state of its own:
// every call reads the device manager or the event history.
type Service struct {
	memifv1.UnimplementedMemifAgentServer

	devices     dmapi.DeviceManagerAPI
	history     controllerapi.EventHistory
	watchBuffer int
}

// NewService returns the API over devices and the event history of
// history. A nil history answers GetEventHistory with UNAVAILABLE; one
// without a loop yet, with no events. watchBuffer <= 0 means
// DefaultWatchBuffer.
func NewService(devices dmapi.DeviceManagerAPI, history controllerapi.EventHistory, watchBuffer int) *Service {
	if watchBuffer <= 0 {
		watchBuffer = DefaultWatchBuffer
	}
	return &Service{devices: devices, history: history, watchBuffer: watchBuffer}
}

// ListAllocations implements memifv1.MemifAgentServer.
func (s *Service) ListAllocations(_ context.Context, req *memifv1.ListAllocationsRequest) (*memifv1.ListAllocationsResponse, error) {
	infos := s.devices.ListAllocations()
	resp := &memifv1.ListAllocationsResponse{Allocations: make([]*memifv1.MemifAllocation, 0, len(infos))}
	for _, info := range infos {
		resp.Allocations = append(resp.Allocations, toAllocation(info, req.GetIncludeSecrets()))
	}
	return resp, nil
}

// GetPodMemifs implements memifv1.MemifAgentServer.
func (s *Service) GetPodMemifs(_ context.Context, req *memifv1.GetPodMemifsRequest) (*memifv1.GetPodMemifsResponse, error) {
	if err := validateNamespace(req.GetNamespace()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := validatePodName(req.GetName()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	pod := podapi.PodID{Namespace: req.GetNamespace(), Name: req.GetName()}
	infos, err := s.devices.GetPodMemifs(pod)
	if errors.Is(err, dmapi.ErrNoMemif) {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "get memifs of pod %s: %v", pod, err)
	}
	resp := &memifv1.GetPodMemifsResponse{Memifs: make([]*memifv1.MemifAllocation, 0, len(infos))}
	for _, info := range infos {
		resp.Memifs = append(resp.Memifs, toAllocation(info, req.GetIncludeSecrets()))
	}
	return resp, nil
}

// WatchAllocations implements memifv1.MemifAgentServer. The response
// header is sent as soon as the device manager has registered the watch, so
// a client that waits for it sees every later change.
func (s *Service) WatchAllocations(req *memifv1.WatchAllocationsRequest, stream grpc.ServerStreamingServer[memifv1.AllocationChange]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	changes := make(chan dmapi.AllocationChange, s.watchBuffer)
	returned := make(chan struct{})
	// WatchAllocations may register and return, or block until ctx ends;
	// either way its goroutine has finished when this call returns.
	go func() {
		defer close(returned)
		s.devices.WatchAllocations(ctx, changes)
	}()
	defer func() { cancel(); <-returned }()
	registering := returned
	for {
		select {
		case <-registering:
			registering = nil
			if err := stream.SendHeader(nil); err != nil {
				return err
			}
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case change, ok := <-changes:
			if !ok {
				return droppedWatcherError(ctx)
			}
			if err := stream.Send(&memifv1.AllocationChange{
				Kind:       toChangeKind(change.Kind),
				Allocation: toAllocation(change.Memif, req.GetIncludeSecrets()),
			}); err != nil {
				return err
			}
		}
	}
}

func droppedWatcherError(ctx context.Context) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Error(codes.ResourceExhausted,
		"allocation watch fell behind and was dropped by the device manager: list allocations again and re-watch")
}

// GetEventHistory implements memifv1.MemifAgentServer.
func (s *Service) GetEventHistory(_ context.Context, req *memifv1.GetEventHistoryRequest) (*memifv1.GetEventHistoryResponse, error) {
	if s.history == nil {
		return nil, status.Error(codes.Unavailable, "event history is not available in this agent")
	}
	records := s.history.EventHistory(controllerapi.HistoryQuery{
		AfterSeqNum: req.GetSinceSeq(),
		Last:        int(min(req.GetLast(), math.MaxInt32)),
	})
	resp := &memifv1.GetEventHistoryResponse{Events: make([]*memifv1.EventRecord, 0, len(records))}
	for _, record := range records {
		resp.Events = append(resp.Events, toEventRecord(record))
	}
	return resp, nil
}
