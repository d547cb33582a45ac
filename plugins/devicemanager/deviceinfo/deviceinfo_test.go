package deviceinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// specDeviceInfo is the device-info map as the Network Plumbing WG's
// client library declares it (network-attachment-definition-client,
// pkg/apis/k8s.cni.cncf.io/v1 DeviceInfo and MemifDevice), which Multus
// decodes the files into; only the memif branch is here, so a file
// with any other key fails the strict decode.
type specDeviceInfo struct {
	Type    string `json:"type,omitempty"`
	Version string `json:"version,omitempty"`
	Memif   *struct {
		Role string `json:"role,omitempty"`
		Path string `json:"path,omitempty"`
		Mode string `json:"mode,omitempty"`
	} `json:"memif,omitempty"`
}

// decodeSpec decodes a file as the spec's map, refusing any key the
// spec's memif type does not have.
func decodeSpec(t *testing.T, path string) specDeviceInfo {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := json.NewDecoder(bytes.NewReader(content))
	decoder.DisallowUnknownFields()
	var info specDeviceInfo
	if err := decoder.Decode(&info); err != nil {
		t.Fatalf("%s does not decode as the spec's device-info: %v\n%s", path, err, content)
	}
	return info
}

func TestFileName(t *testing.T) {
	for _, tc := range []struct{ resource, device, want string }{
		{"contivpp.io/memif", "memif-000", "contivpp.io-memif-memif-000-device.json"},
		{"example.com/memif-red", "memif-1024", "example.com-memif-red-memif-1024-device.json"},
		{"example.com/memif", "a/b", "example.com-memif-a-b-device.json"},
	} {
		if got := FileName(tc.resource, tc.device); got != tc.want {
			t.Errorf("FileName(%q, %q) = %q, want %q", tc.resource, tc.device, got, tc.want)
		}
	}
}

func TestWriteFollowsTheSpec(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devinfo", "dp") // made with its parents
	files := New(dir, "contivpp.io/memif")
	devices := []Device{
		{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeIP)},
		{ID: "memif-001", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)},
	}
	if err := files.Write(devices); err != nil {
		t.Fatal(err)
	}
	for _, d := range devices {
		path := filepath.Join(dir, "contivpp.io-memif-"+d.ID+"-device.json")
		if path != files.Path(d.ID) {
			t.Errorf("Path(%s) = %s, want %s", d.ID, files.Path(d.ID), path)
		}
		info := decodeSpec(t, path)
		if info.Type != "memif" || info.Version != "1.1.0" || info.Memif == nil {
			t.Fatalf("%s: %+v, want type memif, version 1.1.0 and a memif map", path, info)
		}
		if info.Memif.Role != "slave" || info.Memif.Path != "/run/vpp/memif.sock" || info.Memif.Mode != d.Info.Memif.Mode {
			t.Errorf("%s: memif %+v, want role slave, path /run/vpp/memif.sock, mode %s", path, *info.Memif, d.Info.Memif.Mode)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != FileMode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), os.FileMode(FileMode))
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != dirMode {
		t.Errorf("made directory %s with mode %v, want %v", dir, st.Mode().Perm(), os.FileMode(dirMode))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(devices) {
		t.Errorf("%s holds %d entries, want only the %d files (no temporary file left)", dir, len(entries), len(devices))
	}
}

func TestWriteReplacesOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	files := New(dir, "contivpp.io/memif")
	path := files.Path("memif-000")
	write := func(mode string) uint64 {
		t.Helper()
		if err := files.Write([]Device{{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", mode)}}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	first := write(ModeEthernet)
	if again := write(ModeEthernet); again != first {
		t.Errorf("the same content was written again (inode %d, was %d)", again, first)
	}
	if changed := write(ModeIP); changed == first {
		t.Errorf("a new mode did not replace the file")
	}
	if got := decodeSpec(t, path).Memif.Mode; got != ModeIP {
		t.Errorf("mode %q after the change, want ip", got)
	}
}

func TestFailedWriteLeavesNothingOfTheCall(t *testing.T) {
	dir := t.TempDir()
	files := New(dir, "contivpp.io/memif")
	// A directory where memif-001's file goes: its rename fails.
	if err := os.Mkdir(files.Path("memif-001"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := files.Write([]Device{
		{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)},
		{ID: "memif-001", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)},
	})
	if !errors.Is(err, ErrFile) {
		t.Fatalf("Write = %v, want an ErrFile", err)
	}
	if _, err := os.Lstat(files.Path("memif-000")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("memif-000's file stayed after the call failed: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%s holds %v, want only the planted directory (no temporary file)", dir, entries)
	}
}

func TestEnsureKeepsTheModeOfAWholeFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing string // "" for none
		want     Memif
	}{
		{name: "missing", want: Memif{Role: "slave", Path: "/run/vpp/memif.sock", Mode: "ethernet"}},
		{name: "whole, mode ip kept",
			existing: `{"type":"memif","version":"1.1.0","memif":{"role":"slave","path":"/run/vpp/memif.sock","mode":"ip"}}`,
			want:     Memif{Role: "slave", Path: "/run/vpp/memif.sock", Mode: "ip"}},
		{name: "torn", existing: `{"type":"memif","vers`, want: Memif{Role: "slave", Path: "/run/vpp/memif.sock", Mode: "ethernet"}},
		{name: "another socket path",
			existing: `{"type":"memif","version":"1.1.0","memif":{"role":"slave","path":"/old/memif.sock","mode":"ip"}}`,
			want:     Memif{Role: "slave", Path: "/run/vpp/memif.sock", Mode: "ethernet"}},
		{name: "an invalid mode",
			existing: `{"type":"memif","version":"1.1.0","memif":{"role":"slave","path":"/run/vpp/memif.sock","mode":"punt"}}`,
			want:     Memif{Role: "slave", Path: "/run/vpp/memif.sock", Mode: "ethernet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := New(t.TempDir(), "contivpp.io/memif")
			path := files.Path("memif-000")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), FileMode); err != nil {
					t.Fatal(err)
				}
			}
			if err := files.Ensure([]Device{{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)}}); err != nil {
				t.Fatal(err)
			}
			if got := decodeSpec(t, path); Memif(*got.Memif) != tc.want {
				t.Errorf("memif %+v after Ensure, want %+v", *got.Memif, tc.want)
			}
		})
	}
}

func TestRemoveAndPruneTouchOnlyTheResourcesFiles(t *testing.T) {
	dir := t.TempDir()
	files := New(dir, "contivpp.io/memif")
	devices := []string{"memif-000", "memif-001", "memif-002", "memif-003"}
	var written []Device
	for _, id := range devices {
		written = append(written, Device{ID: id, Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)})
	}
	if err := files.Write(written); err != nil {
		t.Fatal(err)
	}
	others := []string{
		"contivpp.io-memif-red-memif-000-device.json", // another resource whose name begins as ours
		"intel.com-sriov-0000:01:02.2-device.json",    // another device plugin
		"contivpp.io-memif-memif-999-device.json",     // not a device of the resource's
	}
	temp := "." + FileName("contivpp.io/memif", "memif-000") + ".tmp-0123456789abcdef"
	for _, name := range append(slices.Clone(others), temp) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), FileMode); err != nil {
			t.Fatal(err)
		}
	}

	if err := files.Remove([]string{"memif-001", "memif-001"}); err != nil {
		t.Fatalf("Remove (one already gone the second time) = %v", err)
	}
	removed, err := files.Prune(devices, func(id string) bool { return id == "memif-000" || id == "memif-002" })
	if err != nil {
		t.Fatal(err)
	}
	wantRemoved := []string{filepath.Join(dir, temp), files.Path("memif-003")}
	slices.Sort(removed)
	if !slices.Equal(removed, wantRemoved) {
		t.Errorf("Prune removed %v, want %v", removed, wantRemoved)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := append(slices.Clone(others), FileName("contivpp.io/memif", "memif-000"), FileName("contivpp.io/memif", "memif-002"))
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

func TestDisabledWritesNothing(t *testing.T) {
	files := New("", "contivpp.io/memif")
	if files.Enabled() || files.Path("memif-000") != "" {
		t.Fatalf("Files with no directory is enabled, path %q", files.Path("memif-000"))
	}
	err := errors.Join(files.Write([]Device{{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)}}),
		files.Ensure([]Device{{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)}}),
		files.Remove([]string{"memif-000"}))
	if _, pruneErr := files.Prune([]string{"memif-000"}, func(string) bool { return false }); err != nil || pruneErr != nil {
		t.Fatalf("disabled Files failed: %v, %v", err, pruneErr)
	}
}

func TestADirectoryOthersCanChangeIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	err := New(dir, "contivpp.io/memif").Write([]Device{{ID: "memif-000", Info: NewMemif("/run/vpp/memif.sock", ModeEthernet)}})
	if !errors.Is(err, ErrFile) {
		t.Fatalf("Write into a world-writable directory = %v, want it refused", err)
	}
}
