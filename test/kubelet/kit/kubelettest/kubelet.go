package kubelettest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

const (
	// PluginDir is the kubelet's device plugin directory: the registration
	// socket, the plugins' sockets and the kubelet's device checkpoint.
	PluginDir = pluginapi.DevicePluginPath
	// RegistrationSocket is where the device manager serves registration.
	RegistrationSocket = pluginapi.KubeletSocket
	// capacityPollInterval is how often WaitForCapacity looks: the device
	// manager has no capacity notification for a caller outside the kubelet.
	capacityPollInterval = 100 * time.Microsecond
)

// Kubelet is the kubelet's device manager and pod-resources server, run the
// way the kubelet runs them. Its methods are safe for concurrent use.
type Kubelet struct {
	logger             klog.Logger
	pods               PodList
	podResourcesSocket string

	// admission serializes what the kubelet's sync loop serializes: pod
	// admission (Allocate) and container start (GetDeviceRunContainerOptions).
	// ManagerImpl.Allocate is not safe for concurrent use.
	admission sync.Mutex

	mu           sync.RWMutex // guards the fields below, replaced by Restart
	manager      *devicemanager.ManagerImpl
	podResources *podResourcesServer
}

// Start starts the device manager at RegistrationSocket and the
// pod-resources server at podResourcesSocket. Stop it with Stop.
func Start(ctx context.Context, podResourcesSocket string) (*Kubelet, error) {
	k := &Kubelet{logger: klog.FromContext(ctx), podResourcesSocket: podResourcesSocket}
	if err := k.start(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Kubelet) start(ctx context.Context) error {
	manager, err := devicemanager.NewManagerImpl(k.logger, nil, topologymanager.NewFakeManager(k.logger))
	if err != nil {
		return fmt.Errorf("kubelettest: create the kubelet device manager: %w", err)
	}
	err = manager.Start(k.logger, k.pods.GetActivePods, sourcesAlwaysReady{},
		containermap.NewContainerMap(), sets.New[string]())
	if err != nil {
		return fmt.Errorf("kubelettest: start the kubelet device manager at %s: %w", RegistrationSocket, err)
	}
	podResources, err := servePodResources(ctx, k.podResourcesSocket, k)
	if err != nil {
		_ = manager.Stop(k.logger)
		return err
	}
	k.mu.Lock()
	k.manager, k.podResources = manager, podResources
	k.mu.Unlock()
	return nil
}

// Stop stops the device manager and the pod-resources server, as a kubelet
// that goes down does. It leaves the plugin directory as it is.
func (k *Kubelet) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.podResources.stop()
	if err := k.manager.Stop(k.logger); err != nil {
		return fmt.Errorf("kubelettest: stop the kubelet device manager: %w", err)
	}
	return nil
}

// Restart is a kubelet restart: stop, delete every socket in PluginDir (the
// kubelet's checkpoint stays), start a new device manager and pod-resources
// server. Plugins must notice and register again by themselves. Pods stay
// active, as they do across a real kubelet restart.
func (k *Kubelet) Restart(ctx context.Context) error {
	k.admission.Lock()
	defer k.admission.Unlock()
	if err := k.Stop(); err != nil {
		return err
	}
	if err := removeSockets(PluginDir); err != nil {
		return err
	}
	return k.start(ctx)
}

func removeSockets(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("kubelettest: list the plugin directory %s: %w", dir, err)
	}
	for _, entry := range entries {
		if entry.Type()&fs.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, entry.Name())); err != nil {
			return fmt.Errorf("kubelettest: remove socket %s: %w", entry.Name(), err)
		}
	}
	return nil
}

func (k *Kubelet) currentManager() *devicemanager.ManagerImpl {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.manager
}

