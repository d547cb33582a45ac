package dockerd

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

// SleeperImage is the image ImportSleeperImage creates.
const SleeperImage = "memif-test/sleeper:latest"

// SleeperPath is the sleeper's path inside the image; containers run it as
// their entrypoint. The sleeper is ociimage.PauseBinary: it exits 0 on
// SIGTERM or SIGINT, so a container stops at once on docker stop.
const SleeperPath = "/sleeper"

var sleeperTar struct {
	once sync.Once
	data []byte
	err  error
}

// ImportSleeperImage imports SleeperImage into the daemon behind client and
// returns its name. The binary is built once per test process.
func ImportSleeperImage(tb testing.TB, client *docker.Client) string {
	tb.Helper()
	sleeperTar.once.Do(func() { sleeperTar.data, sleeperTar.err = buildSleeperTar() })
	if sleeperTar.err != nil {
		tb.Fatalf("build sleeper image: %v", sleeperTar.err)
	}
	repository, tag := "memif-test/sleeper", "latest"
	err := client.ImportImage(docker.ImportImageOptions{
		Repository:   repository,
		Tag:          tag,
		Source:       "-",
		InputStream:  bytes.NewReader(sleeperTar.data),
		OutputStream: io.Discard,
	})
	if err != nil {
		tb.Fatalf("import image %s into %s: %v", SleeperImage, client.Endpoint(), err)
	}
	return SleeperImage
}

// buildSleeperTar compiles the sleeper as a static binary and returns a tar
// of a root file system holding only it.
func buildSleeperTar() ([]byte, error) {
	binary, err := ociimage.PauseBinary()
	if err != nil {
		return nil, err
	}
	return rootfsTar(binary)
}

func rootfsTar(binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	archive := tar.NewWriter(&buf)
	header := &tar.Header{Name: SleeperPath[1:], Mode: 0o755, Size: int64(len(binary)), Typeflag: tar.TypeReg}
	if err := archive.WriteHeader(header); err != nil {
		return nil, fmt.Errorf("write tar header: %w", err)
	}
	if _, err := archive.Write(binary); err != nil {
		return nil, fmt.Errorf("write sleeper into tar: %w", err)
	}
	if err := archive.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}
