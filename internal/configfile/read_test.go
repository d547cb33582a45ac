package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadReadsOnlyBoundedRegularFiles: a config file that is not a
// regular file, or is larger than MaxFileSize, is refused naming the file,
// before anything is read from it: a link to /dev/zero does not grow the
// agent until the OOM killer, a FIFO does not hang its start.
func TestLoadReadsOnlyBoundedRegularFiles(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	if err := os.Symlink("/dev/zero", path("zero.conf")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path("fifo.conf"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path("dir.conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	huge := "name: " + strings.Repeat("x", 20<<20) + "\n"
	if err := os.WriteFile(path("huge.conf"), []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("over.conf"), []byte("#"+strings.Repeat("x", MaxFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("limit.conf"), []byte("count: 7\n#"+strings.Repeat("x", MaxFileSize-10)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap mount is a chain of links to a regular file: followed.
	if err := os.Symlink("limit.conf", path("link.conf")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		file      string
		wantCount int
		wantErr   []string
	}{
		{"link to /dev/zero", "zero.conf", 0, []string{path("zero.conf"), "is a character device, not a regular file"}},
		{"FIFO", "fifo.conf", 0, []string{path("fifo.conf"), "is a named pipe (FIFO), not a regular file"}},
		{"directory", "dir.conf", 0, []string{path("dir.conf"), "is a directory, not a regular file"}},
		{"20 MB value", "huge.conf", 0, []string{path("huge.conf"), "larger than the 1048576 bytes (1 MiB) a config file may hold"}},
		{"one byte over the limit", "over.conf", 0, []string{path("over.conf"), "larger than the 1048576 bytes"}},
		{"exactly the limit", "limit.conf", 7, nil},
		{"link to a regular file", "link.conf", 7, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultExample()
			done := make(chan error, 1)
			go func() { done <- Load(path(tc.file), &cfg) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				// Let the blocked read return, so that the test ends.
				if writer, openErr := os.OpenFile(path(tc.file), os.O_WRONLY, 0); openErr == nil {
					writer.Close()
				}
				t.Fatalf("Load(%s) still blocked after a minute", tc.file)
			}
			if checkErr := CheckFile(path(tc.file)); (checkErr == nil) != (tc.wantErr == nil) {
				t.Errorf("CheckFile(%s) = %v, Load = %v; want both to refuse or both to accept", tc.file, checkErr, err)
			}
			if tc.wantErr == nil {
				if err != nil || cfg.Count != tc.wantCount {
					t.Fatalf("Load(%s) = %v, count %d; want nil, count %d", tc.file, err, cfg.Count, tc.wantCount)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load(%s) = nil, want an error", tc.file)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load(%s) = %q, want it to say %q", tc.file, err, want)
				}
			}
			if len(err.Error()) > 1024 {
				t.Errorf("Load(%s) error is %d bytes long, want a short one", tc.file, len(err.Error()))
			}
		})
	}
}
