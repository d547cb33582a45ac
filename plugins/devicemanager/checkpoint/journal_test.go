package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// states is a history of allocations as the device manager goes through
// it: allocate, bind, allocate, release, release all.
func states() []Data {
	all := sampleData().Allocations
	unbound := all[0]
	unbound.PodNamespace, unbound.PodName, unbound.PodUID, unbound.ContainerName = "", "", "", ""
	return []Data{
		{Allocations: []Allocation{unbound}},
		{Allocations: []Allocation{all[0]}},
		{Allocations: []Allocation{all[0], all[1]}},
		{Allocations: []Allocation{all[1]}},
		{Allocations: []Allocation{}},
		{Allocations: []Allocation{all[1], all[0]}},
	}
}

// same compares data as the device manager sees it: no allocation is no
// allocation, whether the list is nil or empty.
func same(a, b Data) bool {
	if len(a.Allocations) == 0 && len(b.Allocations) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestWriterPersistsEverySave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "checkpoint.json")
	w := NewWriter(path)
	var snapshot []byte
	for i, state := range states() {
		if err := w.Save(state); err != nil {
			t.Fatalf("Save %d: %v", i, err)
		}
		got, err := Load(path)
		if err != nil || !same(got, state) {
			t.Fatalf("after Save %d Load = %+v, %v; want %+v", i, got, err, state)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			snapshot = content
		} else if !bytes.Equal(content, snapshot) {
			t.Errorf("Save %d rewrote the snapshot; want only the journal appended to", i)
		}
	}
	if err := w.Save(states()[len(states())-1]); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{path, journalPath(path)} {
		info, err := os.Stat(file)
		if err != nil || info.Mode().Perm() != fileMode {
			t.Errorf("%s: %v, %v; want mode 0600", file, info, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Errorf("directory holds %v, want the checkpoint and its journal only", entries)
	}
}

func TestWriterCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	w := NewWriter(path)
	history := states()
	saves := compactAfter + 2 // one compaction, compactAfter appends, a compaction
	for i := range saves {
		if err := w.Save(history[i%len(history)]); err != nil {
			t.Fatalf("Save %d: %v", i, err)
		}
	}
	journal, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(journal) != journalHeaderSize {
		t.Errorf("journal after %d saves holds %d bytes, want a fresh journal (%d)", saves, len(journal), journalHeaderSize)
	}
	want := history[(saves-1)%len(history)]
	if got, err := Load(path); err != nil || !same(got, want) {
		t.Errorf("Load after compaction = %+v, %v; want %+v", got, err, want)
	}
}

