package api

import (
	"context"
	"sync"
)

// EventMethodType says how handlers process an event.
type EventMethodType int

const (
	// FullResync asks every handler to re-read all the state it owns and
	// to put the complete configuration it wants into the transaction; values
	// not put are removed from the KV scheduler.
	FullResync EventMethodType = iota
	// Update is an incremental change processed by Update/Revert.
	Update
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

// Event is anything pushed into the event loop.
type Event interface {
	// GetName returns a short, constant name of the event kind, used in
	// metrics and history filters (for example "AllocateDevice").
	GetName() string
	// String returns a one-line description of this event for logs and the
	// event history. It must never contain a secret.
	String() string
	// Method says how handlers process the event.
	Method() EventMethodType
	// IsBlocking tells whether a pusher waits for the result. The loop calls
	// Done exactly once for every event it accepted, blocking or not.
	IsBlocking() bool
	// Done delivers the outcome of processing; nil means success.
	Done(err error)
}

// AdmissionEvent is implemented by the events a pod's admission waits on:
// kubelet's Allocate (AllocateDevice) and DRA NodePrepareResources
// (PrepareClaim). The loop keeps room in its queue that only they may take,
// so that background events (AddPod, ReconcileAllocations, ...) filling the
// queue never refuse an admission; kubelet fails a pod whose Allocate fails
// for good. Events that do not implement it are background events.
type AdmissionEvent interface {
	Event
	// IsAdmission tells whether a pod's admission waits on the event.
	IsAdmission() bool
}

// UpdateEvent is an Event with Method() == Update.
type UpdateEvent interface {
	Event
	// TransactionType says how handler errors are treated.
	TransactionType() UpdateTransactionType
	// Direction says in which order handlers are visited.
	Direction() UpdateDirectionType
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
