package securedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CreateTemp creates a new file ".<name>.tmp-<random>" in the directory,
// mode perm cut by the umask, for the caller to fill and rename over
// name; a file someone else made under that name is never opened.
func (d *Dir) CreateTemp(name string, perm os.FileMode) (string, *os.File, error) {
	for {
		var suffix [8]byte
		if _, err := rand.Read(suffix[:]); err != nil {
			return "", nil, err
		}
		tempName := "." + name + ".tmp-" + hex.EncodeToString(suffix[:])
		f, err := d.OpenFile(tempName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return tempName, f, err
		}
	}
}

// ReplaceFile replaces name by content, mode perm, atomically and
// durably: a file from CreateTemp, its mode stated (the umask may have
// cut it), fsync, rename, fsync of the directory. A reader sees the old
// file or the new one whole.
func (d *Dir) ReplaceFile(name string, content []byte, perm os.FileMode) error {
	tempName, temp, err := d.CreateTemp(name, perm)
	if err != nil {
		return fmt.Errorf("create a temporary file for %s: %w", d.Join(name), err)
	}
	err = temp.Chmod(perm)
	if err == nil {
		_, err = temp.Write(content)
	}
	if err == nil {
		err = temp.Sync()
	}
	if err = errors.Join(err, temp.Close()); err == nil {
		err = d.Rename(tempName, name)
	}
	if err != nil {
		return errors.Join(err, d.Remove(tempName))
	}
	return d.Sync()
}
