package cluster

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/program"
)

// StartForTest starts a cluster for tb and stops it when tb ends; when tb
// failed, the tails of kubelet's and containerd's logs are logged first.
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
		}
		if err := c.Stop(); err != nil {
			tb.Errorf("stop the cluster: %v", err)
		}
	})
	return c
}

// TestLog is an Options.Progress that logs each line through tb.
func TestLog(tb testing.TB) io.Writer { return testLog{tb} }

type testLog struct{ tb testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
