package kubelettest

import (
	"context"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	apisgrpc "k8s.io/kubernetes/pkg/kubelet/apis/grpc"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
)

// podResourcesServer is the kubelet's pod-resources gRPC service, wired as
// the kubelet wires it (server.ListenAndServePodResources): rate limited,
// v1alpha1 and v1, pods from the pod list, devices from the device manager.
type podResourcesServer struct {
	server *grpc.Server
	served chan struct{}
}

func servePodResources(ctx context.Context, socket string, k *Kubelet) (*podResourcesServer, error) {
	providers := podresources.PodResourcesProviders{
		Pods:             &k.pods,
		Devices:          devicesProvider{k},
		Cpus:             noCPUManager{},
		Memory:           noMemoryManager{},
		DynamicResources: noDRAManager{},
	}
	server := grpc.NewServer(apisgrpc.WithRateLimiter(ctx, "podresources", podresources.DefaultQPS, podresources.DefaultBurstTokens))
	podresourcesv1alpha1.RegisterPodResourcesListerServer(server, podresources.NewV1alpha1PodResourcesServer(providers))
	podresourcesv1.RegisterPodResourcesListerServer(server, podresources.NewV1PodResourcesServer(ctx, providers))

	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("kubelettest: remove stale pod-resources socket %s: %w", socket, err)
	}
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("kubelettest: listen for pod-resources at %s: %w", socket, err)
	}
	s := &podResourcesServer{server: server, served: make(chan struct{})}
	go func() {
		defer close(s.served)
		_ = server.Serve(listener)
	}()
	return s, nil
}

// stop closes the listener and every connection; Serve has returned when
// stop does.
func (s *podResourcesServer) stop() {
	s.server.Stop()
	<-s.served
}

// devicesProvider is what the kubelet's container manager gives the
// pod-resources server: the current device manager's devices, converted as
// the container manager converts them.
type devicesProvider struct{ k *Kubelet }

func (p devicesProvider) UpdateAllocatedDevices(logger klog.Logger) {
	p.k.currentManager().UpdateAllocatedDevices(logger)
}

func (p devicesProvider) GetDevices(podUID, containerName string) []*podresourcesv1.ContainerDevices {
	return containerDevices(p.k.currentManager().GetDevices(podUID, containerName))
}

func (p devicesProvider) GetAllocatableDevices(logger klog.Logger) []*podresourcesv1.ContainerDevices {
	return containerDevices(p.k.currentManager().GetAllocatableDevices(logger))
}

// containerDevices follows cm.containerDevicesFromResourceDeviceInstances:
// one entry per device, per NUMA node when the plugin reports topology.
func containerDevices(devices devicemanager.ResourceDeviceInstances) []*podresourcesv1.ContainerDevices {
	var result []*podresourcesv1.ContainerDevices
	for resourceName, resourceDevices := range devices {
		for id, device := range resourceDevices {
			nodes := device.GetTopology().GetNodes()
			if len(nodes) == 0 {
				result = append(result, &podresourcesv1.ContainerDevices{ResourceName: resourceName, DeviceIds: []string{id}})
				continue
			}
			for _, node := range nodes {
				result = append(result, &podresourcesv1.ContainerDevices{
					ResourceName: resourceName,
					DeviceIds:    []string{id},
					Topology:     &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: node.GetID()}}},
				})
			}
		}
	}
	return result
}

// noCPUManager, noMemoryManager and noDRAManager stand for kubelet managers
// these tests do not run: they assign nothing.
type (
	noCPUManager    struct{}
	noMemoryManager struct{}
	noDRAManager    struct{}
)

func (noCPUManager) GetCPUs(*v1.Pod, *v1.Container) []int64 { return nil }
func (noCPUManager) GetPodCPUs(string) []int64              { return nil }
func (noCPUManager) GetAllocatableCPUs() []int64            { return nil }

func (noMemoryManager) GetMemory(klog.Logger, *v1.Pod, *v1.Container) []*podresourcesv1.ContainerMemory {
	return nil
}
func (noMemoryManager) GetPodMemory(klog.Logger, string) []*podresourcesv1.ContainerMemory {
	return nil
}
func (noMemoryManager) GetAllocatableMemory(klog.Logger) []*podresourcesv1.ContainerMemory {
	return nil
}

func (noDRAManager) GetDynamicResources(klog.Logger, *v1.Pod, *v1.Container) []*podresourcesv1.DynamicResource {
	return nil
}
