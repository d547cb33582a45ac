package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// rolloutPatch changes the pod template, which rolls the DaemonSet under
// the chart's strategy: a new agent pod beside the old one (maxSurge 1,
// maxUnavailable 0), each told its pod UID, which names its kubelet
// sockets and makes the old agent hand the node over.
const rolloutPatch = `{"spec":{"template":{"metadata":{"annotations":{"memif.contivpp.io/rollout":"%d"}}}}}`

// Pace and bounds of the pods made during the update: one every
// createEvery, device plugin and claim pods in turn, until the update is
// done and afterUpdate more, at most maxRolloutPods (the node's 64 claim
// devices hold half of them).
const (
	createEvery    = 500 * time.Millisecond
	afterUpdate    = 4
	maxRolloutPods = 100
)

// TestRollingUpdateRefusesNoPodOnARealNode rolls the agent's DaemonSet
// with maxSurge 1 and maxUnavailable 0 while memif pods, through the
// device plugin and through DRA claims, are created in a loop: no pod is
// refused (UnexpectedAdmissionError, CreateContainerError, ...), every pod
// runs, and the memifs held before the update are held after it, with
// the same socket and secret.
func TestRollingUpdateRefusesNoPodOnARealNode(t *testing.T) {
	c, client := startChartCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{Values: []string{memifnode.ChartDir + "/ci/dra-values.yaml"}, BinDir: os.Getenv("MEMIF_AGENT_BIN"), Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), 80))
		}
	})
	reachAPIServer(ctx, t, c, n)
	poll.Until(t, waitLimit, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })

	heldPods := []*corev1.Pod{
		createPod(ctx, t, client, podOf("held-device", cluster.PauseImage, nil, false)),
		createPod(ctx, t, client, podOf("held-claim", cluster.PauseImage, nil, true)),
	}
	for _, pod := range heldPods {
		waitRunning(ctx, t, client, pod.Name)
	}
	held := allocations(ctx, t, n)
	if len(held) != len(heldPods) {
		t.Fatalf("%d allocations before the update, want one per pod (%d): %+v", len(held), len(heldPods), held)
	}
	old, err := n.AgentPod(ctx)
	if err != nil {
		t.Fatal(err)
	}

	patchDaemonSet(ctx, t, n, fmt.Sprintf(rolloutPatch, 1))
	created := createWhileRolling(ctx, t, client, n, old.UID)
	var refused []string
	for _, name := range created {
		if reason := runningOrRefused(ctx, t, client, name); reason != "" {
			refused = append(refused, name+": "+reason)
		}
	}
	t.Logf("rolling update (maxSurge 1, maxUnavailable 0): %d memif pods created during it, %d refused", len(created), len(refused))
	if len(refused) > 0 {
		t.Errorf("%d of %d pods created during the update were refused:\n%v", len(refused), len(created), refused)
	}
	if err := n.AgentNeverRestarted(ctx); err != nil {
		t.Error(err)
	}

	after := allocations(ctx, t, n)
	for _, before := range held {
		i := slices.IndexFunc(after, func(a memifnode.Allocation) bool { return a.AllocationID == before.AllocationID })
		switch {
		case i < 0:
			t.Errorf("allocation %s of pod %s held before the update is gone after it", before.AllocationID, before.PodName)
		case after[i].HostSocket != before.HostSocket || after[i].Secret != before.Secret || after[i].PodName != before.PodName:
			t.Errorf("allocation %s changed in the update: %+v, was %+v", before.AllocationID, after[i], before)
		}
		if _, err := os.Stat(c.HostPath(filepath.Dir(before.HostSocket))); err != nil {
			t.Errorf("the socket directory of %s's memif is gone after the update: %v", before.PodName, err)
		}
	}
	t.Logf("the %d memifs held before the update, checked after it: %d allocations in all after it", len(held), len(after))
}

// createWhileRolling creates memif pods, device plugin and claim ones in
// turn, until the DaemonSet's pod is another than old and Ready, and
// afterUpdate more; it returns their names.
func createWhileRolling(ctx context.Context, t *testing.T, client kubernetes.Interface, n *memifnode.Node, old types.UID) []string {
	t.Helper()
	ticker := time.NewTicker(createEvery)
	defer ticker.Stop()
	var names []string
	more := -1
	for i := 0; i < maxRolloutPods && more != 0; i++ {
		name := fmt.Sprintf("rollout-%03d", i)
		createPod(ctx, t, client, podOf(name, cluster.PauseImage, nil, i%2 == 1))
		names = append(names, name)
		if more < 0 && n.AgentReplaced(ctx, old) == nil {
			t.Logf("the agent pod was replaced after %d pods", len(names))
			more = afterUpdate
		}
		if more > 0 {
			more--
		}
		<-ticker.C
	}
	if more != 0 {
		t.Errorf("the DaemonSet was not rolled after %d pods", len(names))
	}
	return names
}

// runningOrRefused waits for pod name to run and returns "", or returns
// why it was refused as soon as its status says so.
func runningOrRefused(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	var reason string
	poll.Until(t, waitLimit, name+" running or refused", func() error {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if reason = kubelettest.Refusal(pod); reason != "" || pod.Status.Phase == corev1.PodRunning {
			return nil
		}
		return fmt.Errorf("phase %s %v", pod.Status.Phase, pod.Status.Conditions)
	})
	return reason
}

// allocations lists the agent's allocations through memifctl, once the
// node API answers.
func allocations(ctx context.Context, t *testing.T, n *memifnode.Node) []memifnode.Allocation {
	t.Helper()
	var list []memifnode.Allocation
	poll.Until(t, waitLimit, "memifctl list", func() error {
		var err error
		list, err = n.Memifctl(ctx, "--show-secrets", "list")
		return err
	})
	return list
}

func patchDaemonSet(ctx context.Context, t *testing.T, n *memifnode.Node, patch string) {
	t.Helper()
	if _, err := n.Client().AppsV1().DaemonSets(memifnode.Namespace).Patch(ctx, memifnode.DaemonSet, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch daemonset with %s: %v", patch, err)
	}
}
