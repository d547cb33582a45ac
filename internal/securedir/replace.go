package securedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// tempSuffixBytes is how many random bytes, in hex, end a temporary
// file's name.
const tempSuffixBytes = 8

// CreateTemp creates a new file ".<name>.tmp-<random>" in the directory,
// mode perm cut by the umask, for the caller to fill and rename over
// name; a file someone else made under that name is never opened.
func (d *Dir) CreateTemp(name string, perm os.FileMode) (string, *os.File, error) {
	for {
		var suffix [tempSuffixBytes]byte
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

// RemoveTemps removes the files CreateTemp made for each of names that
// are still there: a writer killed between CreateTemp and the rename
// leaves its temporary file, which nothing else ever removes. Only the
// writer of those names may call it, when no replace of them is under
// way. It returns the paths it removed.
func (d *Dir) RemoveTemps(names ...string) ([]string, error) {
	entries, err := d.Entries()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, entry := range entries {
		if !entry.Type().IsRegular() || !slices.ContainsFunc(names, func(name string) bool { return isTempOf(entry.Name(), name) }) {
			continue
		}
		if err := d.Remove(entry.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d.Join(entry.Name()))
	}
	return removed, errors.Join(errs...)
}

// isTempOf says whether file has the name CreateTemp gives name's
// temporary files.
func isTempOf(file, name string) bool {
	suffix, ok := strings.CutPrefix(file, "."+name+".tmp-")
	if !ok || len(suffix) != 2*tempSuffixBytes {
		return false
	}
	_, err := hex.DecodeString(suffix)
	return err == nil
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
