package checkpoint

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2): the file's data and size, not its times.
func datasync(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var syncErr error
	if err := raw.Control(func(fd uintptr) {
		for {
			syncErr = syscall.Fdatasync(int(fd))
			if syncErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if syncErr != nil {
		return os.NewSyscallError("fdatasync", syncErr)
	}
	return nil
}
