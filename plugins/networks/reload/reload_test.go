package reload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// waitLimit only bounds a wait for something that should happen.
const waitLimit = 20 * time.Second

// configMapDir lays out a directory as kubelet mounts a ConfigMap volume:
// the keys are links into ..data, a link to a timestamped directory that
// holds the files; an update writes a new timestamped directory and
// renames a new link over ..data.
type configMapDir struct {
	t       *testing.T
	dir     string
	version int
}

func newConfigMapDir(t *testing.T, files map[string]string) *configMapDir {
	c := &configMapDir{t: t, dir: t.TempDir()}
	c.update(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(c.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// update swaps in a new version of the files, as kubelet's atomic writer
// does.
func (c *configMapDir) update(files map[string]string) {
	c.t.Helper()
	c.version++
	versionDir := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", c.version, c.version)
	if err := os.Mkdir(filepath.Join(c.dir, versionDir), 0o755); err != nil {
		c.t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(c.dir, versionDir, name), []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(c.dir, "..data"))
	if err := os.Symlink(versionDir, filepath.Join(c.dir, "..data_tmp")); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(c.dir, "..data_tmp"), filepath.Join(c.dir, "..data")); err != nil {
		c.t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(c.dir, old)); err != nil {
			c.t.Fatal(err)
		}
	}
}

// recorder keeps what the watcher handed out.
type recorder struct {
	mu       sync.Mutex
	applied  []netconf.Config
	refusals []error
}

func (r *recorder) apply(cfg netconf.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, cfg)
}

func (r *recorder) refuse(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refusals = append(r.refusals, err)
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied), len(r.refusals)
}

// waitFor waits until the watcher has applied and refused as many.
func (r *recorder) waitFor(t *testing.T, applied, refused int) {
	t.Helper()
	poll.Until(t, waitLimit, fmt.Sprintf("%d configs applied and %d refused", applied, refused), func() error {
		if a, f := r.counts(); a != applied || f != refused {
			return fmt.Errorf("%d applied, %d refused", a, f)
		}
		return nil
	})
}

func (r *recorder) lastApplied() netconf.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[len(r.applied)-1]
}

func (r *recorder) lastRefusal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refusals[len(r.refusals)-1]
}

const (
	red     = "networks: [{name: red, type: l3, subnet: 10.70.0.0/24}]\n"
	redBlue = "networks: [{name: red, type: l3, subnet: 10.70.0.0/24}, {name: blue, type: l3, subnet: 10.80.0.0/24}]\n"
	redLab  = "networks: [{name: red, type: l3, subnet: 10.70.0.0/24}, {name: lab, type: l2}]\ndefault-network: lab\n"
)

