package nodetracking_test

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

func TestMain(m *testing.M) {
	os.Exit(agenttest.Main(m, agenttest.Build{Env: "NODETRACKING_BIN_DIR", Commands: []string{"memif-agent"}}))
}
