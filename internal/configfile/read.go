package configfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize bounds a config file. The agent's largest is a few
// kilobytes; the bound keeps a file that never ends (a link to /dev/zero)
// or a huge one from growing the agent until the OOM killer stops it.
const MaxFileSize = 1 << 20

// ReadFile reads the config file at path: only a regular file (links to
// one are followed) of at most MaxFileSize bytes, even if it grows while
// it is read. Opening it never blocks, so that a FIFO is refused at once;
// a missing file is an error matching fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	file, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	content, err := io.ReadAll(io.LimitReader(file, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	if len(content) > MaxFileSize {
		return nil, tooLarge(path)
	}
	return content, nil
}

// CheckFile says why the file at path is not one a config file may be
// (openFile), for a file another library reads (a kubeconfig).
func CheckFile(path string) error {
	file, err := openFile(path)
	if err != nil {
		return err
	}
	return file.Close()
}

// openFile opens the config file at path. It follows links (a ConfigMap
// volume is a chain of them) but opens only a regular file of at most
// MaxFileSize bytes. The open does not block (O_NONBLOCK), so that a FIFO
// is refused at once instead of hanging the agent's start.
func openFile(path string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	info, err := file.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("read config file: %w", err)
	case !info.Mode().IsRegular():
		err = fmt.Errorf("read config file %s: it is %s, not a regular file; make it a regular file (or a link to one), or point the flag at one", path, kindOfFile(info.Mode()))
	case info.Size() > MaxFileSize:
		err = tooLarge(path)
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

func tooLarge(path string) error {
	return fmt.Errorf("read config file %s: it is larger than the %d bytes (1 MiB) a config file may hold", path, MaxFileSize)
}

// kindOfFile names a file type that is not a regular file.
func kindOfFile(mode fs.FileMode) string {
	switch mode.Type() {
	case fs.ModeDir:
		return "a directory"
	case fs.ModeNamedPipe:
		return "a named pipe (FIFO)"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice:
		return "a block device"
	case fs.ModeDevice | fs.ModeCharDevice:
		return "a character device"
	}
	return "a special file"
}