func startWatcher(t *testing.T, path string, r *recorder) (*Watcher[netconf.Config], netconf.Config) {
	t.Helper()
	w, cfg, err := Start(Options[netconf.Config]{Path: path, Parse: netconf.Decode, Apply: r.apply, Refuse: r.refuse, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w, cfg
}

func names(cfg netconf.Config) string {
	var names []string
	for _, n := range cfg.Networks {
		names = append(names, n.Name)
	}
	return strings.Join(names, ",")
}

// TestConfigMapUpdates: each ConfigMap update reaches Apply; an invalid
// one is refused and the config stays; an update that leaves the file as
// it is (another key changed) is no new config.
func TestConfigMapUpdates(t *testing.T) {
	mount := newConfigMapDir(t, map[string]string{"networks.conf": red, "memifwiring.conf": "mtu: 9000\n"})
	r := &recorder{}
	_, initial := startWatcher(t, filepath.Join(mount.dir, "networks.conf"), r)
	if names(initial) != "red" {
		t.Fatalf("initial config has networks %s, want red", names(initial))
	}

	mount.update(map[string]string{"networks.conf": redBlue, "memifwiring.conf": "mtu: 9000\n"})
	r.waitFor(t, 1, 0)
	if got := names(r.lastApplied()); got != "red,blue" {
		t.Fatalf("applied networks %s, want red,blue", got)
	}

	mount.update(map[string]string{"networks.conf": "networks: [{name: green, type: l5}]\n", "memifwiring.conf": "mtu: 9000\n"})
	r.waitFor(t, 1, 1)
	if err := r.lastRefusal(); !strings.Contains(err.Error(), `type must be l3 or l2, got "l5"`) || !strings.Contains(err.Error(), "keeping the config applied before") {
		t.Fatalf("refusal %v, want the bad type named and the config kept", err)
	}

	// Another key's update leaves networks.conf as it was: nothing to
	// apply, nothing to refuse; the next real change is the next config.
	mount.update(map[string]string{"networks.conf": "networks: [{name: green, type: l5}]\n", "memifwiring.conf": "mtu: 1500\n"})
	mount.update(map[string]string{"networks.conf": redLab, "memifwiring.conf": "mtu: 1500\n"})
	r.waitFor(t, 2, 1)
	if got := r.lastApplied(); names(got) != "red,lab" || got.DefaultNetwork != "lab" {
		t.Fatalf("applied %+v, want red and lab, default lab", got)
	}

	// Back to the content applied before a refusal: applied again, which
	// clears the refusal.
	mount.update(map[string]string{"networks.conf": "networks: [\n", "memifwiring.conf": "mtu: 1500\n"})
	r.waitFor(t, 2, 2)
	mount.update(map[string]string{"networks.conf": redLab, "memifwiring.conf": "mtu: 1500\n"})
	r.waitFor(t, 3, 2)
}

// TestPlainFileWrites: a file edited in place (not a ConfigMap) is
// followed too, and a file that goes missing or grows past the bound is
// refused.
func TestPlainFileWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.conf")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(red)
	r := &recorder{}
	startWatcher(t, path, r)
	write(redBlue)
	r.waitFor(t, 1, 0)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 1, 1)
	if err := r.lastRefusal(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refusal of a missing file = %v, want fs.ErrNotExist", err)
	}
	// The large file is renamed into place: written in place, the watcher
	// may read it half-written, a valid config below the size limit, and
	// apply that before it refuses the whole.
	large := filepath.Join(dir, "large.tmp")
	if err := os.WriteFile(large, []byte(red+"#"+strings.Repeat("x", configfile.MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(large, path); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 1, 2)
	if err := r.lastRefusal(); !strings.Contains(err.Error(), "larger than the 1048576 bytes") {
		t.Fatalf("refusal of a large file = %v", err)
	}
	write(redBlue)
	r.waitFor(t, 2, 2)
}

// TestStartRefuses: a file Start cannot apply is an error naming it, at
// once: a FIFO does not hang the agent's start.
func TestStartRefuses(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.conf")
	if err := os.WriteFile(invalid, []byte("networks: [{name: a}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, wantErr string
		mayBeMissing        bool
	}{
		{"missing file", filepath.Join(dir, "absent.conf"), "no such file", false},
		{"missing directory", filepath.Join(dir, "absent", "networks.conf"), "watch the directory", true},
		{"invalid file", invalid, "type must be l3 or l2", true},
		{"FIFO", fifo, "is a named pipe (FIFO), not a regular file; make it a regular file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			done := make(chan error, 1)
			go func() {
				w, _, err := Start(Options[netconf.Config]{Path: tc.path, Parse: netconf.Decode, Apply: r.apply, Refuse: r.refuse, MayBeMissing: tc.mayBeMissing})
				if err == nil {
					w.Stop()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(waitLimit):
				unblockFIFO(tc.path)
				t.Fatalf("Start(%s) still blocked after %s", tc.path, waitLimit)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Start(%s) = %v, want an error naming the file and containing %q", tc.path, err, tc.wantErr)
			}
		})
	}
}

// unblockFIFO opens the FIFO at path for writing and closes it, so that
// a reader blocked in opening it goes on (and the test can end).
func unblockFIFO(path string) {
	if writer, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		writer.Close()
	}
}

// TestFIFORefusedLive: a version that is a FIFO is refused naming what it
// is, the config applied before stays, a later regular file is applied,
// and Stop returns.
func TestFIFORefusedLive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.conf")
	if err := os.WriteFile(path, []byte(red), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	w, _, err := Start(Options[netconf.Config]{Path: path, Parse: netconf.Decode, Apply: r.apply, Refuse: r.refuse, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	t.Cleanup(func() {
		go func() {
			w.Stop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(waitLimit):
			unblockFIFO(path)
			t.Errorf("Stop still blocked after %s", waitLimit)
			<-stopped
		}
	})
	fifo := filepath.Join(dir, "fifo.tmp")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 0, 1)
	if err := r.lastRefusal(); !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is a named pipe (FIFO), not a regular file") ||
		!strings.Contains(err.Error(), "keeping the config applied before") {
		t.Fatalf("refusal of a FIFO = %v, want the file named, what it is, and the config kept", err)
	}
	next := filepath.Join(dir, "next.tmp")
	if err := os.WriteFile(next, []byte(redBlue), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 1, 1)
	if got := names(r.lastApplied()); got != "red,blue" {
		t.Fatalf("applied networks %s after the FIFO, want red,blue", got)
	}
}

// TestMissingFileAppliedWhenWritten: with MayBeMissing, a file missing at
// Start is Parse's nil content, other files of its directory changing are
// nothing, and the file written later is applied. Removed, it is refused
// once however the directory changes, and written again it is applied.
func TestMissingFileAppliedWhenWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.conf")
	other := filepath.Join(dir, "memifwiring.conf")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := &recorder{}
	var parsedNil bool
	parse := func(content []byte) (netconf.Config, error) {
		if content == nil {
			parsedNil = true
		}
		return netconf.Decode(content)
	}
	w, initial, err := Start(Options[netconf.Config]{Path: path, Parse: parse, Apply: r.apply, Refuse: r.refuse, Debounce: 20 * time.Millisecond, MayBeMissing: true})
	if err != nil {
		t.Fatalf("Start with the file missing: %v", err)
	}
	t.Cleanup(w.Stop)
	if !parsedNil || len(initial.Networks) != 0 {
		t.Fatalf("Start with the file missing parsed nil content: %v, networks %s; want true and none", parsedNil, names(initial))
	}
	write(other, "mtu: 9000\n")
	write(path, red)
	r.waitFor(t, 1, 0)
	if got := names(r.lastApplied()); got != "red" {
		t.Fatalf("applied networks %s, want red", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 1, 1)
	if err := r.lastRefusal(); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("refusal of a removed file = %v, want fs.ErrNotExist, saying it was removed", err)
	}
	write(other, "mtu: 1500\n")
	write(path, red)
	// The one refusal of the removal, and red applied again.
	r.waitFor(t, 2, 1)
}

// TestStopEndsDelivery: after Stop returns nothing is applied, however
// the file changes, and Stop may be called again.
func TestStopEndsDelivery(t *testing.T) {
	mount := newConfigMapDir(t, map[string]string{"networks.conf": red})
	path := filepath.Join(mount.dir, "networks.conf")
	first, still := &recorder{}, &recorder{}
	w, _ := startWatcher(t, path, first)
	startWatcher(t, path, still)
	mount.update(map[string]string{"networks.conf": redBlue})
	first.waitFor(t, 1, 0)
	still.waitFor(t, 1, 0)
	w.Stop()
	w.Stop()
	mount.update(map[string]string{"networks.conf": redLab})
	// The watcher still running sees the change, so the stopped one
	// would have by now.
	still.waitFor(t, 2, 0)
	if applied, refused := first.counts(); applied != 1 || refused != 0 {
		t.Fatalf("after Stop the watcher applied %d and refused %d, want 1 and 0", applied, refused)
	}
}

// TestReloadSeesEachVersionOnce: reading the file again after a change
// elsewhere in the directory hands nothing out when the content is the
// one seen last, valid or not.
func TestReloadSeesEachVersionOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "networks.conf")
	r := &recorder{}
	w := &Watcher[netconf.Config]{
		opts:     Options[netconf.Config]{Path: path, Parse: netconf.Decode, Apply: r.apply, Refuse: r.refuse},
		lastSeen: []byte(red),
	}
	for i, step := range []struct {
		content          string // "" removes the file
		applied, refused int
	}{
		{red, 0, 0},
		{redBlue, 1, 0},
		{redBlue, 1, 0},
		{"networks: [\n", 1, 1},
		{"networks: [\n", 1, 1},
		{redBlue, 2, 1},
		{"", 2, 2},
		{"", 2, 2},
		{redBlue, 3, 2},
	} {
		var err error
		if step.content == "" {
			err = os.Remove(path)
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		} else {
			err = os.WriteFile(path, []byte(step.content), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.reload()
		if applied, refused := r.counts(); applied != step.applied || refused != step.refused {
			t.Fatalf("step %d: %d applied and %d refused, want %d and %d", i+1, applied, refused, step.applied, step.refused)
		}
	}
}
