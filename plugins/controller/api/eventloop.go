package api

import "errors"

// EventLoop is the controller as other plugins see it.
type EventLoop interface {
	// PushEvent queues an event and returns at once. It never blocks: a full
	// queue fails with ErrEventQueueFull, a closed loop with ErrClosedEventLoop.
	// To wait for a blocking event's result, use the event's own Wait.
	PushEvent(event Event) error
}

var (
	// ErrEventQueueFull is returned by PushEvent when the queue is full; the
	// pusher may retry later.
	ErrEventQueueFull = errors.New("controller event queue is full")
	// ErrClosedEventLoop is returned by PushEvent after Close, and given to
	// waiters of events that were queued but never processed.
	ErrClosedEventLoop = errors.New("controller event loop is closed")
	// ErrBlockingFollowUp is returned by PushFollowUp for a blocking event:
	// a handler waiting for it would wait on itself.
	ErrBlockingFollowUp = errors.New("blocking event pushed from inside the event loop")
	// ErrDroppedFollowUp is given to a follow-up that does not run because
	// the event that pushed it failed or was reverted.
	ErrDroppedFollowUp = errors.New("follow-up dropped: the event that pushed it failed")
	// ErrInvalidEvent is returned by PushEvent and PushFollowUp for an
	// event whose spec the loop cannot honour (no name, blocking without
	// a Result to wait on).
	ErrInvalidEvent = errors.New("invalid event")
)
