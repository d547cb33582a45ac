package handover

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ValidatePodUID accepts a pod UID as Kubernetes makes them: a UUID in
// lower case (the API server's, 8-4-4-4-12 hex digits) or 32 lower-case
// hex digits (a static pod's). The UID names the agent's kubelet sockets,
// so anything else (a path separator, "..", another form) is refused,
// naming the UID.
func ValidatePodUID(uid string) error {
	if uid == "" {
		return errors.New("no pod UID given")
	}
	reason := "not a Kubernetes pod UID (a lower-case UUID such as 0f8e2b6c-1d3a-4e5f-9a7b-2c4d6e8f0a1b, or 32 hex digits)"
	if strings.ContainsAny(uid, `/\`) || strings.Contains(uid, "..") {
		reason = "a path, not a pod UID: it would name a socket outside the kubelet's directory"
	}
	if !isUUID(uid) && !isHex(uid, 32) {
		return fmt.Errorf("pod UID %q refused: %s", uid, reason)
	}
	return nil
}

// isUUID tells whether uid is a UUID in canonical lower-case form.
func isUUID(uid string) bool {
	groups := strings.Split(uid, "-")
	if len(groups) != 5 {
		return false
	}
	for i, size := range []int{8, 4, 4, 4, 12} {
		if !isHex(groups[i], size) {
			return false
		}
	}
	return true
}

// isHex tells whether s is size lower-case hex digits.
func isHex(s string, size int) bool {
	if len(s) != size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// peerCredentials are the process and user that connected conn.
func peerCredentials(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("handover request: the sender's credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("handover request: the sender's credentials: %w", err)
	}
	if credErr != nil {
		return nil, fmt.Errorf("handover request: the sender's credentials: %w", credErr)
	}
	return cred, nil
}

// senderPresent tells why the sender of a request on conn can no longer
// take the node, or nil: it closed its end (it gave up waiting, or
// exited), or the process that connected is gone (pid, 0 when this
// agent's PID namespace does not see it, which leaves the connection to
// tell).
func senderPresent(conn *net.UnixConn, pid int32) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("check the successor's connection: %w", err)
	}
	var hungUp bool
	var pollErr error
	if err := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		_, pollErr = unix.Poll(fds, 0)
		hungUp = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	}); err != nil {
		return fmt.Errorf("check the successor's connection: %w", err)
	}
	switch {
	case pollErr != nil:
		return fmt.Errorf("check the successor's connection: %w", pollErr)
	case hungUp:
		return fmt.Errorf("the successor (process %d) closed its connection before it was answered: it gave up or exited", pid)
	case pid > 0 && !processAlive(pid):
		return fmt.Errorf("the successor's process %d is gone, though its connection is open", pid)
	}
	return nil
}

// processAlive tells whether process pid exists and has not exited (a
// zombie has).
func processAlive(pid int32) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command, which is in parentheses and may
	// itself hold them.
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 || end+2 >= len(stat) {
		return true
	}
	state := stat[end+2]
	return state != 'Z' && state != 'X'
}
