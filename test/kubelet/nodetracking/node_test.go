package nodetracking_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

const (
	devices   = 4
	namespace = "default"
	// waitLimit bounds every wait; it is a failure deadline, not an
	// asserted duration.
	waitLimit = 3 * time.Minute
)

// node is a cluster with the agent running against its kubelet and
// containerd.
type node struct {
	cluster *cluster.Cluster
	client  *kubernetes.Clientset
	agent   *agenttest.Agent
}

func startNode(t *testing.T, runtime cluster.Runtime) *node {
	t.Helper()
	c := cluster.StartForTest(t, cluster.Options{Runtime: runtime, Progress: cluster.TestLog(t)})
	client, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	podResources := c.HostPath("/var/lib/kubelet/pod-resources/kubelet.sock")
	a := agenttest.New(t, agenttest.Setup{
		DeviceCount: devices, PluginDir: c.HostPath("/var/lib/kubelet/device-plugins"), PodResourcesSocket: podResources,
	})
	agenttest.WriteConfig(t, a.ConfigDir, map[string]string{"podmanager.conf": fmt.Sprintf(
		"runtime: cri\ncri-endpoint: %s\npod-resources-socket: %s\n", c.RuntimeSocket(), podResources)})
	a.Start()
	n := &node{cluster: c, client: client, agent: a}
	poll.Until(t, waitLimit, "the node's allocatable memifs", func() error {
		got, err := client.CoreV1().Nodes().Get(t.Context(), cluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if q := got.Status.Allocatable[v1.ResourceName(dmapi.DefaultResourceName)]; q.Value() != devices {
			return fmt.Errorf("allocatable %s = %s", dmapi.DefaultResourceName, q.String())
		}
		return nil
	})
	return n
}

func memifPod(name string) *v1.Pod {
	quantity := *resource.NewQuantity(1, resource.DecimalSI)
	zero := int64(0)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name: "app", Image: cluster.PauseImage, ImagePullPolicy: v1.PullNever,
				Resources: v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceName(dmapi.DefaultResourceName): quantity},
					Requests: v1.ResourceList{v1.ResourceName(dmapi.DefaultResourceName): quantity},
				},
			}},
		},
	}
}

// run creates the pod and waits until it runs.
func (n *node) run(t *testing.T, name string) *v1.Pod {
	t.Helper()
	created := n.create(t, name)
	n.waitRunning(t, name)
	return created
}

