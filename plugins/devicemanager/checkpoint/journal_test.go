package checkpoint

import (
	"bytes"
	"encoding/binary"
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

// TestWriterPersistsEverySave: what Save and SaveBuffered write is read
// back at once, by appending to the journal only (a buffered record is in
// the file, unsynced: another agent of this boot reads it).
func TestWriterPersistsEverySave(t *testing.T) {
	for _, tc := range []struct {
		name string
		save func(*Writer, Data) error
	}{
		{"durable", (*Writer).Save},
		{"buffered", (*Writer).SaveBuffered},
		{"alternating", func(w *Writer, data Data) error {
			if w.records%2 == 0 {
				return w.SaveBuffered(data)
			}
			return w.Save(data)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "checkpoint.json")
			w := NewWriter(path)
			var snapshot []byte
			for i, state := range states() {
				if err := tc.save(w, state); err != nil {
					t.Fatalf("save %d: %v", i, err)
				}
				got, err := Load(path)
				if err != nil || !same(got, state) {
					t.Fatalf("after save %d Load = %+v, %v; want %+v", i, got, err, state)
				}
				content, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					snapshot = content
				} else if !bytes.Equal(content, snapshot) {
					t.Errorf("save %d rewrote the snapshot; want only the journal appended to", i)
				}
			}
			if err := tc.save(w, states()[len(states())-1]); err != nil {
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
		})
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
// saves, the next Save persists its data whole; also when the writer
// holds the journal open since an earlier append.
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
		{"journal replaced", func(t *testing.T, journal string) {
			if err := os.WriteFile(journal+".new", []byte("another file"), fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(journal+".new", journal); err != nil {
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
		for _, appended := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s after %d appends", tc.name, appended), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "checkpoint.json")
				w := NewWriter(path)
				history := states()
				for _, state := range history[:1+appended] {
					if err := w.Save(state); err != nil {
						t.Fatal(err)
					}
				}
				tc.trouble(t, journalPath(path))
				last := 3 + appended
				for _, state := range history[1+appended : last] {
					if err := w.Save(state); err != nil {
						t.Fatalf("Save: %v", err)
					}
				}
				if got, err := Load(path); err != nil || !same(got, history[last-1]) {
					t.Errorf("Load = %+v, %v; want %+v", got, err, history[last-1])
				}
			})
		}
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

// grants writes a snapshot of two allocations, then four journal records,
// each granting one more allocation, as the device manager does across a
// restart. It returns the checkpoint path, the allocations in order, and
// the offset where each record starts, the journal's length last.
func grants(t *testing.T) (string, []Allocation, []int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	w := NewWriter(path)
	var granted []Allocation
	for i := range 6 {
		id := fmt.Sprintf("memif-%03d-0000000%d", i, i)
		granted = append(granted, Allocation{ID: id, DeviceIDs: []string{fmt.Sprintf("memif-%03d", i)},
			HostDir: "/run/m/" + id, HostSocket: "/run/m/" + id + "/memif.sock", Secret: fmt.Sprintf("secret-%d", i)})
		if i == 0 {
			continue // the snapshot holds two
		}
		if err := w.Save(Data{Allocations: slices.Clone(granted)}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	journal, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	starts := []int{journalHeaderSize}
	for offset := journalHeaderSize; offset < len(journal); {
		offset += recordHeaderSize + int(binary.BigEndian.Uint32(journal[offset:]))
		starts = append(starts, offset)
	}
	if len(starts) != 5 || starts[4] != int(info.Size()) {
		t.Fatalf("journal records start at %v of %d bytes, want four records", starts, info.Size())
	}
	return path, granted, starts
}

// TestLoadKeepsWhatDamageDidNotCover damages the checkpoint every way a
// disk or an operator can: truncation at every record boundary and in
// every record, a changed byte in every part of every record, the
// snapshot or journal deleted or emptied. Load gives exactly the
// allocations whose records the damage did not touch, and says what it
// lost unless the damage cannot be seen (a journal cut at a boundary).
func TestLoadKeepsWhatDamageDidNotCover(t *testing.T) {
	type damage struct {
		name   string
		damage func(t *testing.T, path string, journal []byte)
		keep   []int  // indexes of the allocations that must survive
		seen   string // "" none, "torn" a *TornTailError, "damage" a *DamageError
	}
	_, _, starts := grants(t)
	writeJournal := func(content []byte) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, _ []byte) {
			if err := os.WriteFile(journalPath(path), content, fileMode); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut := func(at int) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, journal []byte) { writeJournal(journal[:at])(t, path, journal) }
	}
	flip := func(at int) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, journal []byte) {
			changed := bytes.Clone(journal)
			changed[at] ^= 0x20
			writeJournal(changed)(t, path, journal)
		}
	}
	upTo := func(n int) []int {
		var keep []int
		for i := range n {
			keep = append(keep, i)
		}
		return keep
	}
	var cases []damage
	for record := range 4 {
		cases = append(cases,
			damage{fmt.Sprintf("cut before record %d", record+1), cut(starts[record]), upTo(2 + record), ""},
			damage{fmt.Sprintf("cut in the header of record %d", record+1), cut(starts[record] + 3), upTo(2 + record), "torn"},
			damage{fmt.Sprintf("cut in the payload of record %d", record+1), cut(starts[record+1] - 1), upTo(2 + record), "torn"})
		allBut := slices.DeleteFunc(upTo(6), func(i int) bool { return i == 2+record })
		seen := "damage"
		if record == 3 {
			seen = "torn" // a bad last record cannot be told from a torn write
		}
		for _, part := range []struct {
			name   string
			offset int
		}{{"length", 2}, {"checksum", 5}, {"payload", recordHeaderSize + 10}, {"payload's end", starts[record+1] - starts[record] - 2}} {
			cases = append(cases, damage{fmt.Sprintf("byte changed in the %s of record %d", part.name, record+1), flip(starts[record] + part.offset), allBut, seen})
		}
	}
	removeFile := func(journal bool) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, _ []byte) {
			if journal {
				path = journalPath(path)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	emptySnapshot := func(t *testing.T, path string, _ []byte) {
		if err := os.WriteFile(path, nil, fileMode); err != nil {
			t.Fatal(err)
		}
	}
	flipSnapshot := func(t *testing.T, path string, _ []byte) {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(content, []byte("secret-1"))
		content[at+len("secret-")] = '7'
		if err := os.WriteFile(path, content, fileMode); err != nil {
			t.Fatal(err)
		}
	}
	stretchAfter := func(record int) func(*testing.T, string, []byte) {
		return func(t *testing.T, path string, journal []byte) {
			writeJournal(slices.Insert(bytes.Clone(journal), starts[record], claimingStretch(64<<10)...))(t, path, journal)
		}
	}
	cases = append(cases,
		damage{"a stretch whose every length claims most of it, after record 2", stretchAfter(2), upTo(6), "damage"},
		damage{"byte changed in the journal header", flip(10), upTo(2), "damage"},
		damage{"journal emptied", writeJournal(nil), upTo(2), "damage"},
		damage{"journal deleted", removeFile(true), upTo(2), "damage"},
		damage{"snapshot deleted", removeFile(false), []int{2, 3, 4, 5}, "damage"},
		damage{"snapshot emptied", emptySnapshot, []int{2, 3, 4, 5}, "damage"},
		damage{"byte changed in the snapshot", flipSnapshot, []int{2, 3, 4, 5}, "damage"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, granted, _ := grants(t)
			journal, err := os.ReadFile(journalPath(path))
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path, journal)
			got, err := Load(path)
			var want []Allocation
			for _, i := range tc.keep {
				want = append(want, granted[i])
			}
			if !same(got, Data{Allocations: want}) {
				t.Errorf("Load kept %v, want %v (error %v)", ids(got), ids(Data{Allocations: want}), err)
			}
			var torn *TornTailError
			var damaged *DamageError
			switch tc.seen {
			case "":
				if err != nil {
					t.Errorf("Load error = %v, want none", err)
				}
			case "torn":
				if !errors.As(err, &torn) || errors.As(err, &damaged) {
					t.Errorf("Load error = %v, want a *TornTailError alone", err)
				}
			case "damage":
				if !errors.As(err, &damaged) || !strings.Contains(err.Error(), path) {
					t.Errorf("Load error = %v, want a *DamageError naming %s", err, path)
				}
			}
		})
	}
}

