package assign_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/assign"
)

// TestOriginsFile: the origins are kept in networks-origins.json beside
// networks.json. A memif that memifwiring.conf put in its bridge domain
// leaves it when the agent restarts with l2-xconnect; without its origin
// (the file missing, of a later version, or not knowing the record) it is
// taken for a record of before and keeps its network. A file that cannot
// be read stops the start, naming it and what to do.
func TestOriginsFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// origins replaces the file written; "-": removed; "": kept.
		origins string
		want    string // the memif's network after the restart
		wantErr string
	}{
		{name: "as written", want: ""},
		{name: "as this version writes it", origins: `{"version":1,"allocations":{"alloc":{"pod":"default/p","origins":["memifwiring"]}}}`, want: ""},
		{name: "missing", origins: "-", want: "pods"},
		{name: "of another allocation", origins: `{"version":1,"allocations":{"gone":{"pod":"default/p","origins":["memifwiring"]}}}`, want: "pods"},
		{name: "of another pod", origins: `{"version":1,"allocations":{"alloc":{"pod":"default/q","origins":["memifwiring"]}}}`, want: "pods"},
		{name: "of another number of memifs", origins: `{"version":1,"allocations":{"alloc":{"pod":"default/p","origins":["memifwiring","named"]}}}`, want: "pods"},
		{name: "of a later version", origins: `{"version":2,"memifs":{}}`, want: "pods"},
		{name: "cut short", origins: `{"version":1,`, wantErr: "unexpected end of JSON input"},
		{name: "not JSON", origins: `version 1`, wantErr: "invalid character"},
		{name: "empty", origins: " ", wantErr: "unexpected end of JSON input"},
		{name: "a field unknown", origins: `{"version":1,"allocations":{},"memifs":{}}`, wantErr: `unknown field "memifs"`},
		{name: "an origin unknown", origins: `{"version":1,"allocations":{"alloc":{"pod":"default/p","origins":["elsewhere"]}}}`, wantErr: `unknown origin "elsewhere"`},
		{name: "without a version", origins: `{"allocations":{}}`, wantErr: "version 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, originsPath := filepath.Join(dir, "networks.json"), filepath.Join(dir, "networks-origins.json")
			a, _ := startAgent(t, path, bridged)
			a.Record("alloc", "default/p", "app", 1, "")
			if err := a.Save(); err != nil {
				t.Fatal(err)
			}
			switch tc.origins {
			case "":
			case "-":
				if err := os.Remove(originsPath); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(originsPath, []byte(tc.origins), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			restarted, err := assign.Open(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), originsPath) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "move it away") {
					t.Fatalf("Open: %v, want an error naming %s, %q and what to do", err, originsPath, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			restarted.SetWiringBridgeDomain(crossConnected.bridgeDomain)
			restarted.FollowWiring(crossConnected.networks.DefaultNetwork)
			restarted.SetNetworks(crossConnected.networks)
			if got := restarted.Resolve("alloc")[0]; got.Refused != nil || got.Memif.Network.Name != tc.want {
				t.Errorf("the memif is in %q (refused: %v), want %q", got.Memif.Network.Name, got.Refused, tc.want)
			}
		})
	}
}

// TestOriginsWrittenBeforeTheState: when networks.json cannot be
// replaced, the origins file already holds the new record's origins, so
// that no record of networks.json is ever without them (a crash between
// the two leaves origins of records networks.json does not hold yet,
// which are not read).
func TestOriginsWrittenBeforeTheState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.json")
	a, _ := startAgent(t, path, bridged)
	a.Record("alloc", "default/p", "app", 1, "")
	// A directory that is not empty cannot be renamed over.
	if err := os.MkdirAll(filepath.Join(path, "blocked"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Save: %v, want an error naming %s", err, path)
	}
	content, err := os.ReadFile(filepath.Join(dir, "networks-origins.json"))
	if err != nil || !strings.Contains(string(content), `"alloc":{"pod":"default/p","origins":["memifwiring"]}`) {
		t.Errorf("origins file %s (%v), want alloc's origins", content, err)
	}
}

// TestOriginsRewrittenOnlyForNewAllocations: a memif's origins never
// change, so only a save that records an allocation replaces the origins
// file; a release leaves it, and the restarted agent still finds the
// origins of the allocation it holds.
func TestOriginsRewrittenOnlyForNewAllocations(t *testing.T) {
	dir := t.TempDir()
	path, originsPath := filepath.Join(dir, "networks.json"), filepath.Join(dir, "networks-origins.json")
	a, _ := startAgent(t, path, bridged)
	inode := func() uint64 {
		t.Helper()
		info, err := os.Stat(originsPath)
		if err != nil {
			t.Fatal(err)
		}
		return info.Sys().(*syscall.Stat_t).Ino
	}
	a.Record("alloc", "default/p", "app", 1, "")
	a.Record("gone", "default/q", "app", 1, "")
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	first := inode()
	a.Release("gone")
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Error("a save releasing an allocation replaced the origins file")
	}
	a.Record("new", "default/r", "app", 1, "")
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	if inode() == first {
		t.Error("a save recording an allocation left the origins file as it was")
	}
	content, err := os.ReadFile(originsPath)
	if err != nil || strings.Contains(string(content), `"gone"`) || !strings.Contains(string(content), `"new"`) {
		t.Errorf("origins file %s (%v), want new's origins and none of the released gone", content, err)
	}
}

// TestRemoveTempsACrashLeft: the temporary files of networks.json and
// networks-origins.json that a crash during a save left are removed at
// the next start; the state files and anything else stay, and the record
// is still there.
func TestRemoveTempsACrashLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.json")
	a, _ := startAgent(t, path, bridged)
	a.Record("alloc", "default/p", "app", 1, "")
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{".networks.json.tmp-0123456789abcdef", ".networks-origins.json.tmp-fedcba9876543210"}
	for _, name := range append(slices.Clone(leftovers), "checkpoint.json", ".checkpoint.json.tmp-0123456789abcdef") {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restarted, _ := startAgent(t, path, bridged)
	removed, err := restarted.RemoveTemps()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range leftovers {
		want = append(want, filepath.Join(dir, name))
	}
	slices.Sort(removed)
	if slices.Sort(want); !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, name := range []string{"networks.json", "networks-origins.json", "checkpoint.json", ".checkpoint.json.tmp-0123456789abcdef"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	if !restarted.Recorded("alloc") {
		t.Error("the record is gone after the restart")
	}
}
