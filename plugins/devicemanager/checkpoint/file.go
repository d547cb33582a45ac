package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// fileMode is the permission of the checkpoint and its journal: they hold
// every memif secret.
const fileMode = 0o600

// Load reads the checkpoint at path and the journal that extends it. A
// missing checkpoint is an empty one; a stale journal adds nothing. Damage
// loses only what it covers: Load returns everything else with a
// *DamageError saying what was lost (a snapshot that cannot be used is
// replaced by nothing, its journal still applied; a journal record that
// does not check out is skipped). A journal that only ends in a torn
// record gives what precedes it with a *TornTailError. Any other error
// (the directory or a file cannot be read) comes with no data.
func Load(path string) (Data, error) {
	dir, err := openDir(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Data{}, nil
	}
	if err != nil {
		return Data{}, err
	}
	defer dir.Close()
	journal := journalPath(path)
	snapshot, snapshotErr := dir.ReadFile(filepath.Base(path))
	journalContent, journalErr := dir.ReadFile(filepath.Base(journal))
	switch {
	case snapshotErr != nil && !errors.Is(snapshotErr, fs.ErrNotExist):
		return Data{}, fmt.Errorf("read checkpoint %s: %w", path, snapshotErr)
	case journalErr != nil && !errors.Is(journalErr, fs.ErrNotExist):
		return Data{}, fmt.Errorf("read checkpoint journal %s: %w", journal, journalErr)
	case snapshotErr != nil && journalErr != nil:
		return Data{}, nil
	}
	damage := &DamageError{Path: path}
	var data Data
	var info snapshotInfo
	if snapshotErr != nil {
		damage.lose(1, &CorruptError{Path: path, Reason: "the file is missing, yet its journal is there"})
	} else if data, info, err = decodeSnapshot(path, snapshot); err != nil {
		data = Data{}
		damage.lose(1, err)
	} else if info.journal == 0 {
		return data, nil
	}
	if journalErr != nil {
		damage.lose(missingJournal(journal, info))
		return data, damage.orNil()
	}
	records, torn, skipped, err := decodeJournal(journal, journalContent, info.journal)
	if err != nil {
		damage.lose(1, err)
	}
	for _, err := range skipped {
		damage.lose(1, err)
	}
	data, skipped = data.apply(records)
	for _, err := range skipped {
		damage.lose(0, err)
	}
	if torn > 0 {
		tornErr := &TornTailError{Path: journal, Offset: torn, Bytes: len(journalContent) - torn}
		if len(damage.Problems) == 0 {
			return data, tornErr
		}
		damage.lose(1, tornErr)
	}
	return data, damage.orNil()
}

// missingJournal is what a missing journal loses: one part when the
// snapshot's journal was made before it (version 3), so that it was there
// and has been lost; none that can be told when the snapshot is of
// version 2, whose writer made the journal after it (a crash in between
// leaves none, and nothing lost), or is itself lost.
func missingJournal(journal string, info snapshotInfo) (int, error) {
	if info.journalMadeFirst {
		return 1, &CorruptError{Path: journal, Reason: fmt.Sprintf("the file is missing: the changes saved after the snapshot are lost (the snapshot names journal %d, which was made before it)", info.journal)}
	}
	return 0, &CorruptError{Path: journal, Reason: "the file is missing: the changes saved after the snapshot, if any, are lost"}
}

// DamageError says what of a checkpoint Load could not use. The data Load
// returns with it is everything the damage did not cover.
type DamageError struct {
	Path string
	// Lost counts the parts whose content is gone: the snapshot, an
	// unusable journal, each skipped stretch of journal records.
	Lost int
	// Problems says what was wrong with each, *CorruptError or
	// *TornTailError, and which changes were skipped for them.
	Problems []error
}

func (e *DamageError) lose(parts int, problem error) {
	e.Lost += parts
	e.Problems = append(e.Problems, problem)
}

func (e *DamageError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// Error implements error.
func (e *DamageError) Error() string {
	text := fmt.Sprintf("checkpoint %s is damaged, %d parts lost; kept what the damage did not cover", e.Path, e.Lost)
	for _, problem := range e.Problems {
		text += "; " + problem.Error()
	}
	return text
}

// Unwrap makes the problems visible to errors.Is and errors.As.
func (e *DamageError) Unwrap() []error { return e.Problems }

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

// writeAtomically replaces path, in dir, by content (Dir.ReplaceFile).
func writeAtomically(dir *securedir.Dir, path string, content []byte) error {
	if err := dir.ReplaceFile(filepath.Base(path), content, fileMode); err != nil {
		return fmt.Errorf("replace checkpoint %s: %w", path, err)
	}
	return nil
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
