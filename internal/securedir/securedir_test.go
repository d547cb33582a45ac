package securedir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesWhatOthersCanChange(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, path string)
		opts    Options
		want    string // "" opens
	}{
		{"agent's, 0700", mkdir(0o700, -1, -1), Options{Group: NoGroup}, ""},
		{"agent's, 0755", mkdir(0o755, -1, -1), Options{Group: NoGroup}, ""},
		{"world-writable", mkdir(0o777, -1, -1), Options{Group: NoGroup}, "mode 0777"},
		{"world-writable sticky", mkdir(0o1777, -1, -1), Options{Group: NoGroup}, "mode 01777"},
		{"group-writable", mkdir(0o770, -1, 4242), Options{Group: NoGroup}, "gid 4242 with mode 0770"},
		{"group-writable by the configured group", mkdir(0o770, -1, 4242), Options{Group: 4242}, ""},
		{"group-writable by another group", mkdir(0o770, -1, 4243), Options{Group: 4242}, "than gid 4242"},
		{"another user's", mkdir(0o700, 65534, -1), Options{Group: NoGroup}, "owned by uid 65534"},
		{"a symbolic link to the agent's directory", func(t *testing.T, path string) {
			target := t.TempDir()
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, Options{Create: true, Mode: 0o700, Group: NoGroup}, "symbolic link"},
		{"missing, created", func(*testing.T, string) {}, Options{Create: true, Mode: 0o700, Group: NoGroup}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "root")
			tc.prepare(t, path)
			d, err := Open(path, tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				d.Close()
				return
			}
			if err == nil {
				d.Close()
				t.Fatalf("Open(%s) succeeded; want it refused (%s)", tc.name, tc.want)
			}
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open error = %v; want ErrUnsafe naming %s and %q", err, path, tc.want)
			}
		})
	}
}

func mkdir(mode os.FileMode, uid, gid int) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Chmod(path, uint32(mode)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenCreatesWithExactMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "a", "root")
	d, err := Open(path, Options{Create: true, Mode: 0o711, Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o711 {
		t.Errorf("created directory: %v, %v; want mode 0711", info, err)
	}
}

// TestOpenNamesWhatIsInTheWay: Open, told to create, names what keeps it
// from the directory: a file where a parent should be, or a file at the
// directory's path.
func TestOpenNamesWhatIsInTheWay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    func(file string) string
		wantErr string
	}{
		{"a parent is a file", func(file string) string { return filepath.Join(file, "root") }, "create parent of"},
		{"the path is a file", func(file string) string { return file }, "symbolic link or not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			path := tc.path(file)
			d, err := Open(path, Options{Create: true, Mode: 0o700, Group: NoGroup})
			if err == nil {
				d.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open(%s) = %v; want an error naming it and containing %q", path, err, tc.wantErr)
			}
		})
	}
}

// TestNothingFollowsALink plants links where the agent expects its own
// files and directories: every operation refuses or removes the link,
// and the link's target is untouched.
func TestNothingFollowsALink(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	victimDir := t.TempDir()
	if err := os.Chmod(victimDir, 0o700); err != nil {
		t.Fatal(err)
	}
	victimFile := filepath.Join(victimDir, "victim")
	if err := os.WriteFile(victimFile, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(t *testing.T, name, target string) {
		t.Helper()
		os.Remove(filepath.Join(root, name))
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		run  func(t *testing.T) error
		fail bool
	}{
		{"Mkdir over a link to a directory", func(t *testing.T) error {
			link(t, "dir", victimDir)
			_, err := d.Mkdir("dir", 0o770, 4242, true)
			return err
		}, true},
		{"OpenFile of a link to a file", func(t *testing.T) error {
			link(t, "file", victimFile)
			f, err := d.OpenFile("file", os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, true},
		{"OpenFile creating over a link", func(t *testing.T) error {
			link(t, "file", victimFile)
			f, err := d.OpenFile("file", os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		}, true},
		{"RemoveAll of a link to a directory", func(t *testing.T) error {
			link(t, "dir", victimDir)
			return d.RemoveAll(context.Background(), "dir")
		}, false},
		{"RemoveAll of a directory holding a link", func(t *testing.T) error {
			if _, err := d.Mkdir("holder", 0o700, NoGroup, false); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victimDir, filepath.Join(root, "holder", "link")); err != nil {
				t.Fatal(err)
			}
			return d.RemoveAll(context.Background(), "holder")
		}, false},
		{"a name with a slash", func(t *testing.T) error {
			_, err := d.Mkdir("../escape", 0o700, NoGroup, false)
			return err
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if tc.fail != (err != nil) {
				t.Errorf("error = %v; want failure: %v", err, tc.fail)
			}
			content, err := os.ReadFile(victimFile)
			info, statErr := os.Stat(victimFile)
			if err != nil || string(content) != "victim" || statErr != nil || info.Mode().Perm() != 0o644 {
				t.Fatalf("the link's target changed: %q %v %v", content, info, err)
			}
			st := info.Sys().(*syscall.Stat_t)
			dirInfo, _ := os.Stat(victimDir)
			if st.Gid != 0 || dirInfo.Sys().(*syscall.Stat_t).Gid != 0 || dirInfo.Mode().Perm() != 0o700 {
				t.Fatalf("the link's target's owner or mode changed: file gid %d, dir %v", st.Gid, dirInfo.Mode())
			}
		})
	}
}

func TestOpenFileRefusesAFIFO(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.ReadFile("fifo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile of a FIFO = %v; want refused as not a regular file", err)
	}
}
