// Package unixsocket tells one incarnation of a Unix socket file from
// another at the same path, so that a server removes only the socket it
// made. When a DaemonSet replaces the agent, the new agent can make its
// sockets while the old one is still shutting down; the old one must not
// remove them on its way out. It also makes a server's socket (Listen):
// with its mode and group set before it appears at its path, in a
// directory that lets no one else in.
package unixsocket

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
)

// ID is one incarnation of a socket file. The inode number alone does not
// tell: a filesystem reuses the number of a removed file. With the
// modification time, set when the socket is made, a reused number still
// differs. Not the change time: chmod, chown and a relabel change it, and
// the socket is still the same one.
type ID struct {
	dev, ino            uint64
	mtimeSec, mtimeNsec int64
}

var errNotSocket = errors.New("not a socket")

// ErrReplaced says the socket at a path is no longer the incarnation a
// caller meant to reach.
var ErrReplaced = errors.New("replaced by another socket")

// Stat returns the identity of the socket at path.
func Stat(path string) (ID, error) {
	info, err := os.Stat(path)
	if err != nil {
		return ID{}, err
	}
	if info.Mode()&os.ModeSocket == 0 {
		return ID{}, fmt.Errorf("%s is %w (mode %s)", path, errNotSocket, info.Mode())
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, fmt.Errorf("stat %s: no inode information on this platform", path)
	}
	return ID{dev: uint64(st.Dev), ino: st.Ino, mtimeSec: int64(st.Mtim.Sec), mtimeNsec: int64(st.Mtim.Nsec)}, nil
}

// RemoveIfSame removes the socket at path if it is still own. A missing
// file, or another socket or file now at path, is left alone and is not an
// error: it belongs to whoever made it.
func RemoveIfSame(path string, own ID) error {
	if own == (ID{}) {
		return nil
	}
	current, err := Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotSocket):
		return nil
	case err != nil:
		return fmt.Errorf("check socket %s before removing it: %w", path, err)
	case current != own:
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove socket %s: %w", path, err)
	}
	return nil
}

// Dial connects to the socket at path only while it is the incarnation
// want. A client that retries its connection to a path reaches whichever
// server listens there at the time; Dial refuses to reach a newer one
// instead. The path is checked before and after connecting: an incarnation
// never comes back once replaced, so the same ID both times means the
// connection reached it. A connection made to a newer socket is closed
// before a byte is sent.
func Dial(ctx context.Context, path string, want ID) (net.Conn, error) {
	if err := isStill(path, want); err != nil {
		return nil, err
	}
	beforeConnect()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := isStill(path, want); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// beforeConnect runs between Dial's first look at the path and its
// connection; tests replace the socket there.
var beforeConnect = func() {}

func isStill(path string, want ID) error {
	current, err := Stat(path)
	if err != nil {
		return err
	}
	if current != want {
		return fmt.Errorf("socket %s: %w", path, ErrReplaced)
	}
	return nil
}
