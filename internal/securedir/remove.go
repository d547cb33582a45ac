package securedir

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxRemoveDepth bounds the directories RemoveAll holds open at once: one
// deeper is moved up into the Dir and removed by a later call, so that a
// tree of any depth (paths far longer than PATH_MAX) is removed with at
// most this many descriptors.
const maxRemoveDepth = 64

// emptyRounds is how often RemoveAll lists a directory again when others
// keep adding to it while it is emptied, before it gives up (the caller
// retries later).
const emptyRounds = 3

// direntBufSize is the buffer of one getdents call: some hundred names.
const direntBufSize = 8 << 10

// PrivateDir opens the directory name in d, making it when create is set
// and it is missing, and sets its mode to 0700. One that is a link, not
// the agent's user's, or writable by others is refused (ErrUnsafe): a
// dir-group member may write in d.
func (d *Dir) PrivateDir(name string, create bool) (*Dir, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	if create {
		if err := unix.Mkdirat(d.fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &fs.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
		}
	}
	fd, err := d.openSubdir(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open directory", Path: d.Join(name), Err: err}
	}
	sub := &Dir{path: d.Join(name), fd: fd}
	if err := sub.check(NoGroup); err != nil {
		sub.Close()
		return nil, err
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		sub.Close()
		return nil, &fs.PathError{Op: "chmod", Path: sub.path, Err: err}
	}
	return sub, nil
}

// RemoveSmall removes name when it is a link, a file, or a directory of at
// most maxEntries entries none of which is a directory, with a bounded
// number of system calls whatever name holds, and tells whether name is
// gone. Otherwise it leaves name (perhaps without some of its files) to
// MoveInto and RemoveAll.
func (d *Dir) RemoveSmall(name string, maxEntries int) bool {
	if d.checkName(name) != nil {
		return false
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return true
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf := make([]byte, direntBufSize)
	var names []string
	for len(names) <= maxEntries {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	if len(names) > maxEntries {
		return false
	}
	for _, entry := range names {
		if err := unix.Unlinkat(fd, entry, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return false
		}
	}
	err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	return err == nil || errors.Is(err, unix.ENOENT)
}

// MoveInto renames name in d into to, under a new name it returns (name
// and a random suffix), in one rename: nothing of name is read. A
// directory must be writable to be moved to another parent (its ".."
// changes), so one that is not is first made the agent's user's, mode
// 0700 (see RemoveAll).
func (d *Dir) MoveInto(name string, to *Dir) (string, error) {
	if err := d.checkName(name); err != nil {
		return "", err
	}
	newName, err := moveInto(d.fd, name, to.fd, name)
	if err != nil {
		return "", &os.LinkError{Op: "move", Old: d.Join(name), New: to.path, Err: err}
	}
	return newName, nil
}

func moveInto(parent int, name string, to int, prefix string) (string, error) {
	newName, err := freshName(prefix)
	if err != nil {
		return "", err
	}
	err = unix.Renameat(parent, name, to, newName)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		if ownErr := ownDir(parent, name); ownErr != nil {
			return "", errors.Join(err, ownErr)
		}
		err = unix.Renameat(parent, name, to, newName)
	}
	return newName, err
}

// freshName is prefix (cut to leave room) and a random suffix.
func freshName(prefix string) (string, error) {
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("draw a name: %w", err)
	}
	return fmt.Sprintf("%.200s.%s", prefix, hex.EncodeToString(suffix[:])), nil
}

// RemoveAll removes name and everything in it, never following a link: a
// link is removed, not what it points to. A missing name is no error.
//
// Each directory it enters it first makes the agent's user's (chown,
// which CAP_CHOWN allows) with mode 0700 (as its owner, through a
// descriptor of the directory itself, never a link), so that a directory
// another user made unreadable (mode 000) or sticky is removed without
// CAP_DAC_OVERRIDE or CAP_FOWNER. A directory deeper than maxRemoveDepth
// is moved into d, as a new entry for the caller to remove next. ctx ends
// it between two reads of a directory, leaving the rest.
func (d *Dir) RemoveAll(ctx context.Context, name string) error {
	return d.RemoveAllPaced(ctx, name, nil)
}

