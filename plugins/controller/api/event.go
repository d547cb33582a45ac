package api

import (
	"context"
	"sync"
)

// EventMethodType says how handlers process an event.
type EventMethodType int

const (
	// Update is an incremental change processed by Update/Revert.
	Update EventMethodType = iota
	// FullResync asks every handler to re-read all the state it owns and
	// to put the complete configuration it wants into the transaction; values
	// not put are removed from the KV scheduler. Only the loop makes
	// resync events (Loop.Resync, its startup and healing resyncs).
	FullResync
)

// String returns the method name, as shown in the event history.
func (m EventMethodType) String() string {
	switch m {
	case FullResync:
		return "full-resync"
	case Update:
		return "update"
	}
	return "unknown"
}

// IsResync tells whether the method is a resync.
func (m EventMethodType) IsResync() bool { return m == FullResync }

// UpdateTransactionType says what happens when a handler fails an update.
type UpdateTransactionType int

const (
	// BestEffort runs the remaining handlers after an error, commits what
	// they produced, reports the error and schedules a healing resync.
	BestEffort UpdateTransactionType = iota
	// BestEffortIgnoreErrors is BestEffort without the healing resync.
	BestEffortIgnoreErrors
	// RevertOnFailure stops at the first handler error, reverts the
	// handlers that already succeeded in reverse order and commits nothing.
	// A commit that fails afterwards reverts nothing: it is healed like
	// BestEffort's (the commit runs off the loop, after later events).
	RevertOnFailure
)

// String returns the transaction type name.
func (t UpdateTransactionType) String() string {
	switch t {
	case BestEffort:
		return "best-effort"
	case BestEffortIgnoreErrors:
		return "best-effort-ignore-errors"
	case RevertOnFailure:
		return "revert-on-failure"
	}
	return "unknown"
}

// UpdateDirectionType is the order in which handlers see an update.
type UpdateDirectionType int

const (
	// Forward visits handlers in registration order (creation).
	Forward UpdateDirectionType = iota
	// Reverse visits handlers in reverse registration order (removal), so
	// that what was built last is torn down first.
	Reverse
)

// String returns the direction name.
func (d UpdateDirectionType) String() string {
	if d == Reverse {
		return "reverse"
	}
	return "forward"
}

// EventSpec declares how the loop processes one kind of event. Its zero
// value is a best-effort update that visits the handlers forward and that
// no one waits for; a spec names what differs. An event type returns the
// same spec for every event of it from its Spec method; a type whose spec
// varies by event (the loop's resyncs differ by name) embeds an EventSpec,
// whose own Spec method returns it.
type EventSpec struct {
	// Name is a short, constant name of the event kind, used in metrics
	// and history filters (for example "AllocateDevice"); never empty.
	Name string
	// Method says whether handlers Update or Resync.
	Method EventMethodType
	// Blocking: a pusher waits for the outcome, so the event embeds
	// *Result. A handler cannot push it as a follow-up: it would wait on
	// the loop that runs it.
	Blocking bool
	// Admission: a pod's admission waits on the event (kubelet's Allocate,
	// DRA NodePrepareResources; kubelet fails a pod whose Allocate fails
	// for good). The loop keeps room in its queue that only admissions may
	// take, so that background events (AddPod, reconciliations, ...)
	// filling the queue never refuse one, and tells an admission its
	// outcome once its handlers ran, before its commit.
	Admission bool
	// Transaction says how handler errors of an update are treated.
	Transaction UpdateTransactionType
	// Direction says in which order an update visits the handlers.
	Direction UpdateDirectionType
}

// Spec returns s: an event type that embeds an EventSpec has its Spec.
func (s EventSpec) Spec() EventSpec { return s }

// Event is anything pushed into the event loop.
type Event interface {
	// Spec declares how the loop processes the event.
	Spec() EventSpec
	// String returns a one-line description of this event for logs and the
	// event history. It must never contain a secret.
	String() string
}

// AwaitedEvent is an event whose pusher learns its outcome: it embeds
// *Result. Every blocking event is one. The loop calls Done exactly once
// for every AwaitedEvent it accepted, also when it drops or never runs
// it.
type AwaitedEvent interface {
	Event
	// Done delivers the outcome of processing; nil means success.
	Done(err error)
}

// Result is embedded by blocking events: the loop calls Done, the pusher
// calls Wait. The zero value is not usable; create it with NewResult.
type Result struct {
	once sync.Once
	done chan struct{}
	err  error
}

// NewResult returns a Result waiting for its outcome.
func NewResult() *Result {
	return &Result{done: make(chan struct{})}
}

// Done records the outcome; only the first call counts.
func (r *Result) Done(err error) {
	r.once.Do(func() {
		r.err = err
		close(r.done)
	})
}

// Wait blocks until Done is called or ctx ends, whichever comes first.
func (r *Result) Wait(ctx context.Context) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
