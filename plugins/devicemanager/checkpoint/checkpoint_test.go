package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleData() Data {
	at := time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)
	return Data{Allocations: []Allocation{
		{ID: "memif-000-a1b2c3d4", DeviceIDs: []string{"memif-000"}, HostDir: "/run/m/memif-000-a1b2c3d4",
			HostSocket: "/run/m/memif-000-a1b2c3d4/memif.sock", ContainerSocket: "/run/vpp/memif.sock",
			Secret: "c2VjcmV0c2VjcmV0c2VjcmV0", AllocatedAt: at,
			PodNamespace: "default", PodName: "web", PodUID: "uid-1", ContainerName: "app"},
		{ID: "memif-001-0badf00d", DeviceIDs: []string{"memif-001", "memif-002"}, HostDir: "/run/m/memif-001-0badf00d",
			HostSocket: "/run/m/memif-001-0badf00d/memif.sock", ContainerSocket: "/run/vpp/memif.sock",
			Secret: "b3RoZXJzZWNyZXRvdGhlcnNl", AllocatedAt: at.Add(time.Second)},
	}}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		data Data
	}{
		{"empty", Data{Allocations: []Allocation{}}},
		{"bound and unbound", sampleData()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "checkpoint.json")
			if err := Save(path, tc.data); err != nil {
				t.Fatalf("Save: %v", err)
			}
			got, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(got, tc.data) {
				t.Errorf("Load = %+v, want %+v", got, tc.data)
			}
		})
	}
}

func TestSaveModeAndNoLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	for i := 0; i < 3; i++ {
		if err := Save(path, sampleData()); err != nil {
			t.Fatalf("Save %d: %v", i, err)
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("checkpoint mode = %#o, want 0600", mode)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Save, want only the checkpoint: %v", len(entries), entries)
	}
}

// TestSaveIsAtomic shows that a crash while writing (a leftover temporary
// file) leaves the previous checkpoint whole, and that a reader never sees a
// half-written file while writes go on.
func TestSaveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	first := sampleData()
	if err := Save(path, first); err != nil {
		t.Fatal(err)
	}
	content, _ := Encode(Data{Allocations: first.Allocations[:1]})
	if err := os.WriteFile(filepath.Join(dir, ".checkpoint.json.tmp-crashed"), content[:len(content)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || !reflect.DeepEqual(got, first) {
		t.Fatalf("after a crashed write Load = %+v, %v; want the previous checkpoint", got, err)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			data := first
			if i%2 == 1 {
				data = Data{Allocations: first.Allocations[:1]}
			}
			if err := Save(path, data); err != nil {
				t.Errorf("Save: %v", err)
				return
			}
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		if _, err := Load(path); err != nil {
			t.Fatalf("a reader saw a partial checkpoint: %v", err)
		}
	}
}

func TestLoadMissingIsEmpty(t *testing.T) {
	got, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || len(got.Allocations) != 0 {
		t.Errorf("Load(missing) = %+v, %v; want empty, nil", got, err)
	}
}

func TestLoadCorrupt(t *testing.T) {
	valid, err := Encode(sampleData())
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(valid), "memif-000", "memif-009", 1)
	cases := []struct {
		name    string
		content string
		reason  string
	}{
		{"empty file", "", "empty"},
		{"only whitespace", " \n", "empty"},
		{"truncated", string(valid[:len(valid)/2]), "truncated or foreign"},
		{"foreign kubelet checkpoint", `{"Data":{"PodDeviceEntries":null},"Checksum":123}`, "truncated or foreign"},
		{"not json", "memif", "truncated or foreign"},
		{"future version", strings.Replace(string(valid), `"version": 3`, `"version": 4`, 1), "version 4 is not supported"},
		{"unreleased version 1", strings.Replace(string(valid), `"version": 3`, `"version": 1`, 1), "version 1 is not supported"},
		{"data changed", tampered, "checksum mismatch"},
		{"trailing garbage", string(valid) + "{}", "trailing content"},
		{"duplicate allocation", encodeUnchecked(t, Data{Allocations: []Allocation{sampleData().Allocations[0], sampleData().Allocations[0]}}), "appears twice"},
		{"allocation without devices", encodeUnchecked(t, Data{Allocations: []Allocation{{ID: "x", HostDir: "/d", HostSocket: "/d/s"}}}), "holds no device"},
		{"allocation without ID", encodeUnchecked(t, Data{Allocations: []Allocation{{DeviceIDs: []string{"memif-000"}}}}), "has no ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load error = %v, want a *CorruptError", err)
			}
			if !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load error = %q, want the path and %q", err, tc.reason)
			}
		})
	}
}

func encodeUnchecked(t *testing.T, data Data) string {
	t.Helper()
	content, err := Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	return string(content)
}

func TestMoveAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	aside, err := MoveAside(path, time.Date(2026, 11, 22, 3, 4, 5, 6, time.UTC))
	if err != nil {
		t.Fatalf("MoveAside: %v", err)
	}
	if want := path + ".corrupt-20261122T030405.000000006Z"; aside != want {
		t.Errorf("MoveAside = %q, want %q", aside, want)
	}
	if content, err := os.ReadFile(aside); err != nil || string(content) != "garbage" {
		t.Errorf("moved file = %q, %v; want the original content", content, err)
	}
	if got, err := Load(path); err != nil || len(got.Allocations) != 0 {
		t.Errorf("Load after MoveAside = %+v, %v; want an empty checkpoint", got, err)
	}
}

// TestNothingWrittenThroughALink replaces the journal, then the snapshot,
// by a link to another file of the same size, as a user who could write
// to the directory would: Save never writes through the link, and the
// checkpoint still holds every save.
func TestNothingWrittenThroughALink(t *testing.T) {
	for _, target := range []string{"journal", "snapshot"} {
		t.Run(target, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.json")
			w := NewWriter(path)
			history := states()
			for _, state := range history[:2] {
				if err := w.Save(state); err != nil {
					t.Fatal(err)
				}
			}
			linked := map[string]string{"journal": journalPath(path), "snapshot": path}[target]
			content, err := os.ReadFile(linked)
			if err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(linked); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, linked); err != nil {
				t.Fatal(err)
			}
			if target == "snapshot" {
				// Only a compaction, the first Save of a start, writes the
				// snapshot.
				w = NewWriter(path)
			}
			for _, state := range history[2:4] {
				if err := w.Save(state); err != nil {
					t.Fatalf("Save with the %s a link: %v", target, err)
				}
			}
			after, err := os.ReadFile(victim)
			if err != nil || !bytes.Equal(after, content) {
				t.Errorf("the link's target changed: %d bytes before, %d after (%v)", len(content), len(after), err)
			}
			if got, err := Load(path); err != nil || !same(got, history[3]) {
				t.Errorf("Load = %+v, %v; want %+v", got, err, history[3])
			}
		})
	}
}

func TestUnsafeDirectoryRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "checkpoint.json")
	if err := NewWriter(path).Save(sampleData()); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "mode 0777") {
		t.Errorf("Save into a world-writable directory = %v; want it refused, naming the directory and its mode", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checkpoint was written into the world-writable directory: %v", err)
	}
}
