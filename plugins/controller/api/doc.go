// Package api is the Go API of the controller event loop: the contract that
// events, event handlers and transactions follow.
//
// Every state change of the agent is an Event pushed into the loop with
// EventLoop.PushEvent. The loop hands each event, one at a time, to the
// registered EventHandlers in order (Reverse events visit them in reverse
// order). Handlers describe the vswitch-side configuration they want by
// putting proto values into the event's Transaction; the loop commits that
// transaction to the vpp-agent KV scheduler once every handler has run.
//
// The package owns only types and errors; it has no behaviour and imports no
// plugin framework, so that handlers and tests can depend on it freely.
package api
