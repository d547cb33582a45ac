package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kubelettest"
)

// binDirEnv carries the directory of the built binaries from the process
// that builds them into the re-executed test process in the private mount
// namespace.
const binDirEnv = "FAULTS_BIN_DIR"

// binDir holds memif-agent and memifctl, built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	if binDir = os.Getenv(binDirEnv); binDir != "" {
		os.Exit(kubelettest.Main(m))
	}
	dir, err := os.MkdirTemp("", "faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults: create a directory for the binaries:", err)
		os.Exit(1)
	}
	code := buildAndRun(m, dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAndRun builds the agent (with the race detector, so that the
// faults also hunt data races in it) and memifctl, then runs the tests.
func buildAndRun(m *testing.M, dir string) int {
	build := exec.Command("go", "build", "-race", "-o", dir+"/", "./cmd/memif-agent", "./cmd/memifctl")
	build.Dir = filepath.Join("..", "..", "..")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: build memif-agent and memifctl:", err)
		return 1
	}
	if err := os.Setenv(binDirEnv, dir); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	binDir = dir
	return kubelettest.Main(m)
}
