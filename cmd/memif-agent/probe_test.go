package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/otheruser"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// probeRun is one run of memif-agent probe.
type probeRun struct {
	code           int
	stdout, stderr string
}

// runProbeCommand runs memif-agent probe with args, as root or as the
// user nobody, the way kubelet's exec probe runs it: a process of its own.
func runProbeCommand(t *testing.T, asNobody bool, args ...string) probeRun {
	t.Helper()
	cmd := exec.Command(agentBinary, append([]string{probeCommand}, args...)...)
	if asNobody {
		cmd.SysProcAttr = otheruser.AsNobody()
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := probeRun{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		run.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run memif-agent probe %q: %v", args, err)
	}
	return run
}

// TestProbeCommand: memif-agent probe exits 0 only when the probe passed,
// prints the agent's answer, and says why it failed.
func TestProbeCommand(t *testing.T) {
	needs.Root(t, "running memif-agent probe as the user nobody")
	configDir := agentConfigDir(t, nil)
	root := filepath.Dir(configDir)
	socket := filepath.Join(root, "api", "probe.sock")
	agent := startAgent(t, configDir)
	agent.waitReady(t)
	// nobody may run the binary and reach the socket's directory; the
	// socket itself keeps its mode.
	for _, dir := range []string{filepath.Dir(agentBinary), root, filepath.Dir(socket)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name       string
		asNobody   bool
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"liveness of a ready agent", false, []string{"-socket", socket, "liveness"}, 0, `"state": "OK"`, ""},
		{"readiness of a ready agent", false, []string{"-socket", socket, "readiness"}, 0, `"name": "devicemanager"`, ""},
		{"as a user other than root", true, []string{"-socket", socket, "liveness"}, 1, "", "lets only its owner (root) connect"},
		{"no agent there", false, []string{"-socket", filepath.Join(root, "none.sock"), "liveness"}, 1, "", "no socket at " + filepath.Join(root, "none.sock")},
		{"unknown probe", false, []string{"-socket", socket, "startup"}, 2, "", "want one probe, liveness or readiness"},
		{"no probe", false, []string{"-socket", socket}, 2, "", "want one probe, liveness or readiness"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := runProbeCommand(t, tc.asNobody, tc.args...)
			if run.code != tc.wantCode || !strings.Contains(run.stdout, tc.wantStdout) || !strings.Contains(run.stderr, tc.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q", run.code, run.stdout, run.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestProbeCommandWithoutKubelet: an agent kubelet has left is alive but
// not ready, and the readiness probe's output says why, for kubelet's
// event.
func TestProbeCommandWithoutKubelet(t *testing.T) {
	configDir := agentConfigDir(t, nil)
	root := filepath.Dir(configDir)
	kubeletSocket := filepath.Join(root, "device-plugins", "kubelet.sock")
	if err := os.Rename(kubeletSocket, kubeletSocket+".away"); err != nil {
		t.Fatal(err)
	}
	startAgent(t, configDir)
	socket := filepath.Join(root, "api", "probe.sock")
	failed := "not registered with kubelet at " + kubeletSocket
	poll.Until(t, 60*time.Second, "readiness failing, naming the failed registration with kubelet", func() error {
		run := runProbeCommand(t, false, "-socket", socket, "readiness")
		if run.code != 1 || !strings.Contains(run.stdout, failed) || !strings.Contains(run.stderr, "readiness failed: the agent answered 503") {
			return fmt.Errorf("exit %d, stdout %q, stderr %q", run.code, run.stdout, run.stderr)
		}
		return nil
	})
	if run := runProbeCommand(t, false, "-socket", socket, "liveness"); run.code != 0 {
		t.Errorf("liveness of an agent without kubelet: exit %d, %s; want 0: a restart does not bring kubelet back", run.code, run.stderr)
	}
}
