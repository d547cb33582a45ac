// Package otheruser lets a test run its own binary as another local user
// (the hostile-input tests' "any local user"): go test's build directory
// lets only its owner in, so the binary is copied where anyone may run it.
package otheruser

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// nobodyID is the user and group ID of the unprivileged user nobody.
const nobodyID = 65534

// AsNobody is the SysProcAttr of a command run as the unprivileged user
// nobody (the caller being root).
func AsNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
}

// TestBinary returns a copy of the running test binary, named name, in a
// directory of its own that every user may enter and run from; tb's end
// removes it.
func TestBinary(tb testing.TB, name string) string {
	tb.Helper()
	content, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	binary := filepath.Join(dir, name)
	if err := os.WriteFile(binary, content, 0o755); err != nil {
		tb.Fatal(err)
	}
	return binary
}
