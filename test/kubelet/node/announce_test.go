package node_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	// reconcileWatchEnv sets how long TestMultiMemifPodsAnnouncedOnce
	// watches the agent reconcile running pods (a Go duration).
	reconcileWatchEnv = "MEMIF_NODE_RECONCILE_WATCH"
	// defaultReconcileWatch: five minutes, 150 reconciliations at
	// testReconcilePeriod.
	defaultReconcileWatch = 5 * time.Minute
	// testReconcilePeriod is podmanager.conf's reconcile-period in the test.
	testReconcilePeriod = "2s"
)

// TestMultiMemifPodsAnnouncedOnce runs pods holding two and three memifs on
// a real node whose agent compares the pods with kubelet's pod-resources
// every two seconds. kubelet lists a container's devices in a new order at
// almost every call; each pod must still be announced (AddPod) once, and
// never again while nothing about it changes.
func TestMultiMemifPodsAnnouncedOnce(t *testing.T) {
	watch := reconcileWatch(t)
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := context.Background()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{
		BinDir: binDir, Progress: t.Logf,
		ConfigKeys: map[string]map[string]string{"podmanager.conf": {"reconcile-period": testReconcilePeriod}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), 40))
		}
	})
	poll.Until(t, agentTimeout, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })

	memifs := map[string]int{"memif-two": 2, "memif-three": 3}
	for name, count := range memifs {
		pod := memifnode.MemifPod("default", name)
		pod.Spec.Containers[0].Resources.Limits[memifnode.ResourceName] = *resource.NewQuantity(int64(count), resource.DecimalSI)
		if _, err := n.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for name, count := range memifs {
		waitRunning(t, n, name)
		poll.Until(t, podTimeout, fmt.Sprintf("pod %s bound to an allocation of %d memifs", name, count), func() error {
			return boundWith(ctx, n, name, count)
		})
	}
	running := addPodsByPod(t, n, memifs)
	t.Logf("AddPod events once the pods run: %v; watching %s of reconciliations every %s", running, watch, testReconcilePeriod)
	time.Sleep(watch)
	after := addPodsByPod(t, n, memifs)
	t.Logf("AddPod events after %s: %v", watch, after)
	// A pod is announced when the agent first sees it and again when it
	// learns more of it (its UID and annotations from the CRI after
	// kubelet's pod-resources): real changes, all made by the time it runs
	// and is bound. What must not happen is another announcement of the
	// unchanged pod at a reconcile.
	for name, count := range memifs {
		if running[name] < 1 || after[name] != running[name] {
			t.Errorf("pod %s holding %d memifs: %d AddPod events once running and bound, %d after %s of reconciliations; want none after it runs",
				name, count, running[name], after[name], watch)
		}
	}
	if err := n.AgentNeverRestarted(ctx); err != nil {
		t.Error(err)
	}
}

// reconcileWatch is how long the test watches: MEMIF_NODE_RECONCILE_WATCH,
// or defaultReconcileWatch.
func reconcileWatch(t *testing.T) time.Duration {
	t.Helper()
	text := os.Getenv(reconcileWatchEnv)
	if text == "" {
		return defaultReconcileWatch
	}
	watch, err := time.ParseDuration(text)
	if err != nil || watch <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration such as 5m", reconcileWatchEnv, text)
	}
	return watch
}

// boundWith tells whether the agent lists an allocation of count devices
// bound to the pod. (The node's agent finds no container runtime socket:
// kubelet's pod-resources, which carries no pod UID, alone tells it which
// pods live.)
func boundWith(ctx context.Context, n *memifnode.Node, pod string, count int) error {
	allocations, err := n.Memifctl(ctx, "list")
	if err != nil {
		return err
	}
	for _, a := range allocations {
		if a.PodNamespace == "default" && a.PodName == pod {
			if len(a.DeviceIDs) != count {
				return fmt.Errorf("allocation %s holds devices %v", a.AllocationID, a.DeviceIDs)
			}
			return nil
		}
	}
	return fmt.Errorf("no allocation bound to it among %d", len(allocations))
}

// addPodsByPod counts the AddPod events of the agent's event history by
// pod name, for the pods named in pods.
func addPodsByPod(t *testing.T, n *memifnode.Node, pods map[string]int) map[string]int {
	t.Helper()
	events, err := n.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, event := range events {
		for name := range pods {
			if event.Name == "AddPod" && strings.HasPrefix(event.Description, "AddPod default/"+name+" ") {
				counts[name]++
			}
		}
	}
	return counts
}
