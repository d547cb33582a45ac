package benchmarks

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// TestMain builds memif-agent as make build does (static, no race
// detector: its speed and size are what is measured), unless
// MEMIF_AGENT_BIN names a directory holding it, then runs the benchmarks.
func TestMain(m *testing.M) {
	os.Exit(agenttest.Main(m, agenttest.Build{Env: "MEMIF_AGENT_BIN", Commands: []string{"memif-agent"}}))
}
