package kubelettest_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"

	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	stubResource = "example.com/stub"
	stubDevices  = 8
	waitLimit    = 30 * time.Second
)

// startKubeletWithStub starts the kubelet and the stub plugin and waits for
// the stub's devices to be allocatable.
func startKubeletWithStub(t *testing.T) (*kubelettest.Kubelet, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	podResourcesSocket := filepath.Join(t.TempDir(), "pod-resources.sock")
	kubelet, err := kubelettest.Start(ctx, podResourcesSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kubelet.Stop(); err != nil {
			t.Error(err)
		}
	})
	stub, err := kubelettest.StartStubPlugin(ctx, stubResource, stubDevices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stub.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := kubelet.WaitForCapacity(ctx, stubResource, stubDevices); err != nil {
		t.Fatal(err)
	}
	return kubelet, podResourcesSocket
}

func TestStubRegistersAndAllocates(t *testing.T) {
	kubelet, _ := startKubeletWithStub(t)
	tests := []struct {
		name     string
		requests []int64
		wantErr  bool
	}{
		{name: "one container, one device", requests: []int64{1}},
		{name: "two containers", requests: []int64{2, 3}},
		{name: "container without devices", requests: []int64{0, 1}},
		{name: "more than the node has", requests: []int64{stubDevices + 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := kubelettest.NewPod("stub-pod", stubResource, tt.requests...)
			_, err := kubelet.AdmitPod(t.Context(), pod)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("AdmitPod(%v) succeeded, want the kubelet to reject the pod", tt.requests)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer kubelet.RemovePod(pod.UID)
			for i, container := range pod.Spec.Containers {
				if got := kubelet.Devices(pod.UID, container.Name, stubResource); len(got) != int(tt.requests[i]) {
					t.Errorf("container %s holds devices %v, want %d", container.Name, got, tt.requests[i])
				}
			}
		})
	}
}

func TestStubComesBackAfterKubeletRestarts(t *testing.T) {
	kubelet, _ := startKubeletWithStub(t)
	pod := kubelettest.NewPod("kept", stubResource, 2)
	if _, err := kubelet.AdmitPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	want := kubelet.Devices(pod.UID, "c0", stubResource)
	for restart := 1; restart <= 3; restart++ {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		if err := kubelet.Restart(ctx); err != nil {
			cancel()
			t.Fatalf("restart %d: %v", restart, err)
		}
		err := kubelet.WaitForCapacity(ctx, stubResource, stubDevices)
		cancel()
		if err != nil {
			t.Fatalf("restart %d: %v", restart, err)
		}
		if got := kubelet.Devices(pod.UID, "c0", stubResource); !slices.Equal(got, want) {
			t.Fatalf("restart %d: pod holds %v, want %v kept from the kubelet checkpoint", restart, got, want)
		}
	}
}

func TestPodResourcesShowsAllocatedDevices(t *testing.T) {
	kubelet, socket := startKubeletWithStub(t)
	pod := kubelettest.NewPod("listed", stubResource, 3)
	if _, err := kubelet.AdmitPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	want := kubelet.Devices(pod.UID, "c0", stubResource)
	client, conn, err := podresources.GetV1Client(t.Context(), socket, 10*time.Second, 16*1024*1024)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tests := []struct {
		name  string
		query func() ([]*podresourcesv1.PodResources, error)
	}{
		{name: "List", query: func() ([]*podresourcesv1.PodResources, error) {
			resp, err := client.List(t.Context(), &podresourcesv1.ListPodResourcesRequest{})
			return resp.GetPodResources(), err
		}},
		{name: "Get", query: func() ([]*podresourcesv1.PodResources, error) {
			resp, err := client.Get(t.Context(), &podresourcesv1.GetPodResourcesRequest{PodName: pod.Name, PodNamespace: pod.Namespace})
			return []*podresourcesv1.PodResources{resp.GetPodResources()}, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := tt.query()
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) != 1 || pods[0].GetName() != pod.Name {
				t.Fatalf("pod-resources %s shows %v, want pod %s only", tt.name, pods, pod.Name)
			}
			var got []string
			for _, container := range pods[0].GetContainers() {
				for _, devices := range container.GetDevices() {
					if devices.GetResourceName() == stubResource {
						got = append(got, devices.GetDeviceIds()...)
					}
				}
			}
			if len(got) != 3 || !sameSet(got, want) {
				t.Errorf("pod-resources %s shows devices %v, want the 3 the device manager holds %v", tt.name, got, want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}
