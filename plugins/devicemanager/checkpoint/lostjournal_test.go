package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// asVersion2 rewrites the snapshot at path as the version 2 agent wrote
// it (the checksum does not cover the version).
func asVersion2(t *testing.T, path string) {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(content), `"version": 3`, `"version": 2`, 1)
	if old == string(content) {
		t.Fatalf("snapshot %s is not version 3:\n%s", path, content)
	}
	if err := os.WriteFile(path, []byte(old), fileMode); err != nil {
		t.Fatal(err)
	}
}

// TestMissingJournalIsLost: a journal the snapshot names and the writer
// made before the snapshot (version 3) that is missing is a lost part, so
// that an alert on the lost-parts count sees a deleted journal. A version
// 2 snapshot (the agent before) is still read, with its journal; whether
// its journal ever existed it cannot tell, so a missing one is reported
// and not counted.
func TestMissingJournalIsLost(t *testing.T) {
	cases := []struct {
		name       string
		version2   bool
		delete     bool
		wantLost   int
		wantDamage bool
		keep       int // how many of the granted allocations Load gives
	}{
		{"version 3, journal deleted", false, true, 1, true, 2},
		{"version 3, journal kept", false, false, 0, false, 6},
		{"version 2, journal deleted", true, true, 0, true, 2},
		{"version 2, journal kept", true, false, 0, false, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, granted, _ := grants(t)
			if tc.version2 {
				asVersion2(t, path)
			}
			if tc.delete {
				if err := os.Remove(journalPath(path)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Load(path)
			if !same(got, Data{Allocations: granted[:tc.keep]}) {
				t.Errorf("Load kept %v, want the first %d of %v", ids(got), tc.keep, ids(Data{Allocations: granted}))
			}
			var damage *DamageError
			switch {
			case !tc.wantDamage && err != nil:
				t.Fatalf("Load error = %v, want none", err)
			case tc.wantDamage && !errors.As(err, &damage):
				t.Fatalf("Load error = %v, want a *DamageError", err)
			case tc.wantDamage && (damage.Lost != tc.wantLost || !strings.Contains(err.Error(), journalPath(path)+" is corrupt: the file is missing")):
				t.Errorf("Load error = %v (%d parts lost), want %d lost naming the missing journal", err, damage.Lost, tc.wantLost)
			}
		})
	}
}

// TestWriterCrashNeverLooksLikeALoss stops a Writer's compaction after
// each file it writes, as a crash can, by copying the directory then:
// each copy loads with no loss, as the state before the Save or after it.
// A compaction that makes the journal (there was none) makes it before
// the snapshot naming it, so a missing journal is always a lost one.
func TestWriterCrashNeverLooksLikeALoss(t *testing.T) {
	history := states()
	cases := []struct {
		name   string
		before func(t *testing.T, path string) // the files the Save finds
		was    Data
	}{
		{"first save of a node", func(*testing.T, string) {}, Data{}},
		{"snapshot without a journal (Save)", func(t *testing.T, path string) {
			if err := Save(path, history[2]); err != nil {
				t.Fatal(err)
			}
		}, history[2]},
		{"snapshot and journal of an earlier run", func(t *testing.T, path string) {
			w := NewWriter(path)
			for _, state := range history[:3] {
				if err := w.Save(state); err != nil {
					t.Fatal(err)
				}
			}
		}, history[2]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			tc.before(t, path)
			saving := history[5]
			w := NewWriter(path)
			var crashes []string
			w.wrote = func() { crashes = append(crashes, copyDir(t, filepath.Dir(path))) }
			if err := w.Save(saving); err != nil {
				t.Fatal(err)
			}
			if len(crashes) < 2 {
				t.Fatalf("the compaction wrote %d files, want a snapshot and a journal at least", len(crashes))
			}
			for i, dir := range crashes {
				got, err := Load(filepath.Join(dir, filepath.Base(path)))
				if err != nil || !same(got, tc.was) && !same(got, saving) {
					t.Errorf("crash after write %d of %d: Load = %v, %v; want %v or %v and no error", i+1, len(crashes), ids(got), err, ids(tc.was), ids(saving))
				}
			}
			if got, err := Load(path); err != nil || !same(got, saving) {
				t.Errorf("after the Save Load = %v, %v; want %v", ids(got), err, ids(saving))
			}
		})
	}
}

// copyDir copies the files of dir into a new temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	copied := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		content, err := os.ReadFile(filepath.Join(dir, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copied, entry.Name()), content, fileMode); err != nil {
			t.Fatal(err)
		}
	}
	return copied
}
