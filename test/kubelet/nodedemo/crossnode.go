package nodedemo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// On two nodes or more, the networks span the nodes: every node's VPP
// joins the cluster's underlay (a veth into a host bridge, af_packet in
// VPP), each agent publishes its node's underlay address and claims its
// node's share of red, and red is routed between the nodes over VXLAN.

// crossNodeValues are the chart's values that turn networks across nodes
// on, over values.
const crossNodeValues = "test/kubelet/nodedemo/crossnode-values.yaml"

// crossNodeSetup joins every node of c to the underlay and returns the
// VPP plugins each node's VPP needs and the agent's deploy options: the
// first node alone keeps its networks to itself.
func crossNodeSetup(r reporter, c *cluster.Cluster, opts memifnode.Options) ([]string, memifnode.Options, error) {
	if len(c.Nodes()) == 0 {
		return []string{"ping"}, opts, nil
	}
	keys, err := memifnode.JoinUnderlay(c)
	if err != nil {
		return nil, opts, err
	}
	for k, node := range c.AllNodes() {
		r.step("underlay", "node %s joins the underlay bridge with a veth into its network namespace; its VPP's address there: %s", node.Name(), memifnode.UnderlayAddress(k))
	}
	opts.Values = append(opts.Values, crossNodeValues)
	opts.ConfigKeys = map[string]map[string]string{"crossnode.conf": keys}
	return memifnode.UnderlayPlugins, opts, nil
}

// waitShares waits until every node's agent has published its underlay
// address and claimed its share of red, and prints them.
func waitShares(ctx context.Context, r reporter, c *cluster.Cluster, n *memifnode.Node, timeout time.Duration) error {
	want := len(c.AllNodes())
	var lines []string
	if err := waitFor(ctx, timeout, func() error {
		lines = nil
		nodes, err := n.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, node := range nodes.Items {
			addr, ok := node.Annotations[underlay.Annotation]
			if !ok {
				return fmt.Errorf("node %s has no annotation %s yet", node.Name, underlay.Annotation)
			}
			lines = append(lines, fmt.Sprintf("Node %s annotation %s: %s", node.Name, underlay.Annotation, addr))
		}
		selector := labels.SelectorFromSet(labels.Set{shares.LabelNetwork: l3Network}).String()
		leases, err := n.Client().CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(leases.Items) != want {
			return fmt.Errorf("%d shares of %s claimed, want one per node (%d)", len(leases.Items), l3Network, want)
		}
		for _, lease := range leases.Items {
			holder := ""
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			lines = append(lines, fmt.Sprintf("Lease %s/%s: share %s of %s held by %s", lease.Namespace, lease.Name, lease.Annotations[shares.AnnotationShare], l3Network, holder))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("the agents' underlay addresses and shares: %w", err)
	}
	sort.Strings(lines)
	r.step("crossnode", "each agent published its node's underlay address and claimed its node's share of %s:\n%s", l3Network, strings.Join(lines, "\n"))
	return nil
}

// runAcrossNodes runs a VPP pod of red on each added node, and it and
// the first l3 pod, on the first node, ping each other through their
// nodes' VPPs and the VXLAN tunnel between them; each node's tunnels are
// printed.
func runAcrossNodes(ctx context.Context, r reporter, c *cluster.Cluster, n *memifnode.Node, first *memifnode.NodeVPP, added []addedVPP, timeout time.Duration) error {
	home, err := n.PodMemif(ctx, "default", cnfPods[0])
	if err != nil {
		return err
	}
	homeAddr := home.File.Interfaces[0].IPs[0].Addr().String()
	for _, a := range added {
		name := "cnf-on-" + a.node.Name()
		pod := memifnode.VPPPod("default", name, fmt.Sprintf(`[{"network": %q}]`, l3Network))
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": a.node.Name()}
		if _, err := n.CreatePod(ctx, pod); err != nil {
			return err
		}
		memif, err := waitCNFOn(ctx, c, n, a.node, name, timeout)
		if err != nil {
			return err
		}
		iface := memif.File.Interfaces[0]
		r.step("pod", "%s Running on node %s (VPP as memif slave) in %s: %s via %s, from node %s's share", name, a.node.Name(), iface.Network, iface.IPs[0], iface.Gateway[0], a.node.Name())
		if err := r.pings(ctx, c, timeout, []ping{
			{cnfPods[0], iface.IPs[0].Addr().String(), name + " on node " + a.node.Name() + ", across the nodes over VXLAN"},
			{name, homeAddr, cnfPods[0] + " on node " + cluster.NodeName + ", across the nodes over VXLAN"},
		}); err != nil {
			return err
		}
		if err := r.vppctlOn(ctx, a.sw, a.node.Name(), "show vxlan tunnel"); err != nil {
			return err
		}
	}
	return r.vppctlOn(ctx, first, cluster.NodeName, "show vxlan tunnel")
}

// vppctlOn prints what the VPP of node shows for command.
func (r reporter) vppctlOn(ctx context.Context, sw *memifnode.NodeVPP, node, command string) error {
	out, err := sw.VPP.RunCLI(ctx, strings.Fields(command)...)
	if err != nil {
		return err
	}
	r.step("vppctl", "node %s, %s (a tunnel per network to each other node):\n%s", node, command, strings.TrimRight(out, "\n"))
	return nil
}

// waitCNFOn waits until the VPP pod name runs on node with its memif.json
// written by that node's agent and its memif connected.
func waitCNFOn(ctx context.Context, c *cluster.Cluster, n *memifnode.Node, node cluster.NodeHost, name string, timeout time.Duration) (memifnode.PodMemif, error) {
	if err := waitFor(ctx, timeout, func() error { _, err := n.PodRunning(ctx, "default", name); return err }); err != nil {
		return memifnode.PodMemif{}, err
	}
	var memif memifnode.PodMemif
	if err := waitFor(ctx, timeout, func() error {
		var err error
		memif, err = n.PodMemifOn(ctx, node, "default", name)
		if err == nil && len(memif.File.Interfaces) == 0 {
			err = fmt.Errorf("pod %s: memif.json lists no interface: %s", name, memif.JSON)
		}
		return err
	}); err != nil {
		return memifnode.PodMemif{}, err
	}
	cli := memifnode.PodVPP(c, "default", name)
	if err := waitFor(ctx, timeout, func() error { return cli.Connected(ctx) }); err != nil {
		return memifnode.PodMemif{}, fmt.Errorf("pod %s: %w", name, err)
	}
	return memif, nil
}
