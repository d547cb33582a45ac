// Package capabilities runs test code with the agent's capability set,
// not the test's full root: the chart runs the agent as root with every
// capability dropped but CHOWN (no DAC_OVERRIDE, no FOWNER), so what it
// may do to a file others made is not what a root test may.
//
// Capabilities belong to a thread: Run drops them on a locked thread of
// its own, which ends with it (the Go runtime starts no other thread from
// a locked one), so the rest of the test keeps its own.
package capabilities

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Chart is the capability set of the chart's securityContext
// (deploy/helm/memif-agent/templates/daemonset.yaml).
var Chart = []uint{unix.CAP_CHOWN}

// Run calls f on a thread holding only keep (effective and permitted, no
// inheritable) and returns its error, or the error of dropping the others.
func Run(keep []uint, f func() error) error {
	result := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine rather than
		// go back to the runtime without its capabilities.
		runtime.LockOSThread()
		if err := drop(keep); err != nil {
			result <- err
			return
		}
		result <- f()
	}()
	return <-result
}

func drop(keep []uint) error {
	var set uint64
	for _, c := range keep {
		set |= 1 << c
	}
	header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(set), Permitted: uint32(set)},
		{Effective: uint32(set >> 32), Permitted: uint32(set >> 32)},
	}
	if err := unix.Capset(&header, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities but %v on this thread: %w", keep, err)
	}
	return nil
}
