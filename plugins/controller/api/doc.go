// Package api is the Go API of the controller event loop: the contract that
// events, event handlers and transactions follow.
//
// Every state change of the agent is an Event pushed into the loop with
// EventLoop.PushEvent. Each event declares how the loop processes it with
// an EventSpec (name, blocking, admission, transaction type, direction).
// The loop hands each event, one at a time, to the registered
// EventHandlers in order (Reverse events visit them in reverse order).
// The rules it follows are written and tested in package eventloop.
// Handlers describe the vswitch-side configuration they want by
// putting proto values into the event's Transaction; the loop commits that
// transaction to the vpp-agent KV scheduler once every handler has run.
//
// The event loop does no network I/O. Every event waits for the one before
// it, kubelet's Allocate among them, so a handler must not call the
// container runtime, kubelet or any other peer: what it needs from them is
// gathered off the loop, by whoever pushes the event, and carried in the
// event (the pod tracker's LivePods carries the live pods, an
// AllocateDevice the tracker's last decision on the pod holding its
// devices). A
// handler may read and write local files for durability (a checkpoint, an
// allocation's directory), and put values into the event's transaction,
// which the loop commits.
//
// The package owns only types and errors; it has no behaviour and imports no
// plugin framework, so that handlers and tests can depend on it freely.
package api
