package unixsocket

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Listen listens on a Unix socket at path with the given mode, owned by
// group gid unless gid is -1 (unixgroup.None). A missing parent directory
// is created with the narrowest mode that still lets the socket's users
// reach it, and the same group. A stale socket left by a previous run is
// removed; a socket that still answers, or a file that is not a socket, is
// an error.
//
// The socket is made under a temporary name and renamed to path only once
// its mode and group are set, so path never has the wider mode the umask
// gives a new socket. The listener does not unlink path when it closes:
// the caller removes it with RemoveIfSame and the returned ID, since a
// replacement server may already listen there.
func Listen(path string, mode fs.FileMode, gid int) (net.Listener, ID, error) {
	if err := makeSocketDir(filepath.Dir(path), mode, gid); err != nil {
		return nil, ID{}, fmt.Errorf("create the directory of socket %s: %w", path, err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, ID{}, err
	}
	tmpPath := path + ".new"
	if err := removeStaleSocket(tmpPath); err != nil {
		return nil, ID{}, err
	}
	listener, err := net.Listen("unix", tmpPath)
	if err != nil {
		return nil, ID{}, fmt.Errorf("listen on socket %s: %w", tmpPath, err)
	}
	if err := publishSocket(tmpPath, path, mode, gid); err != nil {
		listener.Close()
		return nil, ID{}, err
	}
	socket, err := Stat(path)
	if err != nil {
		listener.Close()
		return nil, ID{}, fmt.Errorf("socket vanished as it was made: %w", err)
	}
	listener.(*net.UnixListener).SetUnlinkOnClose(false)
	return listener, socket, nil
}

// publishSocket sets the mode and group of the socket at tmpPath and
// renames it to path.
func publishSocket(tmpPath, path string, mode fs.FileMode, gid int) error {
	if err := os.Chmod(tmpPath, mode); err != nil {
		return fmt.Errorf("set mode %v on socket %s: %w", mode, tmpPath, err)
	}
	if err := os.Lchown(tmpPath, -1, gid); err != nil {
		return fmt.Errorf("set group %d on socket %s: %w", gid, tmpPath, err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return fmt.Errorf("move socket %s to %s: %w", tmpPath, path, err)
	}
	return nil
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
		return fmt.Errorf("check socket %s: %w", path, err)
	}
	if info.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket path %s exists and is not a socket: move it away or choose another path", path)
	}
	conn, err := net.Dial("unix", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("socket %s is in use by another process: is another memif-agent running?", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}
