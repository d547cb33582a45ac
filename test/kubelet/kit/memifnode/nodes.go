package memifnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// The agent on every node of a cluster of several (cluster.Options.Nodes):
// Deploy installs the chart once and opts the first node in; JoinNodes
// opts the added nodes in, each with the images imported into its own
// containerd, so that the DaemonSet runs one agent per node, as on a
// cluster of machines. The ...On methods read one node's agent.

// JoinNodes imports the agent's image (the archive Deploy made) and the
// testpmd pod image into every added node of the cluster and opts each in
// (NodeOptInLabel): the DaemonSet then runs an agent there too.
func (n *Node) JoinNodes(ctx context.Context) error {
	if len(n.c.Nodes()) == 0 {
		return nil
	}
	img, err := testpmd.PodImage(TestpmdImage)
	if err != nil {
		return err
	}
	for _, node := range n.c.Nodes() {
		if err := node.ImportImage(ctx, filepath.Join(n.c.Dir(), "image", "memif-agent-image.tar")); err != nil {
			return err
		}
		if err := node.ImportOCIImage(ctx, img); err != nil {
			return err
		}
		if _, err := n.c.Kubectl(ctx, "label", "node", node.Name(), NodeOptInLabel+"=true", "--overwrite"); err != nil {
			return fmt.Errorf("memifnode: opt node %s in: %w", node.Name(), err)
		}
		n.logf("memifnode: node %s opted in, images imported", node.Name())
	}
	return nil
}

// DaemonSetReadyOnAll returns nil once the DaemonSet has one pod on every
// node of the cluster, up to date and Ready.
func (n *Node) DaemonSetReadyOnAll(ctx context.Context) error {
	ds, err := n.client.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := int32(len(n.c.AllNodes()))
	s := ds.Status
	if s.DesiredNumberScheduled != want || s.NumberReady != want || s.UpdatedNumberScheduled != want || s.ObservedGeneration < ds.Generation {
		return fmt.Errorf("daemonset %s/%s: desired %d, ready %d, updated %d; want %d nodes", Namespace, DaemonSet,
			s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled, want)
	}
	return nil
}

// AgentPodOn returns the DaemonSet's running pod on the node.
func (n *Node) AgentPodOn(ctx context.Context, node string) (*v1.Pod, error) {
	pods, err := n.client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=memif-agent",
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && pods.Items[i].Status.Phase == v1.PodRunning {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running pod of daemonset %s/%s on node %s among %d", Namespace, DaemonSet, node, len(pods.Items))
}

// AllocatableOn returns a node's allocatable and capacity of
// contivpp.io/memif.
func (n *Node) AllocatableOn(ctx context.Context, node string) (allocatable, capacity int64, err error) {
	got, err := n.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	a := got.Status.Allocatable[v1.ResourceName(ResourceName)]
	c := got.Status.Capacity[v1.ResourceName(ResourceName)]
	return a.Value(), c.Value(), nil
}

// MemifctlOn runs memifctl -o json with args against the agent of node
// (its node-local API socket, as this process sees it) and decodes the
// allocations it prints.
func (n *Node) MemifctlOn(ctx context.Context, node cluster.NodeHost, args ...string) ([]Allocation, error) {
	out, err := n.memifctlTextOn(ctx, node, append([]string{"-o", "json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var allocations []Allocation
	if err := json.Unmarshal([]byte(out), &allocations); err != nil {
		return nil, fmt.Errorf("decode memifctl on %s %s output %q: %w", node.Name(), strings.Join(args, " "), out, err)
	}
	return allocations, nil
}

// memifctlTextOn runs memifctl with args against the agent of node and
// returns what it prints.
func (n *Node) memifctlTextOn(ctx context.Context, node cluster.NodeHost, args ...string) (string, error) {
	full := append([]string{"-socket", node.HostPath(APISocket)}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(n.binDir, "memifctl"), full...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("memifctl on %s %s: %w: %s", node.Name(), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
