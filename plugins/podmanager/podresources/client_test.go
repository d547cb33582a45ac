package podresources_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

const memif = "contivpp.io/memif"

// fakeKubeletPodResources serves kubelet's pod-resources gRPC API from a
// fixed list, answering unknown pods the way kubelet v1.37 does. The real
// kubelet server is driven in the test/kubelet module.
type fakeKubeletPodResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (f *fakeKubeletPodResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: f.pods}, nil
}

func (f *fakeKubeletPodResources) Get(_ context.Context, request *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	for _, pod := range f.pods {
		if pod.Name == request.PodName && pod.Namespace == request.PodNamespace {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: pod}, nil
		}
	}
	return nil, fmt.Errorf("pod %s in namespace %s not found", request.PodName, request.PodNamespace)
}

// fakeKubeletWithoutGet is an older kubelet that offers List only.
type fakeKubeletWithoutGet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (f *fakeKubeletWithoutGet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: f.pods}, nil
}

// fakeKubeletGetDisabled is a kubelet 1.27 to 1.33 without the
// KubeletPodResourcesGet gate: Get answers a plain error.
type fakeKubeletGetDisabled struct {
	fakeKubeletWithoutGet
}

func (f *fakeKubeletGetDisabled) Get(context.Context, *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	return nil, errors.New("PodResources API Get method disabled")
}

// kubeletPods lists a container's devices out of order, one per entry, as
// kubelet v1.37 does: the client must return them sorted.
func kubeletPods() []*podresourcesv1.PodResources {
	return []*podresourcesv1.PodResources{
		{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{
			{Name: "sidecar"},
			{Name: "app", Devices: []*podresourcesv1.ContainerDevices{
				{ResourceName: memif, DeviceIds: []string{"m2"}},
				{ResourceName: memif, DeviceIds: []string{"m1"}},
				{ResourceName: "example.com/gpu", DeviceIds: []string{"g0"}},
			}},
		}},
		{Name: "dns", Namespace: "kube-system"},
	}
}

var webState = podapi.PodState{
	Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}},
	Containers: []podapi.PodContainer{
		{Name: "app", DeviceIDs: map[string][]string{memif: {"m1", "m2"}, "example.com/gpu": {"g0"}}},
		{Name: "sidecar"},
	},
}