// AdmitPod admits pod as the kubelet does and starts its containers as the
// runtime does: Allocate for every container, then
// GetDeviceRunContainerOptions. It returns what the runtime would get, by
// container name. A rejected pod is no longer active.
func (k *Kubelet) AdmitPod(ctx context.Context, pod *v1.Pod) (map[string]*devicemanager.DeviceRunContainerOptions, error) {
	if err := k.AllocatePod(ctx, pod); err != nil {
		return nil, err
	}
	return k.ContainerOptions(ctx, pod)
}

// AllocatePod makes pod active and calls the device manager's Allocate for
// each of its containers, init containers first. On error the pod is
// rejected: it is no longer active and the error says which container failed.
func (k *Kubelet) AllocatePod(ctx context.Context, pod *v1.Pod) error {
	k.admission.Lock()
	defer k.admission.Unlock()
	manager := k.currentManager()
	k.pods.Add(pod)
	for _, container := range allContainers(pod) {
		if err := manager.Allocate(ctx, pod, container, lifecycle.AddOperation); err != nil {
			k.pods.Remove(pod.UID)
			return fmt.Errorf("kubelet rejected pod %s/%s: allocate devices for container %q: %w",
				pod.Namespace, pod.Name, container.Name, err)
		}
	}
	return nil
}

// ContainerOptions returns what the container runtime gets from the device
// manager for each container of pod, by container name.
func (k *Kubelet) ContainerOptions(ctx context.Context, pod *v1.Pod) (map[string]*devicemanager.DeviceRunContainerOptions, error) {
	k.admission.Lock()
	defer k.admission.Unlock()
	manager := k.currentManager()
	options := map[string]*devicemanager.DeviceRunContainerOptions{}
	for _, container := range allContainers(pod) {
		opts, err := manager.GetDeviceRunContainerOptions(ctx, pod, container)
		if err != nil {
			return nil, fmt.Errorf("kubelet cannot start container %q of pod %s/%s: %w",
				container.Name, pod.Namespace, pod.Name, err)
		}
		options[container.Name] = opts
	}
	return options, nil
}

func allContainers(pod *v1.Pod) []*v1.Container {
	var containers []*v1.Container
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	return containers
}

// RemovePod makes the pod inactive and lets the device manager free its
// devices, as it does when a pod terminates.
func (k *Kubelet) RemovePod(uid types.UID) {
	k.admission.Lock()
	defer k.admission.Unlock()
	k.pods.Remove(uid)
	k.currentManager().UpdateAllocatedDevices(k.logger)
}

// Devices returns the device IDs of resourceName the device manager holds
// for a container, sorted.
func (k *Kubelet) Devices(uid types.UID, container, resourceName string) []string {
	return sets.List(sets.KeySet(k.currentManager().GetDevices(string(uid), container)[resourceName]))
}

// Capacity returns the node capacity and allocatable count of resourceName
// that the kubelet would report.
func (k *Kubelet) Capacity(resourceName string) (capacity, allocatable int64) {
	capacities, allocatables, _ := k.currentManager().GetCapacity(k.logger)
	name := v1.ResourceName(resourceName)
	return capacities.Name(name, "").Value(), allocatables.Name(name, "").Value()
}

// WaitForCapacity waits until the kubelet reports want allocatable devices
// of resourceName, or ctx ends.
func (k *Kubelet) WaitForCapacity(ctx context.Context, resourceName string, want int64) error {
	for {
		_, allocatable := k.Capacity(resourceName)
		if allocatable == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelet reports %d allocatable %s, want %d: %w",
				allocatable, resourceName, want, context.Cause(ctx))
		case <-time.After(capacityPollInterval):
		}
	}
}

// sourcesAlwaysReady tells the device manager that every pod source has
// been seen, so it frees the devices of pods that are no longer active.
type sourcesAlwaysReady struct{}

var _ config.SourcesReady = sourcesAlwaysReady{}

func (sourcesAlwaysReady) AddSource(string) {}
func (sourcesAlwaysReady) AllReady() bool   { return true }
