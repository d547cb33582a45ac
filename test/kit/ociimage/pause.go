package ociimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pauseSource is a pod sandbox's process: it holds the pod's namespaces
// and exits on SIGTERM or SIGINT, as registry.k8s.io/pause does.
const pauseSource = `package main

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

// PauseBinary builds the pause program: a static binary that waits for
// SIGTERM or SIGINT and exits 0. It needs the go command.
func PauseBinary() ([]byte, error) {
	binary, err := StaticGoBinary(pauseSource)
	if err != nil {
		return nil, fmt.Errorf("ociimage: build the pause binary: %w", err)
	}
	return binary, nil
}

// PauseImage returns a pod sandbox image named name holding PauseBinary
// as /pause.
func PauseImage(name string) (Image, error) {
	binary, err := PauseBinary()
	if err != nil {
		return Image{}, err
	}
	return Image{
		Name:       name,
		Entrypoint: []string{"/pause"},
		Files:      []File{{Path: "/pause", Mode: 0o755, Data: binary}},
	}, nil
}

// StaticGoBinary compiles source, a main package using the standard
// library only, into a static binary and returns it.
func StaticGoBinary(source string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "ociimage-build")
	if err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(dir)
	files := map[string]string{"main.go": source, "go.mod": "module program\n\ngo 1.21\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", "program", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w: %s", err, out)
	}
	binary, err := os.ReadFile(filepath.Join(dir, "program"))
	if err != nil {
		return nil, fmt.Errorf("read the built binary: %w", err)
	}
	return binary, nil
}
