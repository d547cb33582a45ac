package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Defaults of the API socket: root-only, in a directory of its own.
const (
	DefaultSocketPath = "/var/run/memif-agent/api.sock"
	DefaultSocketMode = fs.FileMode(0o600)
)

// ListenUnix listens on a Unix socket at path with the given mode. A missing
// parent directory is created with the narrowest mode that still lets the
// socket's users reach it. A stale socket left by a previous run is removed;
// a socket that still answers, or a file that is not a socket, is an error.
func ListenUnix(path string, mode fs.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirModeFor(mode)); err != nil {
		return nil, fmt.Errorf("create API socket directory for %s: %w", path, err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on API socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		listener.Close()
		return nil, fmt.Errorf("set mode %v on API socket %s: %w", mode, path, err)
	}
	return listener, nil
}

// dirModeFor grants the directory search access to exactly the classes
// (group, others) that the socket mode lets connect.
func dirModeFor(socketMode fs.FileMode) fs.FileMode {
	dirMode := fs.FileMode(0o700)
	if socketMode&0o070 != 0 {
		dirMode |= 0o050
	}
	if socketMode&0o007 != 0 {
		dirMode |= 0o005
	}
	return dirMode
}

func removeStaleSocket(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check API socket %s: %w", path, err)
	}
	if info.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("API socket path %s exists and is not a socket: move it away or choose another path", path)
	}
	conn, err := net.Dial("unix", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("API socket %s is in use by another process: is another memif-agent running?", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check API socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale API socket %s: %w", path, err)
	}
	return nil
}
