package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/program"
)

// StartForTest starts a cluster for tb and stops it when tb ends; when tb
// failed, the tails of kubelet's and containerd's logs are logged first,
// and every peer's log is kept in a directory the test log names (the
// work dir goes with the cluster).
// Without root the test is skipped, or fails under CI=true.
func StartForTest(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	needs.Root(tb, "a cluster node (containerd, kubelet, a mount namespace)")
	c, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, peer := range []string{"kubelet", "containerd"} {
				tb.Logf("%s log ends with:\n%s", peer, program.Tail(c.LogPath(peer), 30))
			}
			tb.Log(c.keepLogs())
		}
		if err := c.Stop(); err != nil {
			tb.Errorf("stop the cluster: %v", err)
		}
	})
	return c
}

// keepLogs copies the peers' logs out of the work dir and says where.
func (c *Cluster) keepLogs() string {
	kept, err := os.MkdirTemp("", "cluster-logs-")
	if err == nil {
		err = os.CopyFS(kept, os.DirFS(c.logDir()))
	}
	if err != nil {
		return fmt.Sprintf("the peers' logs are lost with the work dir: %v", err)
	}
	return "the peers' logs are kept in " + kept
}
