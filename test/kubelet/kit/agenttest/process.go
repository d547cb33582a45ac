package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/plugins/health/probesocket"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// Launch runs the agent without waiting for it; the log file is appended.
func (a *Agent) Launch() {
	a.tb.Helper()
	logFile, err := os.OpenFile(a.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		a.tb.Fatalf("open agent log: %v", err)
	}
	defer logFile.Close()
	a.cmd = exec.Command(filepath.Join(binDir, "memif-agent"), append([]string{"-config-dir", a.ConfigDir}, a.Args...)...)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		a.tb.Fatalf("start memif-agent: %v", err)
	}
	exited := make(chan struct{})
	a.exited = exited
	cmd := a.cmd
	go func() {
		a.waitErr = cmd.Wait()
		close(exited)
	}()
}

// Start runs the agent and waits until its device plugin socket is there
// and its readiness probe passes (the startup resync done); it
// returns how long that took from the process start.
func (a *Agent) Start() time.Duration {
	a.tb.Helper()
	started := time.Now()
	a.Launch()
	poll.Every(a.tb, WaitTimeout, a.readyPoll, "memif-agent ready", a.ready)
	return time.Since(started)
}

// ready says why the agent is not ready yet; it fails the test when the
// agent has exited.
func (a *Agent) ready() error {
	select {
	case <-a.exited:
		a.tb.Fatalf("memif-agent exited at start (%v); its log ends with:\n%s", a.waitErr, a.LogTail(30))
	default:
	}
	if _, err := os.Stat(a.PluginSocket); err != nil {
		return fmt.Errorf("no device plugin socket: %w", err)
	}
	return a.probe(probesocket.ReadinessPath)
}

// Running tells whether the last started process has not exited.
func (a *Agent) Running() bool {
	if a.exited == nil {
		return false
	}
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// PID is the process ID of the last started process.
func (a *Agent) PID() int { return a.cmd.Process.Pid }

// Kill sends SIGKILL and waits for the process to be gone.
func (a *Agent) Kill() {
	if !a.Running() {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// Stop sends SIGTERM and waits; an agent that ignores it is killed and
// fails the test.
func (a *Agent) Stop() {
	a.tb.Helper()
	if !a.Running() {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(stopTimeout):
		a.Kill()
		a.tb.Fatalf("memif-agent ignored SIGTERM for %s", stopTimeout)
	}
}

// WaitExit waits for an agent expected to stop by itself (a refused
// config) and returns its exit error.
func (a *Agent) WaitExit() error {
	a.tb.Helper()
	select {
	case <-a.exited:
		return a.waitErr
	case <-time.After(WaitTimeout):
		a.Kill()
		a.tb.Fatalf("memif-agent still running %s after start", WaitTimeout)
		return nil
	}
}

// Log returns everything the agent has logged so far.
func (a *Agent) Log() string {
	a.tb.Helper()
	content, err := os.ReadFile(a.LogPath)
	if err != nil {
		a.tb.Fatalf("read agent log: %v", err)
	}
	return string(content)
}

// LogTail returns the log's last lines, or why it cannot be read.
func (a *Agent) LogTail(lines int) string {
	content, err := os.ReadFile(a.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", a.LogPath, err)
	}
	all := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
