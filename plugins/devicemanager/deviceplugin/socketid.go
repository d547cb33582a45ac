package deviceplugin

import (
	"fmt"
	"os"
	"syscall"
)

// socketID tells one incarnation of a socket file from another at the same
// path. The inode number alone does not: a filesystem reuses the number of
// a removed file. With the change time a reused number still differs.
type socketID struct {
	dev, ino            uint64
	ctimeSec, ctimeNsec int64
}

// statSocket returns the identity of the socket at path.
func statSocket(path string) (socketID, error) {
	info, err := os.Stat(path)
	if err != nil {
		return socketID{}, err
	}
	if info.Mode()&os.ModeSocket == 0 {
		return socketID{}, fmt.Errorf("%s is not a socket (mode %s)", path, info.Mode())
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return socketID{}, fmt.Errorf("stat %s: no inode information on this platform", path)
	}
	return socketID{dev: uint64(st.Dev), ino: st.Ino, ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec)}, nil
}
