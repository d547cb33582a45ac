package securedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestReplaceFile: the file is replaced whole with the mode asked for,
// whatever the umask, and no temporary file stays; a rename that fails
// leaves the old content and no temporary file either.
func TestReplaceFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, root string)
		want    string // the file's content after
		wantErr string
	}{
		{name: "new", want: "new"},
		{name: "over an old one", prepare: func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(root, "state.json"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "new"},
		{name: "over a directory that is not empty", prepare: func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "state.json", "inside"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "rename"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.prepare != nil {
				tc.prepare(t, root)
			}
			d, err := Open(root, Options{Group: NoGroup})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			umask := syscall.Umask(0o077)
			err = d.ReplaceFile("state.json", []byte("new"), 0o640)
			syscall.Umask(umask)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReplaceFile: %v, want an error with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				info, err := os.Stat(filepath.Join(root, "state.json"))
				if err != nil || info.Mode().Perm() != 0o640 {
					t.Errorf("state.json: %v (%v), want mode 0640", info.Mode(), err)
				}
				if content, err := os.ReadFile(filepath.Join(root, "state.json")); err != nil || string(content) != tc.want {
					t.Errorf("state.json holds %q (%v), want %q", content, err, tc.want)
				}
			}
			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, entry := range entries {
				if strings.Contains(entry.Name(), ".tmp-") {
					t.Errorf("temporary file %s left", entry.Name())
				}
			}
		})
	}
}

// TestRemoveTemps: the temporary files CreateTemp made for a name are
// removed, and nothing else: not the file itself, not another name's
// temporary files, not a look-alike, not a directory.
func TestRemoveTemps(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var made []string
	for range 2 {
		tempName, temp, err := d.CreateTemp("state.json", 0o600)
		if err != nil {
			t.Fatal(err)
		}
		temp.Close()
		made = append(made, tempName)
	}
	kept := []string{"state.json", ".other.json.tmp-0123456789abcdef", ".state.json.tmp-notahexsuffix00", ".state.json.tmp-0123"}
	for _, name := range kept {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, ".state.json.tmp-fedcba9876543210"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, ".state.json.tmp-fedcba9876543210")
	removed, err := d.RemoveTemps("state.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range made {
		made[i] = filepath.Join(root, name)
	}
	slices.Sort(made)
	if slices.Sort(removed); !slices.Equal(removed, made) {
		t.Errorf("removed %q, want the temporary files %q", removed, made)
	}
	for _, name := range made {
		if _, err := os.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}
