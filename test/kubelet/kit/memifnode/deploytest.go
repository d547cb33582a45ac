package memifnode

import (
	"context"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// DeployReady deploys the agent as Deploy does, lets its DRA driver reach
// the API server (ReachAPIServer) and waits up to limit for the DaemonSet
// to be Ready; t fails on any error. When t has failed by its end, the
// agent's last logLines lines of log are in t's output.
func DeployReady(ctx context.Context, t testing.TB, c *cluster.Cluster, opts Options, limit time.Duration, logLines int) *Node {
	t.Helper()
	n, err := Deploy(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), logLines))
		}
	})
	if err := n.ReachAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, limit, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	return n
}
