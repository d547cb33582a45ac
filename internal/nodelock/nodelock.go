package nodelock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// fileMode: only the agent's user reads who holds the node.
const fileMode = 0o600

// retryEvery is how often a waiting agent tries the lock again.
const retryEvery = 100 * time.Millisecond

// Lock is a held node lock. It is released when the process exits, or by
// Release.
type Lock struct {
	file *os.File
}

// HeldError is Acquire's error when another process kept the lock for the
// whole wait.
type HeldError struct {
	Path string
	// Holder is what the holder wrote into the lock file: its pid, host
	// and since when it holds the lock.
	Holder string
	Waited time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another memif-agent holds %s (%s) and did not exit within %v: one agent runs per node; stop the other one, or wait for it to exit",
		e.Path, e.Holder, e.Waited)
}

// Acquire takes the lock at path, creating the file and its directory
// (mode 0700, refused when others could change it); the file is made mode
// 0600 whoever created it. When another process holds it, Acquire calls
// waiting once with the holder's description and tries again until wait
// has passed; then it returns a *HeldError. Keep the Lock reachable for as
// long as it must be held: the garbage collector closes an unreachable
// one's file, which releases it.
func Acquire(path string, wait time.Duration, waiting func(holder string)) (*Lock, error) {
	dir, err := securedir.Open(filepath.Dir(path), securedir.Options{Create: true, Mode: 0o700, Group: securedir.NoGroup})
	if err != nil {
		return nil, fmt.Errorf("node lock: %w", err)
	}
	defer dir.Close()
	file, err := dir.OpenFile(filepath.Base(path), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("node lock: open %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			file.Close()
			return nil, fmt.Errorf("node lock: lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder := describeHolder(file)
			file.Close()
			return nil, &HeldError{Path: path, Holder: holder, Waited: wait}
		}
		if !told && waiting != nil {
			waiting(describeHolder(file))
			told = true
		}
		time.Sleep(retryEvery)
	}
	// An older file may have been made with a wider mode.
	if err := file.Chmod(fileMode); err != nil {
		file.Close()
		return nil, fmt.Errorf("node lock: chmod %s: %w", path, err)
	}
	if err := writeHolder(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("node lock: write holder to %s: %w", path, err)
	}
	return &Lock{file: file}, nil
}

// Release drops the lock; the file stays for the next agent.
func (l *Lock) Release() error { return l.file.Close() }

// writeHolder records this process as the holder, for the error of the
// next agent that finds the lock held.
func writeHolder(file *os.File) error {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	if err := file.Truncate(0); err != nil {
		return err
	}
	_, err = file.WriteAt([]byte(fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))), 0)
	return err
}

// describeHolder reads who holds the lock, as the holder wrote it.
func describeHolder(file *os.File) string {
	content, err := io.ReadAll(io.NewSectionReader(file, 0, 256))
	holder := strings.TrimSpace(string(content))
	if err != nil || holder == "" {
		return "holder unknown"
	}
	return holder
}
