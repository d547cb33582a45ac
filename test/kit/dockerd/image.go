package dockerd

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	docker "github.com/fsouza/go-dockerclient"
)

// SleeperImage is the image ImportSleeperImage creates.
const SleeperImage = "memif-test/sleeper:latest"

// SleeperPath is the sleeper's path inside the image; containers run it as
// their entrypoint.
const SleeperPath = "/sleeper"

// sleeperSource waits for SIGTERM or SIGINT and exits 0, so a container stops
// at once on docker stop.
const sleeperSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
}
`

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
	dir, err := os.MkdirTemp("", "sleeper")
	if err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(dir)
	files := map[string]string{"main.go": sleeperSource, "go.mod": "module sleeper\n\ngo 1.21\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", "sleeper", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build sleeper: %w: %s", err, out)
	}
	binary, err := os.ReadFile(filepath.Join(dir, "sleeper"))
	if err != nil {
		return nil, fmt.Errorf("read sleeper binary: %w", err)
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
