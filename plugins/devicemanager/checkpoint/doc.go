// Package checkpoint persists the device manager's allocations: a snapshot
// file and a journal of the changes since it.
//
// The snapshot is JSON {"version", "journal", "data", "checksum"}: data is
// the allocation list, journal the generation of the journal extending it,
// checksum the SHA-256 of both (data in compact JSON). Version 3 is
// written; versions 2 and 3 are read (Version says how they differ).
// Snapshots are written atomically (a temporary file in the same
// directory, fsync, rename, fsync of the directory).
//
// Writer is how the device manager saves: each Save after the first
// appends one CRC-32C-checked record of what changed to "<path>.journal"
// and syncs that file once, so an allocation costs one sync, not a rewrite
// of every allocation and two syncs. Every 1024 records, and at the first
// Save after a start, it compacts: a new snapshot, then an empty journal.
// SaveBuffered appends without the sync, for changes the device manager
// can recover after a node restart: the record is in the file for any
// later reader on the same boot, and the next Save makes it durable (with
// a sync of its own when it has nothing to append). MarkBoot records the
// boot the checkpoint is whole in ("<path>.boot"), so that a start can
// tell whether buffered records may have been lost with the node.
// journal.go describes the layout and why a torn last record is dropped.
//
// Both files are mode 0600: they hold every memif secret. Their directory
// must be the agent's own (owned by its user, writable by no one else;
// one the Writer makes is 0700), and every file in it is opened through
// the directory's descriptor without following links (internal/securedir),
// so that no other user can redirect a secret into a file of theirs.
//
// Damage loses only what it covers. A missing checkpoint is an empty one.
// An empty, truncated, foreign or tampered snapshot loses the snapshot,
// and its journal's records still apply; a journal record that does not
// check out is skipped up to the next one that does; an unusable journal,
// or a missing one the snapshot names, loses the journal, not the
// snapshot. A Writer makes a journal before the snapshot that names it,
// so that a missing journal is one that was lost (a version 2 snapshot,
// whose journal was made after it, cannot tell). Load then returns what survived
// with a *DamageError counting and naming each loss (*CorruptError); a
// torn last record alone is a *TornTailError. MoveAside keeps both files
// for the operator under new names before the next save replaces them. A
// journal cut exactly at a record boundary cannot be told from a shorter
// one: what such a cut loses, the device manager finds as directories no
// allocation explains.
//
// The package owns the file formats only; it knows nothing of kubelet, pods
// or socket directories.
package checkpoint
