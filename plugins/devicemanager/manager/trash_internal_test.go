package manager

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/test/kit/capabilities"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// podUID is the user a pod's files belong to.
const podUID = 65534

// newTrashedManager is a manager whose allocation's directory holds a
// mode-000 subdirectory of the pod's user, with files, as a pod leaves it;
// the directory is released with the chart's capabilities. It returns the
// manager, its log, the trash's path and the clock the manager reads.
func newTrashedManager(t *testing.T) (*Manager, *testlog.Logger, string, *time.Time) {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.PluginDir, cfg.SocketRoot, cfg.CheckpointPath, cfg.DeviceInfoDir = dir+"/dp", dir+"/memif", dir+"/state/cp.json", dir+"/devinfo"
	log := testlog.Recording()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := New(cfg, Options{Log: log, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a := allocation.Allocation{ID: "memif-000-abc", HostDir: m.hostDir("memif-000-abc")}
	if err := m.makeDir(a); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(a.HostDir, "locked")
	for _, d := range []string{locked, filepath.Join(locked, "inner")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := os.WriteFile(filepath.Join(d, "f"+string(rune('0'+i))), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{filepath.Join(locked, "inner"), locked} {
		if err := os.Chown(d, podUID, podUID); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := capabilities.Run(capabilities.Chart, func() error { return m.removeDir(a) }); err != nil {
		t.Fatalf("releasing the directory with the chart's capabilities: %v", err)
	}
	if _, err := os.Lstat(a.HostDir); !os.IsNotExist(err) {
		t.Fatalf("the released directory is still at %s: %v", a.HostDir, err)
	}
	return m, log, filepath.Join(cfg.SocketRoot, trashName), &now
}

func trashEntries(t *testing.T, trash string) []string {
	t.Helper()
	entries, err := os.ReadDir(trash)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestRemovalWithChartCapabilities: with the chart's capabilities only
// (CHOWN: no DAC_OVERRIDE, no FOWNER), a pod's mode-000 subdirectory made
// the removal of its allocation's directory fail for ever, logged at
// every collection. Now the directory is removed, and nothing is logged
// as failing.
func TestRemovalWithChartCapabilities(t *testing.T) {
	m, log, trash, _ := newTrashedManager(t)
	if err := capabilities.Run(capabilities.Chart, func() error {
		m.remover.empty(context.Background())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left := trashEntries(t, trash); len(left) != 0 {
		t.Errorf("the trash after the remover ran with the chart's capabilities: %v, want empty", left)
	}
	for _, line := range log.Lines() {
		if strings.HasPrefix(line, "WARN") || strings.HasPrefix(line, "ERROR") {
			t.Errorf("logged %q", line)
		}
	}
}

// TestFailedRemovalRetriedWithBackoff: a removal that fails (here with no
// capability at all, so the pod's directory cannot be taken over) is
// logged once, retried only once its backoff has passed, each backoff
// twice the last, and removed once it can be.
func TestFailedRemovalRetriedWithBackoff(t *testing.T) {
	m, log, trash, now := newTrashedManager(t)
	var attempts []time.Time
	m.remover.beforeRemove = func(string) { attempts = append(attempts, *now) }
	start := *now
	// Each step moves the clock on by advance, then runs the remover.
	steps := []struct {
		advance  time.Duration
		attempts int
	}{
		{0, 1},
		{0, 1},
		{firstRetry / 2, 1},
		{firstRetry / 2, 2},
		{firstRetry, 2},
		{firstRetry, 3},
	}
	for i, step := range steps {
		*now = now.Add(step.advance)
		if err := capabilities.Run(nil, func() error {
			m.remover.empty(context.Background())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(attempts) != step.attempts {
			t.Fatalf("step %d, %v after the first attempt: %d attempts, want %d", i, now.Sub(start), len(attempts), step.attempts)
		}
	}
	warned := slices.DeleteFunc(log.Lines(), func(line string) bool { return !strings.HasPrefix(line, "WARN") })
	if len(warned) != 1 || !strings.Contains(warned[0], "not logged again") || !strings.Contains(warned[0], trash) {
		t.Errorf("warnings after 3 failed attempts: %q, want one naming the directory", warned)
	}
	if left := trashEntries(t, trash); len(left) != 1 {
		t.Fatalf("the trash holds %v, want the directory that failed", left)
	}

	*now = now.Add(4 * firstRetry)
	if err := capabilities.Run(capabilities.Chart, func() error {
		m.remover.empty(context.Background())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left := trashEntries(t, trash); len(left) != 0 || len(attempts) != 4 {
		t.Errorf("after the backoff, with the chart's capabilities: trash %v after %d attempts, want it empty after 4", left, len(attempts))
	}
	if lines := log.Lines(); !strings.Contains(lines[len(lines)-1], "after failed attempts") {
		t.Errorf("last line %q, want the removal reported", lines[len(lines)-1])
	}
}

// TestRemoverYieldsToTheDeviceManager: the remover unlinked a flooded
// directory while other pods' kubelet calls and events were handled, and
// its unlinks went into their checkpoint's journal commit. Now it waits
// for the device manager to be idle before each batch, and still empties
// the trash when the device manager is never idle.
func TestRemoverYieldsToTheDeviceManager(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handling bool
		yields   bool
	}{
		{name: "idle", handling: false, yields: false},
		{name: "never idle", handling: true, yields: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, trash, _ := newTrashedManager(t)
			yields := 0
			m.remover.yielded = func() { yields++ }
			if tc.handling {
				m.remover.activity.begin()
				defer m.remover.activity.end()
			}
			m.remover.empty(context.Background())
			if left := trashEntries(t, trash); len(left) != 0 {
				t.Errorf("the trash holds %v, want it emptied", left)
			}
			if got := yields > 0; got != tc.yields {
				t.Errorf("the remover waited %d times for the device manager's work, want waits: %v", yields, tc.yields)
			}
		})
	}
}
