package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// Build says how Main builds the binaries the suite runs.
type Build struct {
	// Env names the variable that carries the binaries' directory into the
	// re-executed test process in the private mount namespace; set by the
	// caller, Main builds nothing and runs the binaries there.
	Env string
	// Race builds with the race detector, so that the suite also hunts data
	// races in the agent; otherwise the build is make build's (static,
	// trimmed), whose speed and size are what benchmarks measure.
	Race bool
	// Commands are the ./cmd packages to build (memif-agent, memifctl).
	Commands []string
}

// binDir holds the binaries Main built or found; set once by Main before
// any test runs.
var binDir string

// BinDir returns the directory of the binaries Main built or found.
func BinDir() string { return binDir }

// Main builds the binaries (unless build.Env names them already), then runs
// the tests through kubelettest.Main; it returns the exit code.
func Main(m *testing.M, build Build) int {
	if binDir = os.Getenv(build.Env); binDir != "" {
		return kubelettest.Main(m)
	}
	dir, err := os.MkdirTemp("", "agent-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for the agent's binaries:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := build.run(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Setenv(build.Env, dir); err != nil {
		fmt.Fprintf(os.Stderr, "pass the binaries' directory in %s: %v\n", build.Env, err)
		return 1
	}
	binDir = dir
	return kubelettest.Main(m)
}

// run builds the commands into dir from the repository root.
func (b Build) run(dir string) error {
	args := []string{"build", "-o", dir + "/"}
	env := os.Environ()
	if b.Race {
		args = append(args, "-race")
	} else {
		args = append(args, "-trimpath")
		env = append(env, "CGO_ENABLED=0")
	}
	for _, command := range b.Commands {
		args = append(args, "./cmd/"+command)
	}
	build := exec.Command("go", args...)
	build.Dir = filepath.Join("..", "..", "..")
	build.Env = env
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build %v: %w", b.Commands, err)
	}
	return nil
}
