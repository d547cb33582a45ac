package memifnode

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// RunWithMemifctl runs a suite's tests with memifctl in *binDir: the one
// of MEMIF_AGENT_BIN (make build), or one built for this run into a
// temporary directory, removed afterwards. Its result is TestMain's exit
// code.
func RunWithMemifctl(m *testing.M, binDir *string) int {
	if *binDir = os.Getenv("MEMIF_AGENT_BIN"); *binDir != "" {
		return m.Run()
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "memifctl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for memifctl:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/memifctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build memifctl: %v: %s\n", err, out)
		return 1
	}
	*binDir = dir
	return m.Run()
}
