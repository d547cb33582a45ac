package manager_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsafeSocketRootRefused: a socket root another user could write to
// would let them redirect, by a link, the directories the agent makes,
// chmods and removes as root. Allocate is refused with a message naming
// the root, its owner and mode, and nothing is made in it.
func TestUnsafeSocketRootRefused(t *testing.T) {
	cases := []struct {
		name string
		uid  int
		mode os.FileMode
		want string
	}{
		{"world-writable", 0, 0o777, "owned by uid 0 gid 0 with mode 0777"},
		{"group-writable", 0, 0o770, "with mode 0770"},
		{"another user's", 65534, 0o755, "owned by uid 65534"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			if err := os.Mkdir(cfg.SocketRoot, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(cfg.SocketRoot, tc.uid, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(cfg.SocketRoot, tc.mode); err != nil {
				t.Fatal(err)
			}
			a := startAgent(t, cfg, nil)
			_, err := allocate(a, []string{"memif-000"})
			if err == nil || !strings.Contains(err.Error(), cfg.SocketRoot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Allocate with a %s socket root: %v; want refused, naming %s and %q", tc.name, err, cfg.SocketRoot, tc.want)
			}
			if entries, _ := os.ReadDir(cfg.SocketRoot); len(entries) != 0 {
				t.Errorf("the refused socket root holds %v, want nothing", entries)
			}
		})
	}
}

// TestSocketRootMadeTight: a socket root the agent makes is 0700 whatever
// the umask.
func TestSocketRootMadeTight(t *testing.T) {
	cfg := testConfig(t)
	cfg.SocketRoot = filepath.Join(cfg.SocketRoot, "nested")
	a := startAgent(t, cfg, nil)
	if _, err := allocate(a, []string{"memif-000"}); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(cfg.SocketRoot); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("socket root made by the agent: %v, %v; want mode 0700", info, err)
	}
}
