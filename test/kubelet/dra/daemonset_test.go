package dra

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// TestDaemonSetRestartAndRemovalOnARealNode deploys the agent as users do
// (helm install of the chart with ci/dra-values.yaml, memifnode.Deploy) and
// shows the node's ResourceSlice through the agent's life: the agent pod replaced leaves it untouched (the same object,
// and a claim pod created afterwards runs); dradriver.conf switched to
// enabled: false and the pod replaced leaves no slice of the node; switched
// back on, the slice is there again; the DaemonSet deleted leaves none.
func TestDaemonSetRestartAndRemovalOnARealNode(t *testing.T) {
	c, client := startChartCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{Values: []string{memifnode.ChartDir + "/ci/dra-values.yaml"}, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), 40))
		}
	})
	reachAPIServer(ctx, t, c, n)
	poll.Until(t, waitLimit, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	published := nodeSlice(ctx, t, client)

	replaceAgentPod(ctx, t, n)
	pod := createPod(ctx, t, client, podOf("memif-after-restart", cluster.PauseImage, nil, true))
	waitRunning(ctx, t, client, pod.Name)
	if now := nodeSlice(ctx, t, client); now.UID != published.UID || now.ResourceVersion != published.ResourceVersion {
		t.Errorf("after the agent pod's replacement the slice is %s (version %s), want %s (version %s) untouched",
			now.UID, now.ResourceVersion, published.UID, published.ResourceVersion)
	}
	if err := n.DeletePod(ctx, namespace, pod.Name); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "the claim pod gone", func() error { return n.PodGone(ctx, namespace, pod.Name) })

	setDRA(ctx, t, n, false)
	replaceAgentPod(ctx, t, n)
	waitNoNodeSlice(ctx, t, client, "the agent restarted with dradriver.conf enabled: false")

	setDRA(ctx, t, n, true)
	replaceAgentPod(ctx, t, n)
	nodeSlice(ctx, t, client)

	if out, err := c.Kubectl(ctx, "delete", "-n", memifnode.Namespace, "daemonset", memifnode.DaemonSet); err != nil {
		t.Fatalf("kubectl delete daemonset: %v\n%s", err, out)
	}
	poll.Until(t, waitLimit, "the agent pod gone", func() error {
		if pod, err := n.AgentPod(ctx); err == nil {
			return fmt.Errorf("agent pod %s still running", pod.Name)
		}
		return nil
	})
	waitNoNodeSlice(ctx, t, client, "the DaemonSet deleted")
}

// replaceAgentPod deletes the agent's pod as a rolling update or an
// eviction does (with its grace period) and waits for the DaemonSet's new
// pod to be Ready.
func replaceAgentPod(ctx context.Context, t *testing.T, n *memifnode.Node) {
	t.Helper()
	old, err := n.AgentPod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Client().CoreV1().Pods(memifnode.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "a new agent pod Ready", func() error { return n.AgentReplaced(ctx, old.UID) })
	if err := n.AgentNeverRestarted(ctx); err != nil {
		t.Fatal(err)
	}
}

// setDRA switches the DRA driver on or off in the agent's ConfigMap
// (dradriver.conf); the agent reads it when it starts.
func setDRA(ctx context.Context, t *testing.T, n *memifnode.Node, enabled bool) {
	t.Helper()
	configMaps := n.Client().CoreV1().ConfigMaps(memifnode.Namespace)
	config, err := configMaps.Get(ctx, "memif-agent-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	config.Data["dradriver.conf"] = fmt.Sprintf("enabled: %t\n", enabled)
	if _, err := configMaps.Update(ctx, config, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// reachAPIServer points the agent's in-cluster client at the API server's
// own address: the harness runs no kube-proxy, so the kubernetes Service's
// IP leads nowhere, while the agent's host network reaches the API server
// where kubelet does. The service account token and CA stay the pod's.
func reachAPIServer(ctx context.Context, t *testing.T, c *cluster.Cluster, n *memifnode.Node) {
	t.Helper()
	server, err := url.Parse(c.Server())
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"memif-agent","env":[`+
		`{"name":"KUBERNETES_SERVICE_HOST","value":%q},{"name":"KUBERNETES_SERVICE_PORT","value":%q}]}]}}}}`, server.Hostname(), server.Port())
	if _, err := n.Client().AppsV1().DaemonSets(memifnode.Namespace).Patch(ctx, memifnode.DaemonSet, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("point the agent at the API server: %v", err)
	}
}
