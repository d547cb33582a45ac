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
	c := cluster.StartForTest(t, cluster.Options{Nodes: nodes, Progress: testlog.Writer(t)})
	crossnodeConf, err := memifnode.JoinUnderlay(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range c.AllNodes() {
		vswitch, err := memifnode.StartNodeVPPOn(ctx, node, memifnode.UnderlayPlugins...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				for _, show := range []string{"show vxlan tunnel", "show bridge-domain", "show ip fib"} {
					out, _ := vswitch.CLI().Run(context.Background(), show)
					t.Logf("node %s's VPP, %s:\n%s", node.Name(), show, out)
				}
			}
			if err := vswitch.Stop(); err != nil {
				t.Errorf("stop node %s's VPP: %v", node.Name(), err)
			}
		})
	}
	if err := memifnode.ImportVPPImageOnAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	agents, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir, Values: []string{networksValues}, Progress: t.Logf,
		ConfigKeys: map[string]map[string]string{"crossnode.conf": crossnodeConf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(agentLogs(context.Background(), agents))
		}
	})
	if err := agents.ReachAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := agents.JoinNodes(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "an agent Ready on each node", func() error { return agents.DaemonSetReadyOnAll(ctx) })
	names := []string{c.AllNodes()[0].Name(), c.AllNodes()[1].Name()}
	// A pod wired before its node's share is claimed would have its memif
	// refused, and its VPP would wait out a crash loop's back-off.
	poll.Until(t, waitLimit, "each node's share of red and blue claimed", func() error {
		leases, err := agents.Client().CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shares.LabelNetwork})
		if err != nil {
			return err
		}
		if len(leases.Items) != 2*len(names) {
			return fmt.Errorf("%d shares' Leases, want %d", len(leases.Items), 2*len(names))
		}
		return nil
	})

	pods := []struct{ name, node, networks string }{
		{"red-a", names[0], `[{"network": "red"}]`},
		{"red-b", names[1], `[{"network": "red"}]`},
		{"lab-a", names[0], `[{"network": "lab"}]`},
		{"lab-b", names[1], `[{"network": "lab"}]`},
		{"blue-b", names[1], `[{"network": "blue"}]`},
	}
	for _, p := range pods {
		pod := memifnode.VPPPod(namespace, p.name, p.networks)
		pod.Spec.NodeName = p.node
		if _, err := agents.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		waitConnected(ctx, t, c, agents, p.name)
	}
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

// waitConnected waits until the VPP pod runs and its memif is connected.
func waitConnected(ctx context.Context, t *testing.T, c *cluster.Cluster, agents *memifnode.Node, name string) {
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
func podAddress(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) string {
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
func wantPing(t *testing.T, c *cluster.Cluster, from, target string) {
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
