// Package fakepodresources stands in for kubelet's pod-resources API
// (podresources/v1 List and Get) where kubelet's own server cannot run: it
// needs kubelet's device manager, which serves at a fixed path (the
// test/kubelet suites run the real one, kubelettest). It answers from a
// list the test changes, an unknown pod the way kubelet v1.37 does, and can
// fail every call as a restarting kubelet, or list each container's devices
// in another order at every answer, as kubelet v1.37 may, but surely.
//
// The package owns its gRPC server and socket only.
package fakepodresources

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// ErrRestarting is what every call answers while the server fails.
var ErrRestarting = status.Error(codes.Unavailable, "kubelet is restarting")

// Server is the fake pod-resources API. Create it with Serve.
type Server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	mu      sync.Mutex
	pods    []*podresourcesv1.PodResources
	failing bool
	// permute: each answer lists the devices rotated by answers.
	permute bool
	answers int
}

// Serve serves an empty pod list on socket until the test ends.
func Serve(tb testing.TB, socket string) *Server {
	tb.Helper()
	listener, err := net.Listen("unix", socket)
	if err != nil {
		tb.Fatalf("fake pod-resources: listen on %s: %v", socket, err)
	}
	s := &Server{}
	grpcServer := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(grpcServer, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = grpcServer.Serve(listener)
	}()
	tb.Cleanup(func() {
		grpcServer.Stop()
		<-done
	})
	return s
}

// Set replaces the pods kubelet lists.
func (s *Server) Set(pods ...*podresourcesv1.PodResources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

// Fail makes every call fail with ErrRestarting, or answer again.
func (s *Server) Fail(failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = failing
}

// Permute makes every later answer (List or Get) list each container's
// devices one ID per entry, as kubelet v1.37 does, rotated by one more place
// than the answer before: a container holding two devices or more is listed
// in another order than at the previous answer, and in as many orders as it
// has devices over that many answers. False lists them as Set gave them.
func (s *Server) Permute(permute bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permute = permute
}

// answer returns pod as this answer lists it; s.mu is held.
func (s *Server) answer(pod *podresourcesv1.PodResources) *podresourcesv1.PodResources {
	if !s.permute {
		return pod
	}
	listed := proto.CloneOf(pod)
	for _, container := range listed.Containers {
		var entries []*podresourcesv1.ContainerDevices
		for _, devices := range container.Devices {
			for _, id := range devices.DeviceIds {
				entries = append(entries, &podresourcesv1.ContainerDevices{ResourceName: devices.ResourceName, DeviceIds: []string{id}, Topology: devices.Topology})
			}
		}
		if len(entries) > 0 {
			shift := s.answers % len(entries)
			container.Devices = append(entries[shift:], entries[:shift]...)
		}
	}
	return listed
}

// List implements podresourcesv1.PodResourcesListerServer.
func (s *Server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return nil, ErrRestarting
	}
	defer func() { s.answers++ }()
	pods := make([]*podresourcesv1.PodResources, 0, len(s.pods))
	for _, pod := range s.pods {
		pods = append(pods, s.answer(pod))
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: pods}, nil
}

// Get implements podresourcesv1.PodResourcesListerServer.
func (s *Server) Get(_ context.Context, request *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return nil, ErrRestarting
	}
	defer func() { s.answers++ }()
	for _, pod := range s.pods {
		if pod.Name == request.PodName && pod.Namespace == request.PodNamespace {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: s.answer(pod)}, nil
		}
	}
	return nil, fmt.Errorf("pod %s in namespace %s not found", request.PodName, request.PodNamespace)
}
