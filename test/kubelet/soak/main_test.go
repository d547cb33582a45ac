package soak

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// binDir holds memifctl: MEMIF_AGENT_BIN (make build), or a build of this
// run.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(memifnode.RunWithMemifctl(m, &binDir))
}
