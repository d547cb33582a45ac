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

// Service implements memifv1.MemifAgentServer. It holds no state of its own:
// every call reads the device manager or the event history.
type Service struct {
	memifv1.UnimplementedMemifAgentServer

	devices dmapi.DeviceManagerAPI
	history controllerapi.EventHistory
	peers   *peers
}

// NewService returns the API over devices and the event history of
// history, its watchers bounded by limits. A nil history answers
// GetEventHistory with UNAVAILABLE; one without a loop yet, with no
// events.
func NewService(devices dmapi.DeviceManagerAPI, history controllerapi.EventHistory, limits WatchLimits) *Service {
	return &Service{devices: devices, history: history, peers: newPeers(limits)}
}

// Watchers returns the watch streams counted against the caps.
func (s *Service) Watchers() WatchCounts { return s.peers.counts() }

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
// a client that waits for it sees every later change. A watcher over a cap
// of WatchLimits is refused, and one that falls more than the buffer
// behind is ended, both with ResourceExhausted.
//
// The messages are sent by a goroutine of their own, so that a client that
// does not read ends only its own stream: that goroutine may be blocked in
// Send, on the client's flow control, when this returns, and gRPC's end of
// the stream (which cancels its context) is what unblocks it.
func (s *Service) WatchAllocations(req *memifv1.WatchAllocationsRequest, stream grpc.ServerStreamingServer[memifv1.AllocationChange]) error {
	conn := connOf(stream.Context())
	if conn == nil {
		return status.Error(codes.Internal, "allocation watch on a connection the node API server did not make")
	}
	if err := s.peers.watch(conn); err != nil {
		return err
	}
	fellBehind := false
	defer func() { s.peers.unwatch(conn, fellBehind) }()

	ctx, cancel := context.WithCancel(stream.Context())
	changes := make(chan dmapi.AllocationChange, s.peers.limits.Buffer)
	registered := make(chan struct{})
	// WatchAllocations may register and return, or block until ctx ends;
	// either way its goroutine has finished when this call returns.
	go func() {
		defer close(registered)
		s.devices.WatchAllocations(ctx, changes)
	}()
	defer func() { cancel(); <-registered }()

	outbox := make(chan dmapi.AllocationChange, s.peers.limits.Buffer)
	sent := make(chan error, 1)
	go func() { sent <- send(ctx, stream, req.GetIncludeSecrets(), registered, outbox) }()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case err := <-sent:
			return err
		case change, ok := <-changes:
			if !ok && ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			if ok {
				select {
				case outbox <- change:
					continue
				default:
				}
			}
			fellBehind = true
			return status.Errorf(codes.ResourceExhausted,
				"allocation watch fell more than %d changes behind (watch-buffer) and was ended: list allocations again, then watch again and read the stream promptly",
				s.peers.limits.Buffer)
		}
	}
}

// send sends the response header once the watch is registered, then every
// change of outbox, until ctx ends or a send fails.
func send(ctx context.Context, stream grpc.ServerStreamingServer[memifv1.AllocationChange], includeSecrets bool, registered <-chan struct{}, outbox <-chan dmapi.AllocationChange) error {
	select {
	case <-registered:
	case <-ctx.Done():
		return nil
	}
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case change := <-outbox:
			if err := stream.Send(&memifv1.AllocationChange{
				Kind:       toChangeKind(change.Kind),
				Allocation: toAllocation(change.Memif, includeSecrets),
			}); err != nil {
				return err
			}
		}
	}
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
