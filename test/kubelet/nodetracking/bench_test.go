package nodetracking_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/contivpp/memif-agent/test/kit/arrivals"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/podbench"
)

// BenchmarkPodDeletionToDirectoryReleased measures, on the real node
// (kubelet v1.37 on containerd 2.x, the agent binary reading the CRI and
// kubelet's pod-resources), how long a deleted memif pod keeps its
// allocation's directory: from the pod's deletion through the API server
// to the directory gone ("release"). The baseline, on the same pods, is the
// runtime's own report of the deletion: from the same moment to
// containerd's CRI event stream (GetContainerEvents, on a connection of the
// benchmark's own to the node's socket) reporting the pod's container
// stopped ("runtime-stopped"), the first any node agent can hear of it from
// the runtime. The agent must wait longer by design: a stopped container
// may be restarted, so it releases once kubelet no longer lists the pod's
// devices. ns/op is not meaningful (an iteration also creates, runs and
// binds a pod) and is reported as 0.
func BenchmarkPodDeletionToDirectoryReleased(b *testing.B) {
	n := startNode(b, cluster.Containerd)
	stopped := watchContainerEvents(b, n.cluster.RuntimeSocket(), runtimev1.ContainerEventType_CONTAINER_STOPPED_EVENT)
	var release, runtimeStopped time.Duration
	for i := range b.N {
		pod := n.run(b, fmt.Sprintf("del-%d", i))
		memif := n.bound(b, pod)

		start := time.Now()
		if err := n.client.CoreV1().Pods(namespace).Delete(b.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatalf("delete pod %s: %v", pod.Name, err)
		}
		poll.Every(b, waitLimit, time.Millisecond, "directory "+memif.GetHostDir()+" going", func() error {
			if _, err := os.Stat(memif.GetHostDir()); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
		release += time.Since(start)
		runtimeStopped += stopped.Await(b, string(pod.UID), waitLimit).Sub(start)
		n.gone(b, pod.Name)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(release.Nanoseconds())/float64(b.N), "release-ns")
	b.ReportMetric(float64(runtimeStopped.Nanoseconds())/float64(b.N), "runtime-stopped-ns")
	b.ReportMetric(float64(release)/float64(runtimeStopped), "release/runtime-stopped")
}

// BenchmarkPodRunningToBound measures, on the same real node, how soon the
// agent binds a memif pod once it runs: per pod, from a watch on the API
// server seeing it Running to the agent listing its allocation bound to the
// pod's UID (node API ListAllocations, as memifctl list; "bind"; about one
// call's time when the agent bound it before the API server said Running).
// The baseline, on the same pods, is how long the node itself takes to say
// the pod runs: from containerd's CRI event stream reporting the pod's
// container started (the benchmark's own connection) to the same watch
// seeing Running ("runtime-to-running"). Both are p50 over the iterations;
// run it with -benchtime=10x or more. ns/op is not meaningful (an
// iteration also creates, deletes and releases a pod) and is reported as 0.
func BenchmarkPodRunningToBound(b *testing.B) {
	n := startNode(b, cluster.Containerd)
	started := watchContainerEvents(b, n.cluster.RuntimeSocket(), runtimev1.ContainerEventType_CONTAINER_STARTED_EVENT)
	var bind, runtimeToRunning []time.Duration
	for i := range b.N {
		pod, _, err := podbench.CreateUntilRunning(b.Context(), n.client, memifPod(fmt.Sprintf("bind-%d", i)))
		running := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		poll.Every(b, waitLimit, time.Millisecond, "memif of "+pod.Name+" bound", func() error {
			_, err := n.boundAllocation(b.Context(), pod)
			return err
		})
		bind = append(bind, time.Since(running))
		runtimeToRunning = append(runtimeToRunning, running.Sub(started.Await(b, string(pod.UID), waitLimit)))
		n.deleteAndRelease(b, pod, n.bound(b, pod))
		n.gone(b, pod.Name)
	}
	bindMedian, runtimeMedian := podbench.Median(bind), podbench.Median(runtimeToRunning)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(bindMedian.Nanoseconds()), "bind-p50-ns")
	b.ReportMetric(float64(runtimeMedian.Nanoseconds()), "runtime-to-running-p50-ns")
	b.ReportMetric(float64(bindMedian)/float64(runtimeMedian), "bind/runtime-to-running")
}

// watchContainerEvents follows GetContainerEvents on the runtime's socket
// until the benchmark ends and notes, by pod UID, when each report of the
// given kind about a pod's container (not its sandbox) arrived.
func watchContainerEvents(tb testing.TB, socket string, kind runtimev1.ContainerEventType) *arrivals.Log {
	tb.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatalf("connect to the runtime at %s: %v", socket, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := runtimev1.NewRuntimeServiceClient(conn).GetContainerEvents(ctx, &runtimev1.GetEventsRequest{})
	if err != nil {
		cancel()
		conn.Close()
		tb.Fatalf("follow the runtime's container events: %v", err)
	}
	reports := arrivals.New(1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			event, err := stream.Recv()
			if err != nil {
				return
			}
			if event.GetContainerEventType() != kind ||
				event.GetContainerId() == event.GetPodSandboxStatus().GetId() {
				continue
			}
			if !reports.Note(ctx, event.GetPodSandboxStatus().GetMetadata().GetUid()) {
				return
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		conn.Close()
	})
	return reports
}
