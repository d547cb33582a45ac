package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// gitOutput runs git in the checkout and returns its trimmed output.
func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Skipf("not in a git checkout (git %v: %v)", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestVersionPrintsTheBuild: memif-agent --version says the version and
// commit make build stamps (scripts/version.sh ldflags), and the VPP
// release its messages were generated from; it exits 0 whatever flags
// come with it, before any of them is checked.
func TestVersionPrintsTheBuild(t *testing.T) {
	root := gitOutput(t, "rev-parse", "--show-toplevel")
	ldflags, err := exec.Command(filepath.Join(root, "scripts", "version.sh"), "ldflags").Output()
	if err != nil {
		t.Fatalf("scripts/version.sh ldflags: %v", err)
	}
	stamped := filepath.Join(t.TempDir(), "memif-agent")
	build := exec.Command("go", "build", "-race", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", stamped, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build with scripts/version.sh's ldflags: %v\n%s", err, out)
	}
	// The checkout may change while the test runs: want what the build
	// was given.
	stamp := map[string]string{}
	for _, field := range strings.Fields(string(ldflags)) {
		if name, value, ok := strings.Cut(strings.TrimPrefix(field, "github.com/contivpp/memif-agent/internal/version."), "="); ok {
			stamp[name] = value
		}
	}
	if stamp["version"] == "" || len(strings.TrimSuffix(stamp["commit"], "-dirty")) != 40 {
		t.Fatalf("scripts/version.sh ldflags = %s, want the version and the full commit of the checkout", ldflags)
	}
	want := "memif-agent " + stamp["version"] + "\ngit commit: " + stamp["commit"] + "\nVPP release: " + vppmsg.VPPRelease + " (binary API messages generated from it)\n"

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"--version", []string{"--version"}},
		{"-version", []string{"-version"}},
		{"after other flags", []string{"-config-dir", filepath.Join(t.TempDir(), "missing"), "--version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(stamped, tc.args...)
			cmd.Env = append(os.Environ(), "VERSION=not-a-flag")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("memif-agent %v: %v\n%s", tc.args, err, out)
			}
			if string(out) != want {
				t.Errorf("memif-agent %v printed:\n%s\nwant:\n%s", tc.args, out, want)
			}
		})
	}
}

// TestVersionWithoutLdflags: a binary built by plain go build says it is
// a development build of an unknown commit.
func TestVersionWithoutLdflags(t *testing.T) {
	out, err := exec.Command(agentBinary, "--version").CombinedOutput()
	want := "memif-agent devel\ngit commit: unknown\nVPP release: " + vppmsg.VPPRelease + " (binary API messages generated from it)\n"
	if err != nil || string(out) != want {
		t.Errorf("memif-agent --version = %v, printed:\n%s\nwant:\n%s", err, out, want)
	}
}
