package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	docker "github.com/fsouza/go-dockerclient"
)

// engine is a private dockerd started by scripts/dockerd.sh under dir.
type engine struct {
	script string
	dir    string
	host   string
	pid    int
	client *docker.Client
}

// startEngine starts the engine and connects to it.
func startEngine(ctx context.Context, repoRoot, dir string) (*engine, error) {
	e := &engine{script: filepath.Join(repoRoot, "scripts", "dockerd.sh"), dir: dir}
	cmd := exec.CommandContext(ctx, e.script, "start", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("start a private dockerd with %s start %s: %w: %s", e.script, dir, err, strings.TrimSpace(stderr.String()))
	}
	e.host = strings.TrimSpace(string(out))
	if e.pid, err = readPID(filepath.Join(dir, "dockerd.pid")); err != nil {
		return nil, errors.Join(err, e.stop())
	}
	if e.client, err = docker.NewClient(e.host); err != nil {
		return nil, errors.Join(fmt.Errorf("docker client for %s: %w", e.host, err), e.stop())
	}
	return e, nil
}

func (e *engine) version() string {
	env, err := e.client.Version()
	if err != nil {
		return "unknown version"
	}
	return env.Get("Version")
}

// stop stops the engine by its pid file (the script waits for it).
func (e *engine) stop() error {
	out, err := exec.Command(e.script, "stop", e.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop the private dockerd with %s stop %s: %w: %s", e.script, e.dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func readPID(path string) (int, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read pid file %s: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(content)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s holds %q: %w", path, content, err)
	}
	return pid, nil
}

// alive says whether a process with pid runs (a zombie counts as gone).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(status[bytes.LastIndexByte(status, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
