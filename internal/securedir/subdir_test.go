package securedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenDir(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "shared"), 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(root, "shared"), -1, 4242); err != nil {
		t.Skipf("changing a directory's group needs root: %v", err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct{ name, wantErr string }{
		{"shared", ""},
		{"link", "symbolic link"},
		{"file", "not a directory"},
		{"absent", "no such file"},
		{"../shared", "not a plain file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := d.OpenDir(tc.name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("OpenDir(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if gid, err := sub.Group(); err != nil || gid != 4242 {
				t.Errorf("Group() = %d, %v; want 4242", gid, err)
			}
			if sub.Path() != filepath.Join(root, "shared") {
				t.Errorf("Path() = %s", sub.Path())
			}
		})
	}
}
