package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
	"github.com/contivpp/memif-agent/test/kubelet/kit/podbench"
)

// BenchmarkPodCreateToRunning measures, on the real node with the agent
// deployed, the time from creating a pod to seeing it Running through a
// watch, for a pod that asks for one memif and for the same pod without
// it; each iteration is one pod of each, alternating which goes first. It
// reports both medians and their ratio (run with -benchtime=20x or more for
// p50 over ≥ 20 pods).
func BenchmarkPodCreateToRunning(b *testing.B) {
	c := cluster.StartForTest(b, cluster.Options{})
	ctx := context.Background()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir})
	if err != nil {
		b.Fatal(err)
	}
	poll.Until(b, agentTimeout, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	podbench.Compare(b, podbench.Kinds{Subject: "with-memif", Baseline: "without"}, func(i int, memif bool) time.Duration {
		pod := benchPod(fmt.Sprintf("bench-%d-%t", i, memif), memif)
		podCtx, cancel := context.WithTimeout(ctx, podTimeout)
		defer cancel()
		elapsed, err := podbench.CreateToRunning(podCtx, n.Client(), pod)
		_ = n.DeletePod(context.Background(), pod.Namespace, pod.Name)
		if err != nil {
			b.Fatal(err)
		}
		return elapsed
	})
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
