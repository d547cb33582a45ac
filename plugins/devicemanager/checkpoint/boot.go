package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// bootPath is the file naming the boot (the kernel's boot ID) that the
// checkpoint at path was last made durable in (MarkBoot).
func bootPath(path string) string { return path + ".boot" }

// maxBootBytes bounds the boot file: a UUID and a newline.
const maxBootBytes = 64

// Boot returns the boot ID the checkpoint at path was marked with
// (MarkBoot); "" when it was never marked.
func Boot(path string) (string, error) {
	dir, err := openDir(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer dir.Close()
	content, err := dir.ReadFile(filepath.Base(bootPath(path)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("checkpoint boot %s: %w", bootPath(path), err)
	case len(content) > maxBootBytes:
		return "", fmt.Errorf("checkpoint boot %s: larger than %d bytes", bootPath(path), maxBootBytes)
	}
	return string(bytes.TrimSpace(content)), nil
}

// MarkBoot records durably that the checkpoint is durable as of boot
// bootID: from then on, what SaveBuffered writes is lost only if this
// boot ends (the node restarts) before the next sync, and a start that
// finds another boot marked knows it may have been.
func (w *Writer) MarkBoot(bootID string) error {
	dir, err := openDir(w.path, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.ReplaceFile(filepath.Base(bootPath(w.path)), []byte(bootID+"\n"), fileMode); err != nil {
		return fmt.Errorf("mark checkpoint boot %s: %w", bootPath(w.path), err)
	}
	return nil
}
