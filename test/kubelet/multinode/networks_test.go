package multinode

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// networksValues are the chart's values of TestNetworksSpanNodes.
const networksValues = "test/kubelet/multinode/networks-values.yaml"

// labAddresses are the l2 pods' addresses, set in their VPPs: the agent
// gives an l2 network's memifs none.
var labAddresses = [2]string{"10.90.0.1/24", "10.90.0.2/24"}

// TestNetworksSpanNodes: on two nodes joined by an underlay, each node's
// VPP on it, a VPP pod on node A pings a VPP pod on node B in l3 network
// red and in l2 network lab, each way, and a pod of blue on node B
// reaches neither.
func TestNetworksSpanNodes(t *testing.T) {
	ctx := t.Context()
	s := startSpanningNodes(ctx, t)
	names := s.names
	s.runVPPPods(ctx, t, []vppPod{
		{"red-a", names[0], "red"},
		{"red-b", names[1], "red"},
		{"lab-a", names[0], "lab"},
		{"lab-b", names[1], "lab"},
		{"blue-b", names[1], "blue"},
	})
	c := s.c
	for i, name := range []string{"lab-a", "lab-b"} {
		if _, err := memifnode.PodVPP(c, namespace, name).Run(ctx, "set interface ip address memif1/0 "+labAddresses[i]); err != nil {
			t.Fatal(err)
		}
	}
	redA, redB := podAddress(ctx, t, c, "red-a"), podAddress(ctx, t, c, "red-b")
	labA, labB := labAddresses[0][:len(labAddresses[0])-3], labAddresses[1][:len(labAddresses[1])-3]
	for _, ping := range []struct{ from, to string }{{"red-a", redB}, {"red-b", redA}, {"lab-a", labB}, {"lab-b", labA}} {
		wantPing(t, c, ping.from, ping.to)
	}
	for _, target := range []string{redA, redB, labA, labB} {
		wantNoReply(t, c, "blue-b", target)
	}
}

// spanningNodes are two nodes joined by an underlay, each node's VPP on
// it, with the agent deployed with networksValues and crossnode.conf and
// each node's share of red and blue claimed.
type spanningNodes struct {
	c      *cluster.Cluster
	agents *memifnode.Node
	// vpps and names are the nodes' VPPs and names, in the order of
	// c.AllNodes: node A's first.
	vpps  []*memifnode.NodeVPP
	names []string
}

// startSpanningNodes starts a cluster of two nodes, joins them by an
// underlay, starts each node's VPP on it, deploys the agent on both and
// waits until each node has claimed its share of red and blue.
func startSpanningNodes(ctx context.Context, tb testing.TB) *spanningNodes {
	tb.Helper()
	c := cluster.StartForTest(tb, cluster.Options{Nodes: nodes, Progress: testlog.Writer(tb)})
	crossnodeConf, err := memifnode.JoinUnderlay(c)
	if err != nil {
		tb.Fatal(err)
	}
	s := &spanningNodes{c: c}
	for _, node := range c.AllNodes() {
		vswitch, err := memifnode.StartNodeVPPOn(ctx, node, memifnode.UnderlayPlugins...)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if tb.Failed() {
				for _, show := range []string{"show vxlan tunnel", "show bridge-domain", "show ip fib"} {
					out, _ := vswitch.CLI().Run(context.Background(), show)
					tb.Logf("node %s's VPP, %s:\n%s", node.Name(), show, out)
				}
			}
			if err := vswitch.Stop(); err != nil {
				tb.Errorf("stop node %s's VPP: %v", node.Name(), err)
			}
		})
		s.vpps, s.names = append(s.vpps, vswitch), append(s.names, node.Name())
	}
	if err := memifnode.ImportVPPImageOnAll(ctx, c); err != nil {
		tb.Fatal(err)
	}
	s.agents, err = memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir, Values: []string{networksValues}, Progress: tb.Logf,
		ConfigKeys: map[string]map[string]string{"crossnode.conf": crossnodeConf}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(agentLogs(context.Background(), s.agents))
		}
	})
	if err := s.agents.ReachAPIServer(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := s.agents.JoinNodes(ctx); err != nil {
		tb.Fatal(err)
	}
	poll.Until(tb, waitLimit, "an agent Ready on each node", func() error { return s.agents.DaemonSetReadyOnAll(ctx) })
	// A pod wired before its node's share is claimed would have its memif
	// refused, and its VPP would wait out a crash loop's back-off.
	poll.Until(tb, waitLimit, "each node's share of red and blue claimed", func() error {
		leases, err := s.agents.Client().CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shares.LabelNetwork})
		if err != nil {
			return err
		}
		if len(leases.Items) != 2*len(s.names) {
			return fmt.Errorf("%d shares' Leases, want %d", len(leases.Items), 2*len(s.names))
		}
		return nil
	})
	return s
}

// vppPod is a VPP pod (memifnode.VPPPod) with one memif in network, run
// on node.
type vppPod struct{ name, node, network string }

// runVPPPods creates the pods and waits until each runs with its memif
// connected.
func (s *spanningNodes) runVPPPods(ctx context.Context, tb testing.TB, pods []vppPod) {
	tb.Helper()
	for _, p := range pods {
		pod := memifnode.VPPPod(namespace, p.name, fmt.Sprintf(`[{"network": %q}]`, p.network))
		pod.Spec.NodeName = p.node
		if _, err := s.agents.CreatePod(ctx, pod); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range pods {
		waitConnected(ctx, tb, s.c, s.agents, p.name)
	}
}

// waitConnected waits until the VPP pod runs and its memif is connected.
func waitConnected(ctx context.Context, t testing.TB, c *cluster.Cluster, agents *memifnode.Node, name string) {
	t.Helper()
	poll.Until(t, waitLimit, "pod "+name+" running", func() error {
		_, err := agents.PodRunning(ctx, namespace, name)
		return err
	})
	cli := memifnode.PodVPP(c, namespace, name)
	poll.Until(t, waitLimit, "the memif of pod "+name+" connected", func() error { return cli.Connected(ctx) })
}

var l3Address = regexp.MustCompile(`L3 (\d+\.\d+\.\d+\.\d+)/\d+`)

// podAddress is the address the VPP of pod name holds, as memif.json gave
// it.
func podAddress(ctx context.Context, t testing.TB, c *cluster.Cluster, name string) string {
	t.Helper()
	out, err := memifnode.PodVPP(c, namespace, name).Run(ctx, "show interface address")
	if err != nil {
		t.Fatal(err)
	}
	m := l3Address.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pod %s's VPP holds no IPv4 address: %s", name, out)
	}
	return m[1]
}

// wantPing waits until the VPP of pod from gets every echo reply from
// target.
func wantPing(t testing.TB, c *cluster.Cluster, from, target string) {
	t.Helper()
	cli := memifnode.PodVPP(c, namespace, from)
	poll.Until(t, waitLimit, from+" pings "+target, func() error {
		sent, received, err := cli.Ping(t.Context(), target)
		if err == nil && (sent != vppcnf.PingCount || received != sent) {
			err = fmt.Errorf("%d sent, %d received", sent, received)
		}
		return err
	})
}

// wantNoReply checks that the VPP of pod from gets no reply from target.
func wantNoReply(t *testing.T, c *cluster.Cluster, from, target string) {
	t.Helper()
	sent, received, err := memifnode.PodVPP(c, namespace, from).Ping(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	if received != 0 {
		t.Errorf("%s reaches %s: %d of %d echo requests answered, want 0", from, target, received, sent)
	}
}
