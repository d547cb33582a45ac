package helm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const waitLimit = 3 * time.Minute

// chartKinds are the kinds of every object the chart renders with
// dra.enabled, as kubectl names them.
var chartKinds = []string{
	"daemonsets.apps", "configmaps", "serviceaccounts", "services",
	"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
	"deviceclasses.resource.k8s.io",
	"validatingadmissionpolicies.admissionregistration.k8s.io",
	"validatingadmissionpolicybindings.admissionregistration.k8s.io",
}

// releaseObjects lists the objects of the release in the cluster, by the
// instance label the chart gives each, as kind/name lines.
func releaseObjects(ctx context.Context, c *cluster.Cluster) ([]string, error) {
	out, err := c.Kubectl(ctx, "get", strings.Join(chartKinds, ","), "--all-namespaces",
		"--selector", "app.kubernetes.io/instance="+memifnode.Release, "--output", "name")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// TestInstallUpgradeUninstall: helm install, upgrade and uninstall of the
// chart on a real node, as an operator runs them.
func TestInstallUpgradeUninstall(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir, Values: []string{memifnode.ChartDir + "/ci/dra-values.yaml"}, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), 60))
		}
	})

	installed, err := releaseObjects(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installed: %v", installed)
	// Two admission policies, each with its binding: the agent's
	// ResourceSlices and its entries in ResourceClaims' status.
	if want := len(chartKinds) + 2; len(installed) != want {
		t.Errorf("the release has %d objects %v, want %d: one of each of %v, two policies and their bindings", len(installed), installed, want, chartKinds)
	}
	// The cluster runs no kube-proxy: the DRA driver reaches the API
	// server at its own address (a patch of the DaemonSet's env, which
	// helm's three-way merge keeps across the upgrade).
	if err := n.ReachAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	if _, err := n.CreatePod(ctx, memifnode.MemifPod("default", "memif-a")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "memif pod memif-a running", func() error { _, err := n.PodRunning(ctx, "default", "memif-a"); return err })

	t.Run("upgrade with a changed value rolls the agent to it", func(t *testing.T) {
		before, err := n.AgentPod(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out, err := n.Helm(ctx, "upgrade", "--set", `config.logs\.conf.default-level=debug`)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm upgrade:\n%s", out)
		if !strings.Contains(out, "REVISION: 2") {
			t.Errorf("helm upgrade printed no revision 2:\n%s", out)
		}
		cm, err := n.Client().CoreV1().ConfigMaps(memifnode.Namespace).Get(ctx, memifnode.ConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cm.Data["logs.conf"], `default-level: "debug"`) {
			t.Errorf("logs.conf after the upgrade:\n%s", cm.Data["logs.conf"])
		}
		poll.Until(t, waitLimit, "the agent replaced and Ready", func() error { return n.AgentReplaced(ctx, before.UID) })
		if logs := n.AgentLogs(ctx, 200); !strings.Contains(logs, "level=debug") {
			t.Errorf("the new agent logs nothing at debug level:\n%s", logs)
		}
		if _, err := n.PodRunning(ctx, "default", "memif-a"); err != nil {
			t.Errorf("the memif pod admitted before the upgrade: %v", err)
		}
		if _, err := n.CreatePod(ctx, memifnode.MemifPod("default", "memif-b")); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, waitLimit, "memif pod memif-b running after the upgrade", func() error { _, err := n.PodRunning(ctx, "default", "memif-b"); return err })
	})

	t.Run("uninstall leaves nothing of the chart", func(t *testing.T) {
		for _, pod := range []string{"memif-a", "memif-b"} {
			if err := n.DeletePod(ctx, "default", pod); err != nil {
				t.Error(err)
			}
		}
		out, err := n.Uninstall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm uninstall: %s", strings.TrimSpace(out))
		poll.Until(t, waitLimit, "no object of the release left", func() error {
			left, err := releaseObjects(ctx, c)
			if err == nil && len(left) > 0 {
				err = fmt.Errorf("left: %v", left)
			}
			return err
		})
		poll.Until(t, waitLimit, "no agent pod left", func() error {
			pods, err := n.Client().CoreV1().Pods(memifnode.Namespace).List(ctx, metav1.ListOptions{})
			if err == nil && len(pods.Items) > 0 {
				err = fmt.Errorf("%d pods left in %s", len(pods.Items), memifnode.Namespace)
			}
			return err
		})
		releases, err := memifnode.Helm(ctx, c, "list", "--all-namespaces", "--all", "--short")
		if err != nil || strings.TrimSpace(releases) != "" {
			t.Errorf("helm list after the uninstall: %q, %v", releases, err)
		}
	})
}
