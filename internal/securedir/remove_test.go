package securedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contivpp/memif-agent/test/kit/capabilities"
)

// other is a user that is not the agent's: a pod's.
const other = 65534

// node makes one entry of a test tree: a directory when files is not nil.
type node struct {
	path  string
	mode  os.FileMode
	uid   int
	isDir bool
}

// build makes nodes under root, parents before children, then sets
// modes and owners deepest first, as a pod would leave them.
func build(t *testing.T, root string, nodes ...node) {
	t.Helper()
	for _, n := range nodes {
		path := filepath.Join(root, n.path)
		var err error
		if n.isDir {
			err = os.Mkdir(path, 0o700)
		} else {
			err = os.WriteFile(path, []byte("pod's"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		path := filepath.Join(root, nodes[i].path)
		if err := os.Lchown(path, nodes[i].uid, nodes[i].uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, nodes[i].mode); err != nil {
			t.Fatal(err)
		}
	}
}

func dir(path string, mode os.FileMode, uid int) node {
	return node{path: path, mode: mode, uid: uid, isDir: true}
}

func file(path string, mode os.FileMode, uid int) node {
	return node{path: path, mode: mode, uid: uid}
}

// TestRemoveAllWithChartCapabilities: with the chart's capabilities only
// (CHOWN; no DAC_OVERRIDE, no FOWNER) a directory its pod made unreadable
// or sticky was never removed, and the agent logged the failure at every
// collection. RemoveAll takes each such directory over and removes it.
func TestRemoveAllWithChartCapabilities(t *testing.T) {
	cases := []struct {
		name string
		tree []node
	}{
		{"a mode-000 directory of another user", []node{
			dir("victim", 0o755, 0), dir("victim/locked", 0o000, other), file("victim/locked/a", 0o600, other),
			dir("victim/locked/inner", 0o000, other), file("victim/locked/inner/b", 0o000, other)}},
		{"a mode-000 directory of the agent's user", []node{
			dir("victim", 0o755, 0), dir("victim/locked", 0o000, 0), file("victim/locked/a", 0o600, 0)}},
		{"a sticky directory of another user holding their files", []node{
			dir("victim", 0o755, 0), dir("victim/sticky", os.ModeSticky|0o777, other), file("victim/sticky/a", 0o600, other)}},
		{"the directory itself mode 000", []node{
			dir("victim", 0o000, 0), file("victim/a", 0o600, other)}},
		{"a read-only directory of another user", []node{
			dir("victim", 0o755, 0), dir("victim/ro", 0o555, other), file("victim/ro/a", 0o600, other)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, d := openTree(t, tc.tree...)
			err := capabilities.Run(capabilities.Chart, func() error {
				return d.RemoveAll(context.Background(), "victim")
			})
			if err != nil {
				t.Fatalf("RemoveAll with the chart's capabilities: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(root, "victim")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("victim after RemoveAll: %v, want it gone", err)
			}
		})
	}
}

// TestRemoveAllDeep: a tree whose paths are far longer than PATH_MAX is
// removed; directories below maxRemoveDepth come up into the Dir as new
// entries, which the caller removes in turn.
func TestRemoveAllDeep(t *testing.T) {
	const depth = 5 * maxRemoveDepth
	name := strings.Repeat("d", 40)
	root := t.TempDir()
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Mkdir(filepath.Join(root, "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(filepath.Join(root, "deep"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, name, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknodat(fd, "file", unix.S_IFREG|0o600, 0); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	if depth*len(name) <= unix.PathMax {
		t.Fatalf("the tree is only %d bytes deep", depth*len(name))
	}

	calls := 0
	for ; calls < 2*depth/maxRemoveDepth; calls++ {
		entries, err := d.Entries()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		for _, entry := range entries {
			if err := d.RemoveAll(context.Background(), entry.Name()); err != nil {
				t.Fatalf("RemoveAll of %s: %v", entry.Name(), err)
			}
		}
	}
	if entries, _ := d.Entries(); len(entries) != 0 {
		t.Errorf("after %d rounds of RemoveAll the directory holds %d entries, want none", calls, len(entries))
	}
}

// TestRemoveAllStops: an ended context stops RemoveAll, which leaves the
// rest for a later call.
func TestRemoveAllStops(t *testing.T) {
	root := t.TempDir()
	build(t, root, dir("full", 0o700, 0), file("full/a", 0o600, 0))
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.RemoveAll(ctx, "full"); !errors.Is(err, context.Canceled) {
		t.Errorf("RemoveAll with an ended context: %v, want %v", err, context.Canceled)
	}
	if _, err := os.Lstat(filepath.Join(root, "full", "a")); err != nil {
		t.Errorf("after a stopped RemoveAll: %v, want the rest left", err)
	}
	if err := d.RemoveAll(context.Background(), "full"); err != nil {
		t.Errorf("RemoveAll again: %v", err)
	}
}

// TestRemoveAllPaced: RemoveAllPaced calls pause after each batch of names
// it removed, a directory of many names taking several, and an error from
// pause stops it, leaving the rest for a later call.
func TestRemoveAllPaced(t *testing.T) {
	nodes := []node{dir("full", 0o700, 0)}
	for i := range 2000 {
		nodes = append(nodes, file(fmt.Sprintf("full/f%04d", i), 0o600, 0))
	}
	root := t.TempDir()
	build(t, root, nodes...)
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	errStop := errors.New("stop here")
	pauses := 0
	stopAtFirst := func(context.Context) error { pauses++; return errStop }
	if err := d.RemoveAllPaced(context.Background(), "full", stopAtFirst); !errors.Is(err, errStop) {
		t.Errorf("RemoveAllPaced stopped by its pause: %v, want %v", err, errStop)
	}
	left, err := os.ReadDir(filepath.Join(root, "full"))
	if err != nil || pauses != 1 || len(left) == 0 || len(left) == 2000 {
		t.Fatalf("after a pause that stops: %d pauses, %d of 2000 names left (%v), want 1 pause and some removed, some left", pauses, len(left), err)
	}
	pauses = 0
	count := func(context.Context) error { pauses++; return nil }
	if err := d.RemoveAllPaced(context.Background(), "full", count); err != nil {
		t.Fatalf("RemoveAllPaced again: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "full")); !os.IsNotExist(err) || pauses < 2 {
		t.Errorf("after RemoveAllPaced of %d names: %v and %d pauses, want it gone after several", len(left), err, pauses)
	}
}

func TestRemoveSmall(t *testing.T) {
	many := []node{dir("victim", 0o755, 0)}
	for i := range 17 {
		many = append(many, file(fmt.Sprintf("victim/f%d", i), 0o600, 0))
	}
	cases := []struct {
		name    string
		tree    []node
		removed bool
	}{
		{"a file", []node{file("victim", 0o600, other)}, true},
		{"a directory of a few files", []node{dir("victim", 0o770, 0), file("victim/memif.sock", 0o600, other), file("victim/memif.json", 0o644, 0)}, true},
		{"an empty directory", []node{dir("victim", 0o770, 0)}, true},
		{"missing", nil, true},
		{"a directory of too many files", many, false},
		{"a directory holding a directory", []node{dir("victim", 0o755, 0), dir("victim/sub", 0o755, 0)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, d := openTree(t, tc.tree...)
			if got := d.RemoveSmall("victim", 16); got != tc.removed {
				t.Errorf("RemoveSmall = %v, want %v", got, tc.removed)
			}
			_, err := os.Lstat(filepath.Join(root, "victim"))
			if gone := errors.Is(err, os.ErrNotExist); gone != tc.removed {
				t.Errorf("victim gone: %v (%v), want %v", gone, err, tc.removed)
			}
		})
	}
}

// TestMoveInto: with the chart's capabilities, a directory its pod made
// mode 000 is moved (a directory moved to another parent must be
// writable), and a link is moved, not what it points to.
func TestMoveInto(t *testing.T) {
	target := t.TempDir()
	cases := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"a mode-000 directory", func(t *testing.T, path string) {
			build(t, filepath.Dir(path), dir(filepath.Base(path), 0o000, 0), file(filepath.Base(path)+"/a", 0o600, other))
		}},
		{"a link to a directory", func(t *testing.T, path string) {
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.make(t, filepath.Join(root, "alloc"))
			d, err := Open(root, Options{Group: NoGroup})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			trash, err := d.PrivateDir("trash", true)
			if err != nil {
				t.Fatal(err)
			}
			defer trash.Close()
			var moved string
			err = capabilities.Run(capabilities.Chart, func() error {
				var err error
				moved, err = d.MoveInto("alloc", trash)
				return err
			})
			if err != nil {
				t.Fatalf("MoveInto with the chart's capabilities: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(root, "alloc")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("alloc after the move: %v, want it gone", err)
			}
			if _, err := os.Lstat(filepath.Join(root, "trash", moved)); err != nil || !strings.HasPrefix(moved, "alloc.") {
				t.Errorf("moved to %q: %v; want alloc.<suffix> in the trash", moved, err)
			}
			if info, err := os.Stat(target); err != nil || !info.IsDir() {
				t.Errorf("the link's target: %v, %v; want it untouched", info, err)
			}
		})
	}
}

func TestPrivateDir(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, path string)
		create  bool
		want    string // "" opens
	}{
		{"missing, made", func(*testing.T, string) {}, true, ""},
		{"missing, not made", func(*testing.T, string) {}, false, "no such file"},
		{"the agent's, 0755, tightened", mkdir(0o755, -1, -1), true, ""},
		{"another user's", mkdir(0o700, other, -1), true, "owned by uid 65534"},
		{"group-writable", mkdir(0o770, -1, 4242), true, "mode 0770"},
		{"a link", func(t *testing.T, path string) {
			if err := os.Symlink(t.TempDir(), path); err != nil {
				t.Fatal(err)
			}
		}, true, "symbolic link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.prepare(t, filepath.Join(root, "trash"))
			d, err := Open(root, Options{Group: NoGroup})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			sub, err := d.PrivateDir("trash", tc.create)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("PrivateDir = %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sub.Close()
			if info, err := os.Lstat(filepath.Join(root, "trash")); err != nil || info.Mode().Perm() != 0o700 || !info.IsDir() {
				t.Errorf("trash: %v, %v; want a directory of mode 0700", info, err)
			}
		})
	}
}

// openTree builds tree in a new temporary root and opens the root.
func openTree(t *testing.T, tree ...node) (string, *Dir) {
	t.Helper()
	root := t.TempDir()
	build(t, root, tree...)
	d, err := Open(root, Options{Group: NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return root, d
}
