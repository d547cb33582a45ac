package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// fileMode is the permission of the checkpoint and its journal: they hold
// every memif secret.
const fileMode = 0o600

// Load reads the checkpoint at path and the journal that extends it. A
// missing file is an empty checkpoint; a missing or stale journal adds
// nothing; a file that cannot be used is a *CorruptError (see MoveAside).
// When the journal ends in a torn record, Load returns what precedes it
// with a *TornTailError.
func Load(path string) (Data, error) {
	dir, err := openDir(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Data{}, nil
	}
	if err != nil {
		return Data{}, err
	}
	defer dir.Close()
	content, err := dir.ReadFile(filepath.Base(path))
	if errors.Is(err, fs.ErrNotExist) {
		return Data{}, nil
	}
	if err != nil {
		return Data{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	data, generation, err := decodeSnapshot(path, content)
	if err != nil || generation == 0 {
		return data, err
	}
	journal := journalPath(path)
	content, err = dir.ReadFile(filepath.Base(journal))
	if errors.Is(err, fs.ErrNotExist) {
		return data, nil // a compaction stopped before writing its journal
	}
	if err != nil {
		return Data{}, fmt.Errorf("read checkpoint journal %s: %w", journal, err)
	}
	records, torn, err := decodeJournal(journal, content, generation)
	if err != nil {
		return Data{}, err
	}
	data, err = data.apply(records)
	if err != nil {
		return Data{}, &CorruptError{Path: journal, Reason: err.Error()}
	}
	if torn > 0 {
		return data, &TornTailError{Path: journal, Offset: torn, Bytes: len(content) - torn}
	}
	return data, nil
}

// TornTailError says that Load dropped the last record of the journal: it
// was cut short by a crash while it was appended (its Save never returned,
// so nothing was handed out on it), or damaged since. The data Load returns
// with it is everything before that record: usable, but perhaps not all
// that was ever saved.
type TornTailError struct {
	Path          string
	Offset, Bytes int
}

// Error implements error.
func (e *TornTailError) Error() string {
	return fmt.Sprintf("checkpoint journal %s ends in a torn record: dropped %d bytes from byte %d (a save cut short by a crash, or damage)", e.Path, e.Bytes, e.Offset)
}

// Save writes data to path as a snapshot with no journal, atomically:
// readers see the old file or the new one, never a mix, even across a
// crash. The parent directory is created (mode 0700) when missing. A
// journal left from a Writer is removed: it no longer applies.
func Save(path string, data Data) error {
	content, err := Encode(data)
	if err != nil {
		return err
	}
	dir, err := openDir(path, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := writeAtomically(dir, path, content); err != nil {
		return err
	}
	if err := dir.Remove(filepath.Base(journalPath(path))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove checkpoint journal %s: %w", journalPath(path), err)
	}
	return nil
}

// openDir opens the checkpoint's directory, refusing one that another
// user could change (they could redirect the files, secrets and all,
// through a link); with create it makes a missing one, mode 0700.
func openDir(path string, create bool) (*securedir.Dir, error) {
	dir, err := securedir.Open(filepath.Dir(path), securedir.Options{Create: create, Mode: 0o700, Group: securedir.NoGroup})
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	return dir, nil
}

// writeAtomically replaces path, in dir, by content: a temporary file in
// the same directory, fsync, rename, fsync of the directory.
func writeAtomically(dir *securedir.Dir, path string, content []byte) error {
	name := filepath.Base(path)
	tempName, temp, err := createTemp(dir, name)
	if err != nil {
		return fmt.Errorf("create temporary checkpoint in %s: %w", dir.Path(), err)
	}
	if err := writeAndSync(temp, content); err != nil {
		dir.Remove(tempName)
		return fmt.Errorf("write checkpoint %s: %w", dir.Join(tempName), err)
	}
	if err := dir.Rename(tempName, name); err != nil {
		dir.Remove(tempName)
		return fmt.Errorf("replace checkpoint %s: %w", path, err)
	}
	return syncDir(dir)
}

// createTemp creates a new file ".<name>.tmp-<random>", mode 0600.
func createTemp(dir *securedir.Dir, name string) (string, *os.File, error) {
	for {
		var suffix [8]byte
		if _, err := rand.Read(suffix[:]); err != nil {
			return "", nil, err
		}
		tempName := "." + name + ".tmp-" + hex.EncodeToString(suffix[:])
		f, err := dir.OpenFile(tempName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, fs.ErrExist) {
			return tempName, f, err
		}
	}
}

func writeAndSync(temp *os.File, content []byte) error {
	// The file was created 0600, cut by the umask; Chmod states it.
	err := temp.Chmod(fileMode)
	if err == nil {
		_, err = temp.Write(content)
	}
	if err == nil {
		err = temp.Sync()
	}
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	return err
}

// syncDir makes a rename durable.
func syncDir(dir *securedir.Dir) error {
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("fsync checkpoint directory: %w", err)
	}
	return nil
}

// MoveAside renames a bad checkpoint to "<path>.corrupt-<UTC timestamp>",
// and its journal, if any, to "<path>.journal.corrupt-<same timestamp>", so
// that the operator can inspect them and the agent can start afresh. It
// returns the checkpoint's new path.
func MoveAside(path string, now time.Time) (string, error) {
	suffix := ".corrupt-" + now.UTC().Format("20060102T150405.000000000Z")
	aside := path + suffix
	dir, err := openDir(path, false)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	name := filepath.Base(path)
	if err := dir.Rename(name, name+suffix); err != nil {
		return "", fmt.Errorf("move corrupt checkpoint %s aside: %w", path, err)
	}
	journal := filepath.Base(journalPath(path))
	if err := dir.Rename(journal, journal+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return aside, fmt.Errorf("move checkpoint journal %s aside: %w", dir.Join(journal), err)
	}
	return aside, syncDir(dir)
}
