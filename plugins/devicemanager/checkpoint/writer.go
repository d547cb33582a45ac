package checkpoint

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// compactAfter is how many journal records (one per Save) a Writer appends before it
// writes a fresh snapshot instead: it bounds the journal (a few hundred
// kilobytes) and the replay at load.
const compactAfter = 1024

// Writer persists successive states of the allocations at one checkpoint
// path. Its first Save, and every Save after compactAfter records or after
// a failed append, writes a snapshot and an empty journal (compaction);
// every other Save appends what changed since the previous Save to the
// journal and syncs it once. Either way the data is durable when Save
// returns. SaveBuffered appends the same record without the sync.
//
// A Writer assumes it is the only writer of its path, and is not safe for
// concurrent use (the device manager saves from its event loop).
type Writer struct {
	path string
	// generation of the journal being appended to; 0 until a compaction
	// succeeded, and after a failed append.
	generation uint64
	saved      map[string]Allocation
	records    int
	// journalSize is the journal's length as this writer left it: an
	// append goes only after exactly that.
	journalSize int64
	// unsynced: the journal ends in records SaveBuffered appended, which
	// the next Save syncs even when it appends nothing.
	unsynced bool
	// journal is the journal of generation, opened at the first append
	// after a compaction and kept open for the next ones: each append
	// then costs a stat, a write and a sync, not the walk of the path's
	// directories too. nil when none is open.
	journal *os.File
	// wrote, when set, is called after each file a compaction writes (a
	// test stops the writer there, as a crash would).
	wrote func()
}

// NewWriter returns a writer for path; it writes nothing until Save.
func NewWriter(path string) *Writer { return &Writer{path: path} }

// RemoveTemps removes the temporary files of the snapshot and the journal
// that a crash during a replace left in the checkpoint's directory (see
// securedir.Dir.RemoveTemps), and returns their paths; call it before the
// first Save. A missing directory holds none.
func (w *Writer) RemoveTemps() ([]string, error) {
	dir, err := openDir(w.path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.RemoveTemps(filepath.Base(w.path), filepath.Base(journalPath(w.path)), filepath.Base(bootPath(w.path)))
}

// Save persists data durably, and with it what SaveBuffered wrote before.
func (w *Writer) Save(data Data) error { return w.save(data, true) }

// SaveBuffered persists data to the journal without syncing it: it
// survives the agent's crash or restart (the kernel holds it), not the
// node's, until the next Save or compaction syncs it. A compaction is
// durable either way. For changes a node restart can do without (see the
// device manager's kubelet recovery).
func (w *Writer) SaveBuffered(data Data) error { return w.save(data, false) }

func (w *Writer) save(data Data, durable bool) error {
	if err := data.validate(); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", w.path, err)
	}
	if w.generation == 0 || w.records >= compactAfter {
		return w.compact(data)
	}
	changes := w.changes(data)
	if len(changes.Put) == 0 && len(changes.Delete) == 0 {
		if durable && w.unsynced {
			return w.syncJournal()
		}
		return nil
	}
	record, err := appendRecord(nil, changes)
	if err != nil {
		return err
	}
	if err := w.appendToJournal(record, durable); err != nil {
		// The journal may now end in a torn record: never append after it.
		w.closeJournal()
		w.generation = 0
		if compactErr := w.compact(data); compactErr != nil {
			return errors.Join(err, compactErr)
		}
		return nil
	}
	w.remember(data)
	w.records++
	w.journalSize += int64(len(record))
	w.unsynced = !durable
	return nil
}

// syncJournal makes what SaveBuffered appended durable.
func (w *Writer) syncJournal() error {
	if err := datasync(w.journal); err != nil {
		return fmt.Errorf("sync checkpoint journal %s: %w", journalPath(w.path), err)
	}
	w.unsynced = false
	return nil
}

