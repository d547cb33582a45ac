//go:build !linux

package checkpoint

import "os"

// datasync falls back to fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }
