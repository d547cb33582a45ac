package benchmarks

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

const (
	resource = "contivpp.io/memif"
	// waitTimeout bounds every wait; it is a failure deadline, not a
	// measured or asserted duration.
	waitTimeout = agenttest.WaitTimeout
	// readyPollInterval is how often readiness is asked while timing a
	// start: the resolution of the start-to-ready figure.
	readyPollInterval = 2 * time.Millisecond
)

// newAgent is an agent whose start is timed at readyPollInterval and that
// is stopped with SIGTERM when the benchmark ends, as kubelet stops it.
func newAgent(tb testing.TB, setup agenttest.Setup) *agenttest.Agent {
	tb.Helper()
	setup.ReadyPoll = readyPollInterval
	a := agenttest.New(tb, setup)
	tb.Cleanup(a.Stop)
	return a
}

// allocations lists the agent's allocations, secrets included, by
// allocation ID.
func allocations(tb testing.TB, ctx context.Context, client memifv1.MemifAgentClient) map[string]*memifv1.MemifAllocation {
	tb.Helper()
	response, err := client.ListAllocations(ctx, &memifv1.ListAllocationsRequest{IncludeSecrets: true})
	if err != nil {
		tb.Fatalf("ListAllocations: %v", err)
	}
	byID := make(map[string]*memifv1.MemifAllocation, len(response.GetAllocations()))
	for _, allocation := range response.GetAllocations() {
		byID[allocation.GetAllocationId()] = allocation
	}
	return byID
}

// logLinesAbout returns the agent's log lines that mention any of words.
func logLinesAbout(a *agenttest.Agent, words []string) string {
	content, err := os.ReadFile(a.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", a.LogPath, err)
	}
	var matching []string
	for line := range strings.Lines(string(content)) {
		for _, word := range words {
			if strings.Contains(line, word) {
				matching = append(matching, strings.TrimRight(line, "\n"))
				break
			}
		}
	}
	return strings.Join(matching, "\n")
}
