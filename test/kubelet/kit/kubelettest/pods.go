package kubelettest

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// PodNamespace is the namespace of the pods NewPod makes.
const PodNamespace = "default"

// NewPod returns a pod with one container per entry of requests, named
// c0, c1, ...; container i asks for requests[i] devices of resourceName (no
// request when it is 0). Each call gets a fresh UID, as a recreated pod would.
func NewPod(name, resourceName string, requests ...int64) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: PodNamespace, UID: uuid.NewUUID()},
	}
	for i, count := range requests {
		container := v1.Container{Name: fmt.Sprintf("c%d", i)}
		if count > 0 {
			quantity := *resource.NewQuantity(count, resource.DecimalSI)
			container.Resources = v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceName(resourceName): quantity},
				Requests: v1.ResourceList{v1.ResourceName(resourceName): quantity},
			}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, container)
	}
	return pod
}

// PodList stands in for the kubelet's pod manager: the pods admitted to the
// node and not yet removed. The device manager frees the devices of pods
// that leave it; the pod-resources server lists it. Safe for concurrent use.
type PodList struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

// Add makes pod active, replacing an earlier pod with the same UID.
func (l *PodList) Add(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(pod.UID)
	l.pods = append(l.pods, pod)
}

// Remove makes the pod with uid inactive.
func (l *PodList) Remove(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(uid)
}

func (l *PodList) removeLocked(uid types.UID) {
	for i, pod := range l.pods {
		if pod.UID == uid {
			l.pods = append(l.pods[:i:i], l.pods[i+1:]...)
			return
		}
	}
}

// GetActivePods returns the active pods; it is the device manager's
// ActivePodsFunc and implements podresources.PodsProvider.
func (l *PodList) GetActivePods() []*v1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*v1.Pod(nil), l.pods...)
}

// GetPods implements podresources.PodsProvider: the same pods, since
// removed pods are forgotten at once.
func (l *PodList) GetPods() []*v1.Pod { return l.GetActivePods() }

// GetPodByName implements podresources.PodsProvider.
func (l *PodList) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pod := range l.pods {
		if pod.Namespace == namespace && pod.Name == name {
			return pod, true
		}
	}
	return nil, false
}

// Refusal is why kubelet refused pod, or "": admission failed (the pod
// Failed, as with UnexpectedAdmissionError), or its container could not
// be created or started.
func Refusal(pod *v1.Pod) string {
	if pod.Status.Phase == v1.PodFailed {
		return pod.Status.Reason + ": " + pod.Status.Message
	}
	for _, status := range pod.Status.ContainerStatuses {
		if waiting := status.State.Waiting; waiting != nil {
			switch waiting.Reason {
			case "CreateContainerError", "CreateContainerConfigError", "RunContainerError", "CrashLoopBackOff":
				return waiting.Reason + ": " + waiting.Message
			}
		}
	}
	return ""
}