// changes is the record that turns the saved state into data.
func (w *Writer) changes(data Data) journalRecord {
	var r journalRecord
	present := make(map[string]bool, len(data.Allocations))
	for _, a := range data.Allocations {
		present[a.ID] = true
		if saved, ok := w.saved[a.ID]; !ok || !equal(saved, a) {
			r.Put = append(r.Put, a)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(w.saved)) {
		if !present[id] {
			r.Delete = append(r.Delete, id)
		}
	}
	return r
}

// compact writes data as a snapshot naming a new journal generation, and
// that journal, empty. Whatever a crash interrupts, no loss is seen:
//   - With a journal there, the snapshot comes first: a crash before the
//     journal is replaced leaves the old one, which the new snapshot's
//     generation marks stale.
//   - With none, the new journal comes first, so that a snapshot naming
//     a journal is never on disk without it (Version 3): a missing journal
//     is a lost one. When there is no snapshot either (the node's first
//     Save), a snapshot naming no journal precedes it, so that a crash
//     does not leave a journal without its snapshot, which is a lost
//     snapshot.
func (w *Writer) compact(data Data) error {
	w.closeJournal()
	w.generation = 0
	generation, err := newGeneration()
	if err != nil {
		return err
	}
	snapshot, err := encodeSnapshot(data, generation)
	if err != nil {
		return err
	}
	dir, err := openDir(w.path, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	journal := journalPath(w.path)
	hadJournal, err := dir.Exists(filepath.Base(journal))
	if err == nil && !hadJournal {
		err = w.startJournal(dir, data, generation)
	}
	if err == nil {
		err = w.write(dir, w.path, snapshot)
	}
	if err != nil {
		return err
	}
	if hadJournal {
		if err := w.write(dir, journal, encodeJournalHeader(generation)); err != nil {
			return fmt.Errorf("start checkpoint journal: %w", err)
		}
	}
	w.generation, w.records, w.journalSize, w.unsynced = generation, 0, int64(journalHeaderSize), false
	w.remember(data)
	return nil
}

// startJournal makes the empty journal of generation where there is none,
// before the snapshot naming it (see compact).
func (w *Writer) startJournal(dir *securedir.Dir, data Data, generation uint64) error {
	hasSnapshot, err := dir.Exists(filepath.Base(w.path))
	if err != nil {
		return err
	}
	if !hasSnapshot {
		plain, err := encodeSnapshot(data, 0)
		if err == nil {
			err = w.write(dir, w.path, plain)
		}
		if err != nil {
			return err
		}
	}
	if err := w.write(dir, journalPath(w.path), encodeJournalHeader(generation)); err != nil {
		return fmt.Errorf("start checkpoint journal: %w", err)
	}
	return nil
}

// write replaces path durably (writeAtomically).
func (w *Writer) write(dir *securedir.Dir, path string, content []byte) error {
	if err := writeAtomically(dir, path, content); err != nil {
		return err
	}
	if w.wrote != nil {
		w.wrote()
	}
	return nil
}

// remember records data as saved; it keeps copies, not the caller's slices.
func (w *Writer) remember(data Data) {
	saved := make(map[string]Allocation, len(data.Allocations))
	for _, a := range data.Allocations {
		a.DeviceIDs = slices.Clone(a.DeviceIDs)
		saved[a.ID] = a
	}
	w.saved = saved
}

func equal(a, b Allocation) bool {
	return a.ID == b.ID && slices.Equal(a.DeviceIDs, b.DeviceIDs) && a.HostDir == b.HostDir &&
		a.HostSocket == b.HostSocket && a.ContainerSocket == b.ContainerSocket && a.Secret == b.Secret &&
		a.AllocatedAt.Equal(b.AllocatedAt) && a.PodNamespace == b.PodNamespace && a.PodName == b.PodName &&
		a.PodUID == b.PodUID && a.ContainerName == b.ContainerName && a.ClaimUID == b.ClaimUID &&
		a.ClaimNamespace == b.ClaimNamespace && a.ClaimName == b.ClaimName && a.Request == b.Request
}

// newGeneration is random, never 0, so that a journal from an earlier run
// of the agent is never taken for the current one.
func newGeneration() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("draw checkpoint journal generation: %w", err)
		}
		if generation := binary.BigEndian.Uint64(b[:]); generation != 0 {
			return generation, nil
		}
	}
}

// appendToJournal appends records to the journal, which must be
// w.journalSize bytes long and still at its path (else something other
// than this writer changed or replaced it), and when durable syncs its
// data (fdatasync: the size is part of it; nothing else about the file
// changed), which makes the records appended before durable too.
func (w *Writer) appendToJournal(records []byte, durable bool) error {
	path := journalPath(w.path)
	if w.journal == nil {
		journal, err := openJournal(path)
		if err != nil {
			return err
		}
		w.journal = journal
	}
	info, err := w.journal.Stat()
	if err == nil {
		err = unchanged(info, w.journalSize)
	}
	if err == nil {
		_, err = w.journal.Write(records)
	}
	if err == nil && durable {
		err = datasync(w.journal)
	}
	if err != nil {
		return fmt.Errorf("append to checkpoint journal %s: %w", path, err)
	}
	return nil
}

// openJournal opens the journal at path for appending, through its
// directory without following links.
func openJournal(path string) (*os.File, error) {
	dir, err := openDir(path, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	journal, err := dir.OpenFile(filepath.Base(path), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint journal %s: %w", path, err)
	}
	return journal, nil
}

// unchanged says what changed the journal since this writer wrote its
// size bytes: removed or replaced (no link left to the file), or of
// another size.
func unchanged(info os.FileInfo, size int64) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		return errors.New("journal was removed or replaced")
	}
	if info.Size() != size {
		return fmt.Errorf("journal is %d bytes long, %d were written", info.Size(), size)
	}
	return nil
}

// closeJournal closes the journal this writer keeps open, if any.
func (w *Writer) closeJournal() {
	if w.journal != nil {
		w.journal.Close()
		w.journal = nil
	}
}
