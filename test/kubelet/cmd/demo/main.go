// Command demo is `make demo`: it runs kubelet's real device manager, a
// private dockerd, the memif-agent binary and DPDK memif traffic on this
// machine, prints one line per step and a table of the links, deletes a
// pod, and removes everything it started (also on Ctrl-C or failure).
//
// It needs root: kubelet's device manager serves at a fixed path under
// /var/lib/kubelet, so the command re-executes itself in a private mount
// namespace with a tmpfs there, leaving any real kubelet alone.
//
//	demo --bin ../../bin [--pods 3]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/test/kubelet/demo"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

func main() {
	os.Exit(run())
}

func run() int {
	bin := flag.String("bin", "bin", "directory holding the memif-agent and memifctl binaries (make build)")
	repo := flag.String("repo", "", "repository root, for scripts/dockerd.sh (default: found above the working directory)")
	pods := flag.Int("pods", 3, "how many pods request a memif")
	stepTimeout := flag.Duration("step-timeout", 2*time.Minute, "bound on each waiting step")
	flag.Parse()

	return kubelettest.InPrivateMountNamespace("the demo and its dockerd and DPDK", func() int {
		// What matters of kubelet's side reaches the demo as errors from
		// the device manager's calls.
		if err := kubelettest.ConfigureKlog("FATAL"); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			return 1
		}
		return runDemo(*bin, *repo, *pods, *stepTimeout)
	})
}

func runDemo(bin, repo string, pods int, stepTimeout time.Duration) int {
	root, err := repoRoot(repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	binDir, err := filepath.Abs(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	result, err := demo.Run(ctx, demo.Options{
		BinDir: binDir, RepoRoot: root, Pods: pods, StepTimeout: stepTimeout, Out: os.Stdout,
	})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started was stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	case len(result.Leftovers) > 0:
		return 1
	}
	return 0
}

// repoRoot is flagValue, or the first directory at or above the working
// directory that holds scripts/dockerd.sh.
func repoRoot(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "dockerd.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no scripts/dockerd.sh above the working directory: pass --repo")
		}
		dir = parent
	}
}
