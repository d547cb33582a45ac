package securedir

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// OpenDir opens the directory name in d, never through a symbolic link.
// Unlike Open it does not check who may write to it: it is for a
// directory the agent made for others to write in too, such as an
// allocation's directory that its pod shares, where every operation
// through the returned Dir still refuses links.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := d.openSubdir(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open directory", Path: d.Join(name), Err: err}
	}
	return &Dir{path: d.Join(name), fd: fd}, nil
}

// Group returns the directory's group ID.
func (d *Dir) Group() (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return int(st.Gid), nil
}
