package multinode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// driver is the agent's DRA driver.
const driver = "memif.contivpp.io"

// claimsPerNode is devicemanager.conf claim-device-count on every node.
const claimsPerNode = 2

// TestDRAClaimsComeFromTheNodeTheirPodRunsOn: with the DRA driver on and
// 2 claimable memifs per node, each node's agent publishes a ResourceSlice
// of its own pool; a pod pinned to the second node (nodeSelector) gets its
// claim from that node's pool; three more claim pods fill both nodes, two
// per node, each claim allocated from the pool of its pod's node; a fifth
// stays Pending with the scheduler's reason. The second node removed, its
// ResourceSlice, its pods and its agent go, and the fifth pod is weighed on
// the first node alone.
func TestDRAClaimsComeFromTheNodeTheirPodRunsOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tn := startTwoNodes(ctx, t, memifnode.Options{
		Values:     []string{memifnode.ChartDir + "/ci/dra-values.yaml"},
		ConfigKeys: map[string]map[string]string{"devicemanager.conf": {"claim-device-count": fmt.Sprint(claimsPerNode)}},
	}, func(agents *memifnode.Node) error { return agents.ReachAPIServer(ctx) })
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tn.c.Kubectl(ctx, "apply", "-f", filepath.Join(root, "k8s", "dra", "resourceclaimtemplate.yaml")); err != nil {
		t.Fatalf("apply the claim template: %v\n%s", err, out)
	}
	for _, node := range tn.names {
		poll.Until(t, waitLimit, "node "+node+"'s ResourceSlice", func() error { return tn.nodeSlice(ctx, node) })
	}

	second := tn.c.Nodes()[0].Name()
	pinned := claimPod("pinned")
	pinned.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": second}
	tn.createPods(ctx, t, pinned)
	if node := tn.waitRunning(ctx, t, pinned.Name)[pinned.Name]; node != second {
		t.Fatalf("pod %s pinned to %s runs on %s", pinned.Name, second, node)
	}

	pods := []string{"claim-1", "claim-2", "claim-3"}
	for _, name := range pods {
		tn.createPods(ctx, t, claimPod(name))
	}
	placed := tn.waitRunning(ctx, t, append(pods, pinned.Name)...)
	byNode := perNode(placed)
	for _, node := range tn.names {
		if len(byNode[node]) != claimsPerNode {
			t.Errorf("claim pods by node %v, want %d on each of %v", byNode, claimsPerNode, tn.names)
		}
	}
	for pod, node := range placed {
		if pool, err := tn.claimPool(ctx, pod); err != nil || pool != node {
			t.Errorf("pod %s on %s: its claim is allocated from pool %q (%v), want the node's", pod, node, pool, err)
		}
	}

	tn.createPods(ctx, t, claimPod("claim-5"))
	reason := tn.waitUnschedulable(ctx, t, "claim-5")
	// Both nodes were weighed, and neither had a device for its claim.
	if want := fmt.Sprintf("0/%d nodes are available: %d cannot allocate all claims", nodes, nodes); !strings.Contains(reason, want) {
		t.Errorf("claim-5's PodScheduled message %q does not say %q", reason, want)
	}
	t.Logf("claim-5 Pending: %s", reason)

	// The second node removed (its kubelet stopped, its Node deleted):
	// the cluster forgets it. Its ResourceSlice goes with the Node that
	// owns it, its pods with the node they were bound to, and the
	// DaemonSet wants an agent on the first node only.
	if err := tn.c.Nodes()[0].Remove(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "node "+second+"'s ResourceSlices gone", func() error {
		slices, err := tn.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + second})
		if err == nil && len(slices.Items) > 0 {
			err = fmt.Errorf("node %s still has %d ResourceSlices", second, len(slices.Items))
		}
		return err
	})
	poll.Until(t, waitLimit, "node "+second+"'s pods gone", func() error {
		pods, err := tn.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + second})
		if err == nil && len(pods.Items) > 0 {
			err = fmt.Errorf("node %s still has %d pods, %s first", second, len(pods.Items), pods.Items[0].Name)
		}
		return err
	})
	poll.Until(t, waitLimit, "the agent's DaemonSet on the first node only", func() error { return tn.agents.DaemonSetReadyOnAll(ctx) })
	if reason := tn.waitUnschedulable(ctx, t, "claim-5"); !strings.Contains(reason, "0/1 nodes are available") {
		t.Errorf("claim-5 with one node left: %q, want it weighed on the one", reason)
	}
}

// nodeSlice returns nil once the node has one ResourceSlice of the driver,
// for its own pool, with claimsPerNode devices.
func (tn *twoNodes) nodeSlice(ctx context.Context, node string) error {
	slices, err := tn.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	var found []resourceapi.ResourceSlice
	for _, slice := range slices.Items {
		if slice.Spec.Driver == driver {
			found = append(found, slice)
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("node %s has %d slices of %s, want 1", node, len(found), driver)
	}
	spec := found[0].Spec
	if spec.Pool.Name != node || len(spec.Devices) != claimsPerNode {
		return fmt.Errorf("node %s's slice: pool %q with %d devices, want pool %q with %d", node, spec.Pool.Name, len(spec.Devices), node, claimsPerNode)
	}
	return nil
}

// claimPool returns the pool the pod's one claim is allocated from.
func (tn *twoNodes) claimPool(ctx context.Context, name string) (string, error) {
	pod, err := tn.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if len(pod.Status.ResourceClaimStatuses) != 1 || pod.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		return "", fmt.Errorf("pod %s's claims: %v", name, pod.Status.ResourceClaimStatuses)
	}
	claimName := *pod.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := tn.client.ResourceV1().ResourceClaims(namespace).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		return "", fmt.Errorf("claim %s: allocation %v", claimName, claim.Status.Allocation)
	}
	result := claim.Status.Allocation.Devices.Results[0]
	if result.Driver != driver {
		return "", fmt.Errorf("claim %s is allocated a device of %s", claimName, result.Driver)
	}
	return result.Pool, nil
}
