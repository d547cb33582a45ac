package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Defaults of the API socket: root-only, in a directory of its own.
const (
	DefaultSocketPath = "/var/run/memif-agent/api.sock"
	DefaultSocketMode = fs.FileMode(0o600)
)

// NoGroup keeps the group a file is created with.
const NoGroup = -1

// ResolveGroup returns the ID of group, given by name or number; empty is
// NoGroup.
func ResolveGroup(group string) (int, error) {
	if group == "" {
		return NoGroup, nil
	}
	if gid, err := strconv.Atoi(group); err == nil && gid >= 0 {
		return gid, nil
	}
	found, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("API socket group %q: %w", group, err)
	}
	gid, err := strconv.Atoi(found.Gid)
	if err != nil {
		return 0, fmt.Errorf("API socket group %q has a non-numeric ID %q", group, found.Gid)
	}
	return gid, nil
}

// ListenUnix listens on a Unix socket at path with the given mode, owned by
// group gid unless gid is NoGroup. A missing parent directory is created
// with the narrowest mode that still lets the socket's users reach it, and
// the same group. A stale socket left by a previous run is removed; a
// socket that still answers, or a file that is not a socket, is an error.
func ListenUnix(path string, mode fs.FileMode, gid int) (net.Listener, error) {
	if err := makeSocketDir(filepath.Dir(path), mode, gid); err != nil {
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
	if err := os.Lchown(path, -1, gid); err != nil {
		listener.Close()
		return nil, fmt.Errorf("set group %d on API socket %s: %w", gid, path, err)
	}
	return listener, nil
}

// makeSocketDir creates dir if it is missing; an existing directory is left
// as it is, since it may not be the agent's.
func makeSocketDir(dir string, socketMode fs.FileMode, gid int) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, dirModeFor(socketMode)); err != nil {
		return err
	}
	return os.Chown(dir, -1, gid)
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
