package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/otheruser"
)

func TestAgentNotRunning(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "api.sock")
	stale := filepath.Join(dir, "stale.sock")
	leaveStaleSocket(t, stale)
	for _, tc := range []struct {
		name, socket, wantStderr string
	}{
		{"no socket", missing, fmt.Sprintf("memifctl: memif-agent is not running: no API socket at %s (is the agent started? --socket)\n", missing)},
		{"socket left by a stopped agent", stale, fmt.Sprintf("memifctl: memif-agent is not running: nothing answers on the API socket %s (is the agent started? --socket)\n", stale)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runMemifctl(t, "--socket", tc.socket, "list")
			if code != exitError || stdout != "" || stderr != tc.wantStderr {
				t.Errorf("memifctl list: exit %d, stdout %q, stderr %q; want exit %d and stderr %q",
					code, stdout, stderr, exitError, tc.wantStderr)
			}
		})
	}
}

func leaveStaleSocket(t *testing.T, path string) {
	t.Helper()
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	listener.SetUnlinkOnClose(false)
	listener.Close()
}

func TestCommandErrors(t *testing.T) {
	socket := startPopulatedAgent(t, false).socket
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"pod without memif", []string{"get", "default/db"}, exitError, "memifctl: pod default/db has no memif allocation\n"},
		{"pod name not valid", []string{"get", "Default/web"}, exitError, "memifctl: invalid namespace \"Default\""},
		{"pod without namespace", []string{"get", "web"}, exitUsage, "memifctl: usage: invalid pod \"web\": want NAMESPACE/NAME\n"},
		{"no history in the agent", []string{"events"}, exitError, "memifctl: get event history: event history is not available in this agent\n"},
		{"no command", nil, exitUsage, "memifctl: usage: no command given\n"},
		{"unknown command", []string{"delete"}, exitUsage, "memifctl: usage: unknown command \"delete\"\n"},
		{"unknown output", []string{"list", "-o", "yaml"}, exitUsage, "memifctl: usage: unknown output format \"yaml\": want table or json\n"},
		{"since on list", []string{"list", "--since", "3"}, exitUsage, "memifctl: usage: --since and --last apply only to the events command\n"},
		{"get without pod", []string{"get"}, exitUsage, "memifctl: usage: get takes 1 argument(s), got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runMemifctl(t, append([]string{"--socket", socket}, tc.args...)...)
			if code != tc.wantCode || stdout != "" || !strings.HasPrefix(stderr, tc.wantStderr) {
				t.Errorf("memifctl %v: exit %d, stdout %q, stderr %q; want exit %d and stderr starting %q",
					tc.args, code, stdout, stderr, tc.wantCode, tc.wantStderr)
			}
		})
	}
}

func TestHelpGoesToStderrAndSucceeds(t *testing.T) {
	stdout, stderr, code := runMemifctl(t, "-h")
	if code != exitOK || stdout != "" || !strings.Contains(stderr, "memifctl [flags] get NAMESPACE/POD") {
		t.Errorf("memifctl -h: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// runAsUserEnv makes the test binary run memifctl with the arguments in it
// (separated by newlines) instead of the tests: TestPermissionDenied runs
// itself as an unprivileged user that way.
const runAsUserEnv = "MEMIFCTL_TEST_RUN_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(runAsUserEnv); ok {
		var out, errOut bytes.Buffer
		code := run(context.Background(), strings.Split(args, "\n"), &out, &errOut)
		os.Stdout.Write(out.Bytes())
		os.Stderr.Write(errOut.Bytes())
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestPermissionDenied(t *testing.T) {
	needs.Root(t, "running memifctl as the unprivileged user nobody against root's 0600 socket")
	socket := startAgent(t, false).socket
	binary := copyTestBinary(t)
	// The binary and the socket's directory must be reachable by nobody
	// (t.TempDir makes them 0700); the socket itself stays 0600.
	for _, dir := range []string{filepath.Dir(filepath.Dir(socket)), filepath.Dir(socket), filepath.Dir(binary)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary)
	cmd.Env = []string{runAsUserEnv + "=--socket\n" + socket + "\nlist"}
	cmd.SysProcAttr = otheruser.AsNobody()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	want := fmt.Sprintf("memifctl: cannot use the memif-agent API socket %s: permission denied: run as root or a user that can read %s\n", socket, socket)
	if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != exitError || stderr.String() != want {
		t.Errorf("memifctl list as nobody: %v, stderr %q; want exit %d and %q", err, stderr.String(), exitError, want)
	}
}

// copyTestBinary puts this test binary where the user nobody can run it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "memifctl.test")
	if err := os.WriteFile(binary, content, 0o755); err != nil {
		t.Fatal(err)
	}
	return binary
}
