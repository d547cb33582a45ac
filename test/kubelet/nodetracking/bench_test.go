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
	stopped := watchContainersStopped(b, n.cluster.RuntimeSocket())
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

// watchContainersStopped follows GetContainerEvents on the runtime's
// socket until the benchmark ends and notes, by pod UID, when each report
// of a pod's container stopped arrived.
func watchContainersStopped(tb testing.TB, socket string) *arrivals.Log {
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
	stopped := arrivals.New(1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			event, err := stream.Recv()
			if err != nil {
				return
			}
			if event.GetContainerEventType() != runtimev1.ContainerEventType_CONTAINER_STOPPED_EVENT ||
				event.GetContainerId() == event.GetPodSandboxStatus().GetId() {
				continue
			}
			if !stopped.Note(ctx, event.GetPodSandboxStatus().GetMetadata().GetUid()) {
				return
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		conn.Close()
	})
	return stopped
}
