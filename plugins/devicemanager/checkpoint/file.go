package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
	content, err := os.ReadFile(path)
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
	content, err = os.ReadFile(journal)
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
	if err := writeAtomically(path, content); err != nil {
		return err
	}
	if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove checkpoint journal %s: %w", journalPath(path), err)
	}
	return nil
}

// writeAtomically replaces path by content: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeAtomically(path string, content []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create checkpoint directory %s: %w", dir, err)
	}
	temp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary checkpoint in %s: %w", dir, err)
	}
	tempPath := temp.Name()
	if err := writeAndSync(temp, content); err != nil {
		os.Remove(tempPath)
		return fmt.Errorf("write checkpoint %s: %w", tempPath, err)
	}
	if err := os.Rename(tempPath, path); err != nil {
		os.Remove(tempPath)
		return fmt.Errorf("replace checkpoint %s: %w", path, err)
	}
	return syncDir(dir)
}

func writeAndSync(temp *os.File, content []byte) error {
	// CreateTemp makes the file 0600 already; Chmod states it for readers
	// and guards against a future change of CreateTemp's default.
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

// syncDir makes the rename durable.
func syncDir(dir string) error {
	handle, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open checkpoint directory %s for fsync: %w", dir, err)
	}
	defer handle.Close()
	if err := handle.Sync(); err != nil {
		return fmt.Errorf("fsync checkpoint directory %s: %w", dir, err)
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
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("move corrupt checkpoint %s aside: %w", path, err)
	}
	journal := journalPath(path)
	if err := os.Rename(journal, journal+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return aside, fmt.Errorf("move checkpoint journal %s aside: %w", journal, err)
	}
	return aside, syncDir(filepath.Dir(path))
}
