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
	"github.com/contivpp/memif-agent/test/kit/testlog"
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

func startNode(t testing.TB, runtime cluster.Runtime) *node {
	t.Helper()
	c := cluster.StartForTest(t, cluster.Options{Runtime: runtime, Progress: testlog.Writer(t)})
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
func (n *node) run(t testing.TB, name string) *v1.Pod {
	t.Helper()
	created := n.create(t, name)
	n.waitRunning(t, name)
	return created
}

func (n *node) create(t testing.TB, name string) *v1.Pod {
	t.Helper()
	created, err := n.client.CoreV1().Pods(namespace).Create(t.Context(), memifPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return created
}

// waitRunning waits until the pod runs; a pod kubelet fails (an admission
// refused) fails the test.
func (n *node) waitRunning(t testing.TB, name string) {
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

// bound waits until the agent has bound the pod's memif to the pod's UID
// (memifctl list shows it bound, not only resolved for a lookup) and the
// node API answers for the pod with it (memifctl get).
func (n *node) bound(t testing.TB, pod *v1.Pod) *memifv1.MemifAllocation {
	t.Helper()
	var memif *memifv1.MemifAllocation
	poll.Until(t, waitLimit, "memif of "+pod.Name+" bound", func() error {
		allocationID, err := n.boundAllocation(t.Context(), pod)
		if err != nil {
			return err
		}
		response, err := n.agent.APIClient().GetPodMemifs(t.Context(), &memifv1.GetPodMemifsRequest{Namespace: namespace, Name: pod.Name})
		if err != nil {
			return err
		}
		for _, m := range response.GetMemifs() {
			if m.GetAllocationId() == allocationID {
				memif = m
				return nil
			}
		}
		return fmt.Errorf("the node API answers %v for %s, not its bound allocation %s", response.GetMemifs(), pod.Name, allocationID)
	})
	return memif
}

// boundAllocation returns the ID of the allocation the agent lists bound
// to the pod's UID (memifctl list), or an error saying there is none yet.
func (n *node) boundAllocation(ctx context.Context, pod *v1.Pod) (string, error) {
	listed, err := n.agent.APIClient().ListAllocations(ctx, &memifv1.ListAllocationsRequest{})
	if err != nil {
		return "", err
	}
	for _, m := range listed.GetAllocations() {
		if m.GetPodName() == pod.Name && m.GetPodUid() == string(pod.UID) {
			return m.GetAllocationId(), nil
		}
	}
	return "", fmt.Errorf("no allocation bound to %s (uid %s)", pod.Name, pod.UID)
}

// deleteAndRelease deletes the pod and waits until its memif's directory
// and device are released.
func (n *node) deleteAndRelease(t testing.TB, pod *v1.Pod, memif *memifv1.MemifAllocation) {
	t.Helper()
	if err := n.client.CoreV1().Pods(namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", pod.Name, err)
	}
	n.released(t, pod, memif)
}

// released waits until the memif's directory and device are released.
func (n *node) released(t testing.TB, pod *v1.Pod, memif *memifv1.MemifAllocation) {
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
func (n *node) gone(t testing.TB, name string) {
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

// churnPods is how many pods the churn creates and deletes, in waves of
// one per device.
const churnPods = 50

// churn creates and deletes pods in waves of one per device, each wave
// created right after the deletion of the one before: kubelet hands the
// devices it frees to the next wave at once, often before the agent has
// released the deleted pods, so every Allocate of a wave may name a device
// the agent still holds. Each pod must run (no admission refused), be bound
// with its own socket, and be released once deleted.
func (n *node) churn(t *testing.T, pods int) {
	t.Helper()
	type boundPod struct {
		pod   *v1.Pod
		memif *memifv1.MemifAllocation
	}
	var previous []boundPod
	deleteAll := func(wave []boundPod) {
		for _, b := range wave {
			if err := n.client.CoreV1().Pods(namespace).Delete(t.Context(), b.pod.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete pod %s: %v", b.pod.Name, err)
			}
		}
	}
	awaitReleased := func(wave []boundPod) {
		for _, b := range wave {
			n.released(t, b.pod, b.memif)
			n.gone(t, b.pod.Name)
		}
	}
	for first := 0; first < pods; first += devices {
		waveStart := time.Now()
		deleteAll(previous)
		var created []*v1.Pod
		for i := first; i < min(first+devices, pods); i++ {
			created = append(created, n.create(t, fmt.Sprintf("churn-%02d", i)))
		}
		awaitReleased(previous)
		previousGone := time.Since(waveStart)
		var wave []boundPod
		sockets := map[string]string{}
		for _, pod := range created {
			n.waitRunning(t, pod.Name)
			memif := n.bound(t, pod)
			if memif.GetHostSocket() == "" || !strings.HasPrefix(memif.GetHostSocket(), memif.GetHostDir()) {
				t.Errorf("pod %s bound without its socket: %v", pod.Name, memif)
			}
			if other, taken := sockets[memif.GetHostSocket()]; taken {
				t.Errorf("pods %s and %s share socket %s", other, pod.Name, memif.GetHostSocket())
			}
			sockets[memif.GetHostSocket()] = pod.Name
			wave = append(wave, boundPod{pod: pod, memif: memif})
		}
		t.Logf("pods %d to %d: the wave before released and gone after %s, these running and bound after %s",
			first, first+len(wave)-1, previousGone.Round(time.Millisecond), time.Since(waveStart).Round(time.Millisecond))
		previous = wave
	}
	deleteAll(previous)
	awaitReleased(previous)
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
			t.Run("50 pods in overlapping waves on four devices are all admitted", func(t *testing.T) {
				n.churn(t, churnPods)
			})
		})
	}
}
