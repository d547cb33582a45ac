// Package checkpoint persists the device manager's allocations in one file.
//
// The file is JSON {"version", "data", "checksum"}: data is the allocation
// list, checksum the SHA-256 of data's compact JSON. New always returns the
// latest version. Writes are atomic (a temporary file in the same directory,
// fsync, rename, fsync of the directory) and the file is mode 0600 because
// it holds every memif secret. A missing file is an empty checkpoint; an
// empty, truncated, foreign or tampered file is a *CorruptError, and
// MoveAside keeps such a file for the operator under a new name.
//
// The package owns the file format only; it knows nothing of kubelet, pods
// or socket directories.
package checkpoint
