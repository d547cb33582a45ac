package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
)

// Image is what WriteArchive writes: one layer holding Files, and the
// config a runtime starts its containers from.
type Image struct {
	// Name is the reference the image is imported as, for example
	// "docker.io/library/pause:dev" (ctr and kubelet speak full names).
	Name       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	Files      []File
}

// File is one file of the layer: Data, or a symlink to Link. Parent
// directories are added as needed.
type File struct {
	// Path is absolute inside the image.
	Path string
	Mode os.FileMode
	Data []byte
	Link string
}

// HostFile reads the host's file at hostPath into a File at the same path
// in the image, following symlinks but keeping the permission bits.
func HostFile(hostPath string) (File, error) {
	info, err := os.Stat(hostPath)
	if err != nil {
		return File{}, fmt.Errorf("ociimage: add host file %s: %w", hostPath, err)
	}
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return File{}, fmt.Errorf("ociimage: add host file %s: %w", hostPath, err)
	}
	return File{Path: hostPath, Mode: info.Mode().Perm(), Data: data}, nil
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// blob is content-addressed data of the archive.
type blob struct {
	data []byte
	desc descriptor
}

func newBlob(mediaType string, data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{data: data, desc: descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}}
}

// WriteArchive writes the image as an OCI image-layout tar at archivePath.
func (img Image) WriteArchive(archivePath string) error {
	if img.Name == "" {
		return fmt.Errorf("ociimage: image has no name; set Image.Name to the reference to import it as")
	}
	layerTar, err := img.layer()
	if err != nil {
		return err
	}
	diffID := sha256.Sum256(layerTar)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("ociimage: compress layer of %s: %w", img.Name, err)
	}
	if _, err := zw.Write(layerTar); err != nil {
		return fmt.Errorf("ociimage: compress layer of %s: %w", img.Name, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("ociimage: compress layer of %s: %w", img.Name, err)
	}
	layer := newBlob("application/vnd.oci.image.layer.v1.tar+gzip", gz.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "Env": img.Env},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	if err != nil {
		return fmt.Errorf("ociimage: encode config of %s: %w", img.Name, err)
	}
	configBlob := newBlob("application/vnd.oci.image.config.v1+json", config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configBlob.desc,
		"layers":        []descriptor{layer.desc},
	})
	if err != nil {
		return fmt.Errorf("ociimage: encode manifest of %s: %w", img.Name, err)
	}
	manifestBlob := newBlob("application/vnd.oci.image.manifest.v1+json", manifest)
	manifestDesc := manifestBlob.desc
	manifestDesc.Platform = &platform{Architecture: runtime.GOARCH, OS: "linux"}
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name":          img.Name,
		"org.opencontainers.image.ref.name": img.Name,
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{manifestDesc}})
	if err != nil {
		return fmt.Errorf("ociimage: encode index of %s: %w", img.Name, err)
	}
	return writeLayout(archivePath, index, []blob{layer, configBlob, manifestBlob})
}

// layer returns the uncompressed layer tar: every directory leading to a
// file first, then the files, in path order so equal images are equal bytes.
func (img Image) layer() ([]byte, error) {
	files := append([]File(nil), img.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("ociimage: file %q of %s: the path must be absolute", f.Path, img.Name)
		}
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		if err := writeParents(tw, dirs, path.Dir(name)); err != nil {
			return nil, err
		}
		header := &tar.Header{Name: name, Mode: int64(f.Mode.Perm()), Size: int64(len(f.Data)), Typeflag: tar.TypeReg}
		if f.Link != "" {
			header = &tar.Header{Name: name, Mode: 0o777, Linkname: f.Link, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(header); err != nil {
			return nil, fmt.Errorf("ociimage: write %s into the layer of %s: %w", f.Path, img.Name, err)
		}
		if f.Link == "" {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("ociimage: write %s into the layer of %s: %w", f.Path, img.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("ociimage: close the layer of %s: %w", img.Name, err)
	}
	return buf.Bytes(), nil
}

func writeParents(tw *tar.Writer, written map[string]bool, dir string) error {
	if dir == "." || dir == "/" || written[dir] {
		return nil
	}
	if err := writeParents(tw, written, path.Dir(dir)); err != nil {
		return err
	}
	written[dir] = true
	if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		return fmt.Errorf("ociimage: write directory %s into the layer: %w", dir, err)
	}
	return nil
}

// writeLayout writes the image-layout archive: oci-layout, index.json and
// the blobs by digest.
func writeLayout(archivePath string, index []byte, blobs []blob) error {
	out, err := os.Create(archivePath)
	if err != nil {
		return fmt.Errorf("ociimage: create archive: %w", err)
	}
	tw := tar.NewWriter(out)
	entries := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
	}
	for _, b := range blobs {
		entries = append(entries, struct {
			name string
			data []byte
		}{"blobs/sha256/" + strings.TrimPrefix(b.desc.Digest, "sha256:"), b.data})
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			out.Close()
			return fmt.Errorf("ociimage: write %s into %s: %w", e.name, archivePath, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			out.Close()
			return fmt.Errorf("ociimage: write %s into %s: %w", e.name, archivePath, err)
		}
	}
	if err := tw.Close(); err != nil {
		out.Close()
		return fmt.Errorf("ociimage: close %s: %w", archivePath, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("ociimage: close %s: %w", archivePath, err)
	}
	return nil
}