// serve runs a pod-resources server on socket until the test ends or stop is
// called.
func serve(t *testing.T, socket string, server podresourcesv1.PodResourcesListerServer) (stop func()) {
	t.Helper()
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("listen on %s: %v", socket, err)
	}
	grpcServer := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(grpcServer, server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = grpcServer.Serve(listener)
	}()
	stop = func() {
		grpcServer.Stop()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func newClient(t *testing.T, socket string) *podresources.Client {
	t.Helper()
	client, err := podresources.New(socket, 5*time.Second)
	if err != nil {
		t.Fatalf("New(%s): %v", socket, err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

func TestClientAnswers(t *testing.T) {
	servers := []struct {
		name   string
		server podresourcesv1.PodResourcesListerServer
	}{
		{"kubelet with Get", &fakeKubeletPodResources{pods: kubeletPods()}},
		{"kubelet with List only", &fakeKubeletWithoutGet{pods: kubeletPods()}},
		{"kubelet with Get disabled", &fakeKubeletGetDisabled{fakeKubeletWithoutGet{pods: kubeletPods()}}},
	}
	for _, server := range servers {
		t.Run(server.name, func(t *testing.T) {
			socket := filepath.Join(t.TempDir(), "kubelet.sock")
			serve(t, socket, server.server)
			client := newClient(t, socket)
			ctx := context.Background()

			pods, err := client.ListPods(ctx)
			if err != nil {
				t.Fatalf("ListPods: %v", err)
			}
			wantPods := []podapi.PodState{webState, {Pod: podapi.Pod{ID: podapi.PodID{Namespace: "kube-system", Name: "dns"}}}}
			if !reflect.DeepEqual(pods, wantPods) {
				t.Errorf("ListPods\n got %+v\nwant %+v", pods, wantPods)
			}
			for attempt := range 2 {
				got, err := client.GetPod(ctx, webState.Pod.ID)
				if err != nil || !reflect.DeepEqual(got, webState) {
					t.Errorf("GetPod(web) attempt %d = %+v, %v; want %+v", attempt, got, err, webState)
				}
			}
			missing := podapi.PodID{Namespace: "default", Name: "missing"}
			if _, err := client.GetPod(ctx, missing); !errors.Is(err, podresources.ErrPodNotFound) {
				t.Errorf("GetPod(missing) error = %v, want ErrPodNotFound", err)
			}
		})
	}
}

func TestClientWithoutKubeletFailsClearly(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	client, err := podresources.New(socket, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer client.Close()
	_, err = client.ListPods(context.Background())
	if err == nil {
		t.Fatal("ListPods without kubelet succeeded")
	}
	if errors.Is(err, podresources.ErrPodNotFound) {
		t.Errorf("an unreachable kubelet was reported as an unknown pod: %v", err)
	}
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Errorf("ListPods error code = %s (%v), want Unavailable or DeadlineExceeded", code, err)
	}
}

// TestClientReconnectsAfterKubeletRestart replaces the server behind the
// socket the way a kubelet restart does; the same client must reach the new
// one without being recreated.
func TestClientReconnectsAfterKubeletRestart(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	stop := serve(t, socket, &fakeKubeletPodResources{pods: kubeletPods()})
	client := newClient(t, socket)
	if _, err := client.ListPods(context.Background()); err != nil {
		t.Fatalf("ListPods before restart: %v", err)
	}

	stop()
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove socket: %v", err)
	}
	restarted := kubeletPods()[1:]
	serve(t, socket, &fakeKubeletPodResources{pods: restarted})

	var pods []podapi.PodState
	poll.Until(t, 30*time.Second, "the client reaching the restarted kubelet", func() (err error) {
		pods, err = client.ListPods(context.Background())
		return err
	})
	if len(pods) != 1 || pods[0].Pod.ID.Name != "dns" {
		t.Errorf("ListPods after restart = %+v, want the restarted kubelet's only pod", pods)
	}
}

// fakeRateLimitedKubelet refuses the first calls the way kubelet's
// pod-resources rate limiter does, then answers.
type fakeRateLimitedKubelet struct {
	fakeKubeletPodResources
	mu      sync.Mutex
	refusal int
}

func (f *fakeRateLimitedKubelet) refuse() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refusal == 0 {
		return false
	}
	f.refusal--
	return true
}

func (f *fakeRateLimitedKubelet) List(ctx context.Context, request *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	if f.refuse() {
		return nil, status.Error(codes.ResourceExhausted, "rejected by rate limit")
	}
	return f.fakeKubeletPodResources.List(ctx, request)
}

func (f *fakeRateLimitedKubelet) Get(ctx context.Context, request *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	if f.refuse() {
		return nil, status.Error(codes.ResourceExhausted, "rejected by rate limit")
	}
	return f.fakeKubeletPodResources.Get(ctx, request)
}

func TestClientWaitsOutKubeletRateLimit(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	kubelet := &fakeRateLimitedKubelet{fakeKubeletPodResources: fakeKubeletPodResources{pods: kubeletPods()}, refusal: 3}
	serve(t, socket, kubelet)
	client := newClient(t, socket)
	t.Run("List", func(t *testing.T) {
		if pods, err := client.ListPods(context.Background()); err != nil || len(pods) != 2 {
			t.Errorf("ListPods = %d pods, %v; want 2 after the refusals", len(pods), err)
		}
	})
	kubelet.mu.Lock()
	kubelet.refusal = 3
	kubelet.mu.Unlock()
	t.Run("Get", func(t *testing.T) {
		if _, err := client.GetPod(context.Background(), webState.Pod.ID); err != nil {
			t.Errorf("GetPod after the refusals: %v", err)
		}
	})
}

// TestListingsOfAPodAreEqualInAnyDeviceOrder: kubelet lists each container's
// devices in another order at every answer (the fake permutes them on
// purpose: six answers show the two- and three-device containers in every
// rotation); every listing and Get of an unchanged pod is the same.
func TestListingsOfAPodAreEqualInAnyDeviceOrder(t *testing.T) {
	const answers = 6
	pod := func(name string, devices ...*podresourcesv1.ContainerDevices) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Name: name, Namespace: "default", Containers: []*podresourcesv1.ContainerResources{{Name: "app", Devices: devices}}}
	}
	state := func(name string, deviceIDs map[string][]string) podapi.PodState {
		return podapi.PodState{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}}, Containers: []podapi.PodContainer{{Name: "app", DeviceIDs: deviceIDs}}}
	}
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	kubelet := fakepodresources.Serve(t, socket)
	kubelet.Set(
		pod("three-memifs", &podresourcesv1.ContainerDevices{ResourceName: memif, DeviceIds: []string{"m3", "m4", "m5"}}),
		pod("two-memifs", &podresourcesv1.ContainerDevices{ResourceName: memif, DeviceIds: []string{"m1", "m2"}}),
		pod("memifs-and-gpus",
			&podresourcesv1.ContainerDevices{ResourceName: memif, DeviceIds: []string{"m6", "m7"}},
			&podresourcesv1.ContainerDevices{ResourceName: "example.com/gpu", DeviceIds: []string{"g0", "g1"}}),
	)
	kubelet.Permute(true)
	want := []podapi.PodState{
		state("memifs-and-gpus", map[string][]string{memif: {"m6", "m7"}, "example.com/gpu": {"g0", "g1"}}),
		state("three-memifs", map[string][]string{memif: {"m3", "m4", "m5"}}),
		state("two-memifs", map[string][]string{memif: {"m1", "m2"}}),
	}
	client := newClient(t, socket)
	ctx := context.Background()
	t.Run("List", func(t *testing.T) {
		for answer := range answers {
			if pods, err := client.ListPods(ctx); err != nil || !reflect.DeepEqual(pods, want) {
				t.Errorf("ListPods, answer %d = %+v, %v\nwant %+v", answer, pods, err, want)
			}
		}
	})
	t.Run("Get", func(t *testing.T) {
		for _, wantPod := range want {
			for answer := range answers {
				if got, err := client.GetPod(ctx, wantPod.Pod.ID); err != nil || !reflect.DeepEqual(got, wantPod) {
					t.Errorf("GetPod(%s), answer %d = %+v, %v; want %+v", wantPod.Pod.ID.Name, answer, got, err, wantPod)
				}
			}
		}
	})
}
