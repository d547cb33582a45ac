package faults

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// TestMain builds the agent with the race detector, so that the faults
// also hunt data races in it, and memifctl, then runs the tests; or it is
// a helper process of a test (runHelper), started by a test.
func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		runHelper(spec)
		return
	}
	os.Exit(agenttest.Main(m, agenttest.Build{
		Env:      "FAULTS_BIN_DIR",
		Race:     true,
		Commands: []string{"memif-agent", "memifctl"},
	}))
}