// TestWriterJournalTrouble: whatever happened to the journal between two
// saves, the next Save persists its data whole.
func TestWriterJournalTrouble(t *testing.T) {
	cases := []struct {
		name    string
		trouble func(t *testing.T, journal string)
	}{
		{"journal removed", func(t *testing.T, journal string) {
			if err := os.Remove(journal); err != nil {
				t.Fatal(err)
			}
		}},
		{"journal emptied", func(t *testing.T, journal string) {
			if err := os.Truncate(journal, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage appended to the journal", func(t *testing.T, journal string) {
			f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("\x00\x00\x01torn"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			w := NewWriter(path)
			history := states()
			if err := w.Save(history[0]); err != nil {
				t.Fatal(err)
			}
			tc.trouble(t, journalPath(path))
			for _, state := range history[1:3] {
				if err := w.Save(state); err != nil {
					t.Fatalf("Save: %v", err)
				}
			}
			if got, err := Load(path); err != nil || !same(got, history[2]) {
				t.Errorf("Load = %+v, %v; want %+v", got, err, history[2])
			}
		})
	}
}

// journalAfter returns the checkpoint path and, for each Save of states()
// after the first (which writes the snapshot), the journal's length when
// that Save returned.
func journalAfter(t *testing.T) (string, []byte, []int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	w := NewWriter(path)
	var ends []int
	for i, state := range states() {
		if err := w.Save(state); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			info, err := os.Stat(journalPath(path))
			if err != nil {
				t.Fatal(err)
			}
			ends = append(ends, int(info.Size()))
		}
	}
	journal, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	return path, journal, ends
}

// TestJournalCrashConsistency cuts the journal at every byte, as a crash
// in the middle of an append can: Load gives the state of the last Save
// that was wholly written, never a mix, and says when it dropped a torn
// record.
func TestJournalCrashConsistency(t *testing.T) {
	path, journal, ends := journalAfter(t)
	history := states()
	for cut := journalHeaderSize; cut <= len(journal); cut++ {
		if err := os.WriteFile(journalPath(path), journal[:cut], fileMode); err != nil {
			t.Fatal(err)
		}
		want := history[0]
		for i, end := range ends {
			if cut >= end {
				want = history[i+1]
			}
		}
		atBoundary := cut == journalHeaderSize || slices.Contains(ends, cut)
		got, err := Load(path)
		var torn *TornTailError
		switch {
		case !same(got, want):
			t.Fatalf("journal cut at byte %d of %d: Load = %+v, %v; want %+v", cut, len(journal), got, err, want)
		case atBoundary && err != nil:
			t.Fatalf("journal cut after a whole record (byte %d): Load error %v, want none", cut, err)
		case !atBoundary && (!errors.As(err, &torn) || torn.Offset+torn.Bytes != cut):
			t.Fatalf("journal cut in a record (byte %d): Load error %v, want a *TornTailError up to the cut", cut, err)
		}
	}
}

func TestJournalCorrupt(t *testing.T) {
	path, journal, ends := journalAfter(t)
	flip := func(at int) []byte {
		changed := bytes.Clone(journal)
		changed[at] ^= 0x20
		return changed
	}
	history := states()
	cases := []struct {
		name    string
		content []byte
		want    *Data  // the state Load must give, or
		reason  string // what its *CorruptError must say
	}{
		{"byte changed in a middle record", flip(ends[1] + recordHeaderSize + 3), nil, "checksum mismatch"},
		{"byte changed in the last record (torn write)", flip(len(journal) - 2), &history[len(history)-2], ""},
		{"length of a middle record changed", flip(ends[0] + 3), nil, "checksum mismatch"},
		{"header changed", flip(2), nil, "header"},
		{"empty journal", nil, nil, "short or foreign header"},
		{"foreign file", []byte(strings.Repeat("kubelet checkpoint ", 4)), nil, "short or foreign header"},
		{"journal of another generation (compaction cut short)", append(encodeJournalHeader(42), journal[journalHeaderSize:]...), &history[0], ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(journalPath(path), tc.content, fileMode); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if tc.want != nil {
				var torn *TornTailError
				if (err != nil && !errors.As(err, &torn)) || !same(got, *tc.want) {
					t.Errorf("Load = %+v, %v; want %+v", got, err, *tc.want)
				}
				return
			}
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), journalPath(path)) {
				t.Errorf("Load error = %v, want a *CorruptError naming the journal and %q", err, tc.reason)
			}
		})
	}
}

func TestMoveAsideMovesTheJournal(t *testing.T) {
	path, journal, _ := journalAfter(t)
	now := time.Date(2026, 11, 22, 3, 4, 5, 6, time.UTC)
	if _, err := MoveAside(path, now); err != nil {
		t.Fatal(err)
	}
	moved, err := os.ReadFile(journalPath(path) + ".corrupt-20261122T030405.000000006Z")
	if err != nil || !bytes.Equal(moved, journal) {
		t.Errorf("journal moved aside = %d bytes, %v; want the journal", len(moved), err)
	}
	if got, err := Load(path); err != nil || len(got.Allocations) != 0 {
		t.Errorf("Load after MoveAside = %+v, %v; want empty", got, err)
	}
}

func TestSaveRemovesTheJournal(t *testing.T) {
	path, _, _ := journalAfter(t)
	if err := Save(path, sampleData()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journalPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal after Save: %v, want none", err)
	}
	if got, err := Load(path); err != nil || !same(got, sampleData()) {
		t.Errorf("Load = %+v, %v", got, err)
	}
}

func ExampleWriter() {
	dir, _ := os.MkdirTemp("", "checkpoint")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "checkpoint.json")
	w := NewWriter(path)
	for _, state := range states()[:3] {
		if err := w.Save(state); err != nil {
			fmt.Println(err)
		}
	}
	data, err := Load(path)
	fmt.Println(len(data.Allocations), err)
	// Output: 2 <nil>
}
