package ociimage_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

// readArchive returns the archive's entries by name.
func readArchive(t *testing.T, data []byte, gzipped bool) map[string][]byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if gzipped {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	entries := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			content = []byte("-> " + h.Linkname)
		}
		entries[h.Name] = content
	}
}

func TestWriteArchiveIsAnOCILayoutHoldingTheFiles(t *testing.T) {
	img := ociimage.Image{
		Name:       "docker.io/library/test:v1",
		Entrypoint: []string{"/bin/tool"},
		Files: []ociimage.File{
			{Path: "/bin/tool", Mode: 0o755, Data: []byte("tool")},
			{Path: "/lib/tool.so", Link: "/usr/lib/tool.so"},
		},
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := img.WriteArchive(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	archive := readArchive(t, data, false)
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(archive["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Name {
		t.Fatalf("index.json = %s, want one manifest named %s", archive["index.json"], img.Name)
	}
	blob := func(digest string) []byte {
		content, ok := archive["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
		if !ok {
			t.Fatalf("no blob %s in the archive", digest)
		}
		return content
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(blob(manifest.Config.Digest)), `"Entrypoint":["/bin/tool"]`) {
		t.Errorf("config %s lacks the entrypoint", blob(manifest.Config.Digest))
	}
	layer := readArchive(t, blob(manifest.Layers[0].Digest), true)
	want := map[string]string{"bin/": "", "bin/tool": "tool", "lib/": "", "lib/tool.so": "-> /usr/lib/tool.so"}
	for name, content := range want {
		if got, ok := layer[name]; !ok || string(got) != content {
			t.Errorf("layer entry %s = %q (present %v), want %q", name, got, ok, content)
		}
	}
}

func TestWriteArchiveRefusesAnUnnamedImage(t *testing.T) {
	err := ociimage.Image{}.WriteArchive(filepath.Join(t.TempDir(), "image.tar"))
	if err == nil || !strings.Contains(err.Error(), "no name") {
		t.Fatalf("WriteArchive of an unnamed image: %v, want an error saying it has no name", err)
	}
}
