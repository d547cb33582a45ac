package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// fileMode is the checkpoint's permission: it holds every memif secret.
const fileMode = 0o600

// Load reads the checkpoint at path. A missing file is an empty checkpoint;
// a file that cannot be used is a *CorruptError (see MoveAside).
func Load(path string) (Data, error) {
	content, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Data{}, nil
	}
	if err != nil {
		return Data{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	return Decode(path, content)
}

// Save writes data to path atomically: readers see the old file or the new
// one, never a mix, even across a crash. The parent directory is created
// (mode 0700) when missing.
func Save(path string, data Data) error {
	content, err := Encode(data)
	if err != nil {
		return err
	}
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

// MoveAside renames a bad checkpoint to "<path>.corrupt-<UTC timestamp>" so
// that the operator can inspect it and the agent can start afresh. It
// returns the new path.
func MoveAside(path string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("move corrupt checkpoint %s aside: %w", path, err)
	}
	return aside, syncDir(filepath.Dir(path))
}
