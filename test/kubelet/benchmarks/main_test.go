package benchmarks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kubelettest"
)

// binDirEnv names a directory holding a built memif-agent. TestMain sets it
// after building, so that the re-executed process in the private mount
// namespace finds the binary without building again.
const binDirEnv = "MEMIF_AGENT_BIN"

// binDir holds the memif-agent binary the benchmarks run.
var binDir string

func TestMain(m *testing.M) {
	if binDir = os.Getenv(binDirEnv); binDir != "" {
		os.Exit(kubelettest.Main(m))
	}
	dir, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks: create a directory for the agent binary:", err)
		os.Exit(1)
	}
	code := buildAndRun(m, dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAndRun builds memif-agent as make build does (static, no race
// detector: its speed and size are what is measured), then runs the
// benchmarks.
func buildAndRun(m *testing.M, dir string) int {
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "./cmd/memif-agent")
	build.Dir = filepath.Join("..", "..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks: build memif-agent:", err)
		return 1
	}
	if err := os.Setenv(binDirEnv, dir); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		return 1
	}
	binDir = dir
	return kubelettest.Main(m)
}