// claimingStretch is size bytes of corruption in which every 8-byte step
// reads as a record header claiming a payload that runs almost to the
// stretch's end: the worst a skip over corruption has to get past.
func claimingStretch(size int) []byte {
	stretch := make([]byte, size)
	for at := 0; at+recordHeaderSize <= size; at += recordHeaderSize {
		binary.BigEndian.PutUint32(stretch[at:], uint32(size-at-recordHeaderSize-1))
	}
	return stretch
}

// BenchmarkDecodeJournalPastCorruption decodes a journal of 1 MiB of
// records with 1 MiB of claimingStretch in its middle, against the same
// records alone (corrupt/clean).
func BenchmarkDecodeJournalPastCorruption(b *testing.B) {
	clean := encodeJournalHeader(1)
	var starts []int
	for i := 0; len(clean) < 1<<20; i++ {
		starts = append(starts, len(clean))
		var err error
		clean, err = appendRecord(clean, journalRecord{Put: []Allocation{{ID: fmt.Sprintf("memif-%06d", i), Secret: strings.Repeat("s", 200)}}})
		if err != nil {
			b.Fatal(err)
		}
	}
	corrupt := slices.Insert(bytes.Clone(clean), starts[len(starts)/2], claimingStretch(1<<20)...)
	decode := func(content []byte) (time.Duration, int) {
		start := time.Now()
		records, _, skipped, err := decodeJournal("bench", content, 1)
		if err != nil || len(records) != len(starts) {
			b.Fatalf("decoded %d of %d records (skipped %v): %v", len(records), len(starts), skipped, err)
		}
		return time.Since(start), len(skipped)
	}
	var cleanTime, corruptTime time.Duration
	for b.Loop() {
		took, _ := decode(clean)
		cleanTime += took
		took, skipped := decode(corrupt)
		corruptTime += took
		if skipped != 1 {
			b.Fatalf("skipped %d stretches, want the one", skipped)
		}
	}
	b.ReportMetric(float64(corruptTime)/float64(cleanTime), "corrupt/clean")
}

func ids(data Data) []string {
	var list []string
	for _, a := range data.Allocations {
		list = append(list, a.ID)
	}
	return list
}

func TestLoadRefusesWhatIsNotAJournal(t *testing.T) {
	path, granted, _ := grants(t)
	for _, content := range [][]byte{[]byte(strings.Repeat("kubelet checkpoint ", 4)), []byte("MEMIFJ01")} {
		if err := os.WriteFile(journalPath(path), content, fileMode); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		var corrupt *CorruptError
		if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "short or foreign header") || !same(got, Data{Allocations: granted[:2]}) {
			t.Errorf("Load with a foreign journal = %v, %v; want the snapshot's two and a *CorruptError", ids(got), err)
		}
	}
}

func TestJournalOfAnotherGeneration(t *testing.T) {
	path, journal, _ := journalAfter(t)
	stale := append(encodeJournalHeader(42), journal[journalHeaderSize:]...)
	if err := os.WriteFile(journalPath(path), stale, fileMode); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(path); err != nil || !same(got, states()[0]) {
		t.Errorf("Load with a stale journal (a compaction cut short) = %+v, %v; want the snapshot alone", got, err)
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
