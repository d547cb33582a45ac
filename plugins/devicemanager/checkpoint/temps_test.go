package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveTempsACrashLeft: the temporary files of the snapshot and the
// journal that a crash during a replace left are removed; the checkpoint
// and anything else in its directory stay, and it loads as before.
func TestRemoveTempsACrashLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "checkpoint.json")
	if removed, err := NewWriter(path).RemoveTemps(); err != nil || len(removed) != 0 {
		t.Fatalf("RemoveTemps with no directory yet = %q, %v; want nothing", removed, err)
	}
	sample := sampleData()
	w := NewWriter(path)
	for i := range 2 { // a snapshot, then a journal record
		if err := w.Save(Data{Allocations: sample.Allocations[:i+1]}); err != nil {
			t.Fatal(err)
		}
	}
	leftovers := []string{".checkpoint.json.tmp-0123456789abcdef", ".checkpoint.json.journal.tmp-fedcba9876543210"}
	others := []string{"notes.txt", ".other.json.tmp-0123456789abcdef"}
	for _, name := range append(slices.Clone(leftovers), others...) {
		if err := os.WriteFile(filepath.Join(dir, "state", name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := NewWriter(path).RemoveTemps()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range leftovers {
		want = append(want, filepath.Join(dir, "state", name))
	}
	slices.Sort(removed)
	if slices.Sort(want); !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, name := range others {
		if _, err := os.Stat(filepath.Join(dir, "state", name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	loaded, err := Load(path)
	if err != nil || len(loaded.Allocations) != 2 {
		t.Errorf("Load after = %d allocations, %v; want the 2 saved", len(loaded.Allocations), err)
	}
}
