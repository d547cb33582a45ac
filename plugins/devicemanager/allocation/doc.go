// Package allocation is the device manager's state: the memif devices, the
// allocations kubelet's Allocate created, and which pod holds each one.
//
// It owns the rules: which device-ID requests are valid, how an allocation
// is bound to a pod from the runtime's and kubelet's evidence, what a pod's
// deletion releases and what a resync collects. It does no I/O: directories
// and the checkpoint file are the caller's (the manager package), which
// keeps every decision here testable as a plain function of its inputs.
//
// Device IDs are "memif-" and the device number zero-padded to at least three
// digits (memif-000 .. memif-255 for 256 devices; memif-00000 .. for more
// than 1000), so they sort in number order and stay short in kubelet's logs.
// Devices handed out through ResourceClaims (the DRA driver) are
// "memif-dra-" and a number the same way, a pool of their own: kubelet's
// device plugin and the scheduler's claims never compete for a device.
//
// Locking: one RWMutex guards the allocations; a second guards the watchers.
// Every method copies what it returns under the lock and notifies watchers
// after releasing it, so a caller never holds the lock during I/O. Methods
// that change allocations are meant to run on the controller event loop,
// which keeps changes (and so watcher notifications) in order; reads are safe
// from any goroutine.
package allocation