// RemoveAllPaced is RemoveAll calling pause, when not nil, after each
// batch of names it removed (one read of a directory, some hundred), so
// that the caller may let others' work go first; an error from pause ends
// it there, leaving the rest.
func (d *Dir) RemoveAllPaced(ctx context.Context, name string, pause func(context.Context) error) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if pause == nil {
		pause = func(ctx context.Context) error { return ctx.Err() }
	}
	if err := removeAt(ctx, pause, d.fd, d.fd, name, 0); err != nil {
		return within(d.path, err)
	}
	return nil
}

// removeAt removes name in the directory parent, depth levels below the
// entry RemoveAll was given; trash is where deeper directories go.
func removeAt(ctx context.Context, pause func(context.Context) error, trash, parent int, name string, depth int) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	if depth == maxRemoveDepth {
		if _, err := moveInto(parent, name, trash, "deep"); err != nil && !errors.Is(err, unix.ENOENT) {
			return &fs.PathError{Op: "move up", Path: name, Err: err}
		}
		return nil
	}
	unlinkErr := err
	fd, err := openOwned(parent, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ENOTDIR):
		return &fs.PathError{Op: "remove", Path: name, Err: unlinkErr}
	case err != nil:
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	for round := 1; ; round++ {
		if err := emptyDir(ctx, pause, trash, fd, depth); err != nil {
			return within(name, err)
		}
		err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) || round == emptyRounds {
			return &fs.PathError{Op: "remove", Path: name, Err: err}
		}
		if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
			return &fs.PathError{Op: "rewind", Path: name, Err: err}
		}
	}
}

// emptyDir removes what the directory fd holds, a batch of names at a
// time, pausing after each: it never holds a whole listing.
func emptyDir(ctx context.Context, pause func(context.Context) error, trash, fd, depth int) error {
	buf := make([]byte, direntBufSize)
	var names []string
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return &fs.PathError{Op: "read directory", Path: ".", Err: err}
		}
		if n == 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			if err := removeAt(ctx, pause, trash, fd, name, depth+1); err != nil {
				return err
			}
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

// openOwned opens the directory name in parent for reading, making it
// the agent's user's with mode 0700 first when it is not.
func openOwned(parent int, name string) (int, error) {
	pathFd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pathFd)
	if err := own(pathFd); err != nil {
		return -1, err
	}
	// "." of the O_PATH descriptor is the very directory checked above,
	// whatever has been renamed since.
	return unix.Openat(pathFd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func ownDir(parent int, name string) error {
	pathFd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pathFd)
	return own(pathFd)
}

// own makes the directory of the O_PATH descriptor pathFd the agent's
// user's, with mode 0700, unless it is already and its owner may list,
// enter and change it.
func own(pathFd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(pathFd, &st); err != nil {
		return err
	}
	uid := os.Geteuid()
	if st.Uid == uint32(uid) && st.Mode&0o700 == 0o700 {
		return nil
	}
	if st.Uid != uint32(uid) {
		if err := unix.Fchownat(pathFd, "", uid, -1, unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("take ownership (uid %d, mode %#o): %w", st.Uid, st.Mode&0o7777, err)
		}
	}
	// fchmod refuses an O_PATH descriptor; its /proc link leads to this
	// very directory, not through any name of the tree.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(pathFd), 0o700); err != nil {
		return fmt.Errorf("chmod 0700 through /proc/self/fd (mode %#o): %w", st.Mode&0o7777, err)
	}
	return nil
}

// within puts dir before the path of a failure in it.
func within(dir string, err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return &fs.PathError{Op: pathErr.Op, Path: dir + "/" + pathErr.Path, Err: pathErr.Err}
	}
	return fmt.Errorf("%s: %w", dir, err)
}
