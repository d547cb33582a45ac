package securedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// NoGroup, as Options.Group, lets no group write to the directory.
const NoGroup = -1

// Options say how Open treats the directory.
type Options struct {
	// Create makes the directory, with Mode, when it is missing; its
	// parents are made with mode 0755.
	Create bool
	// Mode is the permission of a directory Open creates.
	Mode os.FileMode
	// Group is a group ID allowed to write to the directory besides its
	// owner (a configured dir-group), or NoGroup.
	Group int
}

// Dir is an open directory. Close it when done.
type Dir struct {
	path string
	fd   int
}

// ErrUnsafe is matched (errors.Is) by the error of Open for a directory
// that others could change.
var ErrUnsafe = errors.New("directory is not safe")

// Open opens the directory at path after checking that only the agent's
// user (and opts.Group) can change it.
func Open(path string, opts Options) (*Dir, error) {
	// Opened first, and made only when that fails for want of it (or of a
	// parent): the directory is there on every call but the first, and
	// the event loop opens the socket root for every allocation.
	fd, err := openDir(path)
	created := false
	if opts.Create && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
		if created, err = create(path, opts.Mode); err != nil {
			return nil, err
		}
		fd, err = openDir(path)
	}
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("open directory %s: %w: it is a symbolic link or not a directory", path, ErrUnsafe)
	case err != nil:
		return nil, &fs.PathError{Op: "open directory", Path: path, Err: err}
	}
	d := &Dir{path: path, fd: fd}
	if created {
		// mkdir's mode was cut by the umask.
		err = unix.Fchmod(fd, uint32(opts.Mode.Perm()))
	}
	if err == nil {
		err = d.check(opts.Group)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openDir opens the directory at path, following no link at its end.
func openDir(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// create makes the directory at path with mode, and its parents with
// mode 0755, and tells whether it made it (another may have first).
func create(path string, mode os.FileMode) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("create parent of %s: %w", path, err)
	}
	err := unix.Mkdir(path, uint32(mode.Perm()))
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return false, fmt.Errorf("create directory %s: %w", path, err)
	}
	return err == nil, nil
}

// check refuses a directory that others than the agent's user (and group)
// can change.
func (d *Dir) check(group int) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: d.path, Err: err}
	}
	mode := st.Mode & 0o7777
	owner := uint32(os.Geteuid())
	groupWritable := mode&0o020 != 0 && (group == NoGroup || st.Gid != uint32(group))
	if st.Uid == owner && mode&0o002 == 0 && !groupWritable {
		return nil
	}
	return fmt.Errorf("%w: %s is owned by uid %d gid %d with mode %#o; it must be owned by uid %d and writable by no other user%s (for example: chown %d %s && chmod go-w %s)",
		ErrUnsafe, d.path, st.Uid, st.Gid, mode, owner, groupNote(group), owner, d.path, d.path)
}

func groupNote(group int) string {
	if group == NoGroup {
		return " or group"
	}
	return fmt.Sprintf(" or group than gid %d", group)
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Close closes the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Join is the path of name in the directory, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, name) }

func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q in %s: not a plain file name", name, d.path)
	}
	return nil
}

// OpenFile opens name in the directory, never through a symbolic link,
// and only a regular file.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%w (a symbolic link)", err)
		}
		return nil, &fs.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, &fs.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	// O_NONBLOCK only kept a planted FIFO from blocking the open.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// ReadFile reads the regular file name.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Rename renames oldName to newName, both in the directory.
func (d *Dir) Rename(oldName, newName string) error {
	if err := errors.Join(d.checkName(oldName), d.checkName(newName)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, oldName, d.fd, newName); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(oldName), New: d.Join(newName), Err: err}
	}
	return nil
}

// Remove removes the file or symbolic link name; a missing one is
// fs.ErrNotExist.
func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// Sync makes the directory's entries durable.
func (d *Dir) Sync() error {
	if err := unix.Fsync(d.fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: d.path, Err: err}
	}
	return nil
}

// Exists tells whether name is in the directory (a link counts, unfollowed).
func (d *Dir) Exists(name string) (bool, error) {
	if err := d.checkName(name); err != nil {
		return false, err
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	return true, nil
}

// Entries lists the directory.
func (d *Dir) Entries() ([]fs.DirEntry, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.ReadDir(-1)
}

// Mkdir makes the directory name in this one with mode and, unless gid is
// NoGroup, that group; with existOK an existing directory (never a link)
// gets them too. It tells whether it made the directory.
func (d *Dir) Mkdir(name string, mode os.FileMode, gid int, existOK bool) (made bool, err error) {
	if err := d.checkName(name); err != nil {
		return false, err
	}
	err = unix.Mkdirat(d.fd, name, uint32(mode.Perm()))
	switch {
	case err == nil:
		made = true
	case !errors.Is(err, unix.EEXIST) || !existOK:
		return false, &fs.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	sub, err := d.openSubdir(name)
	if err == nil {
		err = setAccess(sub, mode, gid)
		unix.Close(sub)
	}
	if err != nil {
		err = &fs.PathError{Op: "set mode and group of", Path: d.Join(name), Err: err}
		if made {
			return false, errors.Join(err, unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR))
		}
		return false, err
	}
	return made, nil
}

func (d *Dir) openSubdir(name string) (int, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("%w: not a directory, or a symbolic link", err)
	}
	return fd, err
}

// setAccess sets the mode (mkdir's was cut by the umask) and group through
// the directory's own descriptor.
func setAccess(fd int, mode os.FileMode, gid int) error {
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return err
	}
	if gid != NoGroup {
		return unix.Fchown(fd, -1, gid)
	}
	return nil
}