func (n *node) create(t *testing.T, name string) *v1.Pod {
	t.Helper()
	created, err := n.client.CoreV1().Pods(namespace).Create(t.Context(), memifPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return created
}

// waitRunning waits until the pod runs; a pod kubelet fails (an admission
// refused) fails the test.
func (n *node) waitRunning(t *testing.T, name string) {
	t.Helper()
	poll.Until(t, waitLimit, "pod "+name+" running", func() error {
		pod, err := n.client.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch pod.Status.Phase {
		case v1.PodRunning:
			return nil
		case v1.PodFailed:
			t.Fatalf("kubelet failed pod %s: %s %s", name, pod.Status.Reason, pod.Status.Message)
		}
		return fmt.Errorf("phase %s", pod.Status.Phase)
	})
}

// bound waits until the node API answers for the pod with a memif bound
// to its UID.
func (n *node) bound(t *testing.T, pod *v1.Pod) *memifv1.MemifAllocation {
	t.Helper()
	var memif *memifv1.MemifAllocation
	poll.Until(t, waitLimit, "memif of "+pod.Name+" bound", func() error {
		response, err := n.agent.APIClient().GetPodMemifs(t.Context(), &memifv1.GetPodMemifsRequest{Namespace: namespace, Name: pod.Name})
		if err != nil {
			return err
		}
		for _, m := range response.GetMemifs() {
			if m.GetPodUid() == string(pod.UID) {
				memif = m
				return nil
			}
		}
		return fmt.Errorf("no memif bound to uid %s: %v", pod.UID, response.GetMemifs())
	})
	return memif
}

// deleteAndRelease deletes the pod and waits until its memif's directory
// and device are released.
func (n *node) deleteAndRelease(t *testing.T, pod *v1.Pod, memif *memifv1.MemifAllocation) {
	t.Helper()
	if err := n.client.CoreV1().Pods(namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", pod.Name, err)
	}
	n.released(t, pod, memif)
}

// released waits until the memif's directory and device are released.
func (n *node) released(t *testing.T, pod *v1.Pod, memif *memifv1.MemifAllocation) {
	t.Helper()
	poll.Until(t, waitLimit, "memif of "+pod.Name+" released", func() error {
		response, err := n.agent.APIClient().ListAllocations(t.Context(), &memifv1.ListAllocationsRequest{})
		if err != nil {
			return err
		}
		for _, m := range response.GetAllocations() {
			if m.GetAllocationId() == memif.GetAllocationId() {
				return fmt.Errorf("allocation %s still held", m.GetAllocationId())
			}
		}
		if _, err := os.Stat(memif.GetHostDir()); !os.IsNotExist(err) {
			return fmt.Errorf("directory %s still there (%v)", memif.GetHostDir(), err)
		}
		return nil
	})
}

// gone waits until the API server has forgotten the pod.
func (n *node) gone(t *testing.T, name string) {
	t.Helper()
	poll.Until(t, waitLimit, "pod "+name+" gone", func() error {
		if _, err := n.client.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		} else if !strings.Contains(err.Error(), "not found") {
			return err
		}
		return nil
	})
}

func TestMemifPodsOnARealNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime cluster.Runtime
	}{
		{"containerd 2.x", cluster.Containerd},
		{"containerd 1.6", cluster.DebianContainerd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, tc.runtime)
			t.Run("a running memif pod is bound and released", func(t *testing.T) {
				pod := n.run(t, "web")
				memif := n.bound(t, pod)
				if memif.GetContainerName() != "app" || !strings.HasPrefix(memif.GetHostSocket(), memif.GetHostDir()) {
					t.Errorf("bound memif = %v, want container app with its socket in its directory", memif)
				}
				n.deleteAndRelease(t, pod, memif)
				n.gone(t, pod.Name)
			})
			t.Run("an agent restart keeps the binding", func(t *testing.T) {
				pod := n.run(t, "kept")
				before := n.bound(t, pod)
				n.agent.Stop()
				n.agent.Start()
				after := n.bound(t, pod)
				if after.GetAllocationId() != before.GetAllocationId() || after.GetHostSocket() != before.GetHostSocket() {
					t.Errorf("after the agent restart: %v, before: %v", after, before)
				}
				n.deleteAndRelease(t, pod, after)
				n.gone(t, pod.Name)
			})
			t.Run("a containerd restart loses no delete", func(t *testing.T) {
				pod := n.run(t, "deleted")
				memif := n.bound(t, pod)
				if err := n.cluster.RestartContainerd(t.Context()); err != nil {
					t.Fatalf("restart containerd: %v", err)
				}
				n.deleteAndRelease(t, pod, memif)
				n.gone(t, pod.Name)
			})
			t.Run("pods in waves on four devices are all admitted", func(t *testing.T) {
				const waves = 2
				for wave := range waves {
					var running []*v1.Pod
					for i := range devices {
						running = append(running, n.create(t, fmt.Sprintf("wave-%d-%d", wave, i)))
					}
					var memifs []*memifv1.MemifAllocation
					for _, pod := range running {
						n.waitRunning(t, pod.Name)
						memifs = append(memifs, n.bound(t, pod))
					}
					for _, pod := range running {
						if err := n.client.CoreV1().Pods(namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
							t.Fatalf("delete pod %s: %v", pod.Name, err)
						}
					}
					for i, pod := range running {
						n.released(t, pod, memifs[i])
						n.gone(t, pod.Name)
					}
				}
			})
		})
	}
}
