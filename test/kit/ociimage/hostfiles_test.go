package ociimage_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

func TestHostProgramsHoldsTheProgramItsLibrariesAndTheLoaderOnce(t *testing.T) {
	const loader = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		t.Skipf("not a Debian amd64 root: %v", err)
	}
	// The loader is also reached as /lib64/ld-linux-x86-64.so.2, the path
	// every program names: that first name keeps the file, this one links
	// to it.
	files, err := ociimage.HostPrograms("/usr/bin/true", loader)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]ociimage.File{}
	for _, f := range files {
		if _, twice := byPath[f.Path]; twice {
			t.Errorf("%s is in the image twice", f.Path)
		}
		byPath[f.Path] = f
	}
	host, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		data []byte
		link string
	}{
		{path: "/usr/bin/true", data: host},
		{path: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{path: "/usr/lib64/ld-linux-x86-64.so.2"},
		{path: loader, link: "/usr/lib64/ld-linux-x86-64.so.2"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, ok := byPath[tt.path]
			switch {
			case !ok:
				t.Fatalf("not in the image; it holds %d files", len(files))
			case f.Link != tt.link:
				t.Errorf("link %q, want %q", f.Link, tt.link)
			case tt.link == "" && len(f.Data) == 0:
				t.Error("empty")
			case tt.data != nil && !bytes.Equal(f.Data, tt.data):
				t.Error("content differs from the host's file")
			}
		})
	}
}

func TestHostProgramsNamesAMissingProgram(t *testing.T) {
	_, err := ociimage.HostPrograms("/nonexistent/program")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("/nonexistent/program")) {
		t.Fatalf("error %v, want one naming /nonexistent/program", err)
	}
}
