package demo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kubelet/demo"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

func TestMain(m *testing.M) {
	code := kubelettest.Main(m)
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built holds the agent binaries, built once for every test.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// repoRoot is two levels above this package's module.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "dockerd.sh")); err != nil {
		t.Fatalf("repository root %s has no scripts/dockerd.sh: %v", root, err)
	}
	return root
}

// buildBinaries builds memif-agent and memifctl from the repository once,
// the way make build does, unless MEMIF_AGENT_BIN names a directory that
// holds them already (make can pass its bin/).
func buildBinaries(t *testing.T, root string) string {
	t.Helper()
	if bin := os.Getenv("MEMIF_AGENT_BIN"); bin != "" {
		return bin
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "memif-demo-bin-")
		if built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", built.dir+"/", "./cmd/memif-agent", "./cmd/memifctl")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build the agent binaries: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// lineWriter logs each demo line and calls onLine with it.
type lineWriter struct {
	t      *testing.T
	mu     sync.Mutex
	onLine func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.Log(line)
		if w.onLine != nil {
			w.onLine(line)
		}
	}
	return len(p), nil
}

func TestDemoEndToEnd(t *testing.T) {
	root := repoRoot(t)
	bin := buildBinaries(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	result, err := demo.Run(ctx, demo.Options{BinDir: bin, RepoRoot: root, Pods: 3, Out: &lineWriter{t: t}})
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	if len(result.Pods) != 3 {
		t.Fatalf("demo measured %d pods, want 3", len(result.Pods))
	}
	for _, pod := range result.Pods {
		t.Run("traffic/"+pod.Pod, func(t *testing.T) {
			if !pod.LinkUp || pod.RxPackets == 0 || pod.PacketsPerSec <= 0 {
				t.Errorf("link up %v, %d packets received, %.0f packets/s; want up with packets flowing", pod.LinkUp, pod.RxPackets, pod.PacketsPerSec)
			}
		})
	}
	t.Run("release after delete", func(t *testing.T) {
		if !result.DirReleased || !result.DevicesReleased {
			t.Errorf("pod %s deleted: directory released %v, devices released %v; want both", result.Deleted, result.DirReleased, result.DevicesReleased)
		}
		if len(result.Remaining) != 2 {
			t.Fatalf("%d pods measured after the delete, want 2", len(result.Remaining))
		}
		for _, pod := range result.Remaining {
			if !pod.LinkUp || pod.PacketsPerSec <= 0 {
				t.Errorf("%s after the delete: link up %v, %.0f packets/s; want still flowing", pod.Pod, pod.LinkUp, pod.PacketsPerSec)
			}
		}
	})
	t.Run("nothing left running", func(t *testing.T) {
		if len(result.Leftovers) > 0 {
			t.Errorf("teardown left: %v", result.Leftovers)
		}
	})
}

func TestDemoTearsDownWhenInterrupted(t *testing.T) {
	root := repoRoot(t)
	bin := buildBinaries(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	interrupted, interrupt := context.WithCancel(ctx)
	defer interrupt()
	// Ctrl-C right after kubelet admitted the first pod: the agent,
	// dockerd, a sandbox container and kubelet are running then.
	out := &lineWriter{t: t, onLine: func(line string) {
		if strings.HasPrefix(line, "pod ") {
			interrupt()
		}
	}}

	result, err := demo.Run(interrupted, demo.Options{BinDir: bin, RepoRoot: root, Pods: 3, Out: out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted demo returned %v, want context.Canceled", err)
	}
	if len(result.Leftovers) > 0 {
		t.Errorf("teardown after the interrupt left: %v", result.Leftovers)
	}
}
