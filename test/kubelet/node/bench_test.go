package node_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// BenchmarkPodCreateToRunning measures, on the real node with the agent
// deployed, the time from creating a pod to seeing it Running through a
// watch, for a pod that asks for one memif and for the same pod without
// it, alternating; each iteration is one pod of each. It reports both
// medians and their ratio (run with -benchtime=20x or more for p50 over
// ≥ 20 pods).
func BenchmarkPodCreateToRunning(b *testing.B) {
	c := cluster.StartForTest(b, cluster.Options{})
	ctx := context.Background()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir})
	if err != nil {
		b.Fatal(err)
	}
	poll.Until(b, agentTimeout, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	var withMemif, without []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for _, memif := range []bool{true, false} {
			d, err := createToRunning(ctx, n, benchPod(fmt.Sprintf("bench-%d-%t", i, memif), memif))
			if err != nil {
				b.Fatal(err)
			}
			if memif {
				withMemif = append(withMemif, d)
			} else {
				without = append(without, d)
			}
		}
	}
	b.StopTimer()
	p50With, p50Without := median(withMemif), median(without)
	b.ReportMetric(float64(p50With.Milliseconds()), "p50-ms-with-memif")
	b.ReportMetric(float64(p50Without.Milliseconds()), "p50-ms-without")
	b.ReportMetric(float64(p50With)/float64(p50Without), "ratio-with/without")
}

// benchPod is the same pause pod with or without one memif.
func benchPod(name string, memif bool) *v1.Pod {
	pod := memifnode.MemifPod("default", name)
	container := &pod.Spec.Containers[0]
	container.Image = cluster.PauseImage
	container.Command = nil
	if !memif {
		delete(container.Resources.Limits, memifnode.ResourceName)
	}
	return pod
}

// createToRunning creates pod, returns how long until a watch saw it
// Running, and deletes it.
func createToRunning(ctx context.Context, n *memifnode.Node, pod *v1.Pod) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, podTimeout)
	defer cancel()
	pods := n.Client().CoreV1().Pods(pod.Namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := n.CreatePod(ctx, pod); err != nil {
		return 0, err
	}
	defer func() { _ = n.DeletePod(context.Background(), pod.Namespace, pod.Name) }()
	for event := range w.ResultChan() {
		if p, ok := event.Object.(*v1.Pod); ok && p.Status.Phase == v1.PodRunning {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("pod %s/%s: watch ended before Running: %w", pod.Namespace, pod.Name, ctx.Err())
}

func median(durations []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), durations...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}
