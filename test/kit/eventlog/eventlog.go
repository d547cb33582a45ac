// Package eventlog records controller events for tests and waits for the
// one a test expects. It owns only the recorded events; it neither pushes
// nor handles events itself.
package eventlog

import (
	"sync"
	"testing"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Log is the events recorded so far, in order. It is safe for concurrent
// use; the zero value is not usable: create it with New.
type Log struct {
	mu     sync.Mutex
	events []controllerapi.Event
	added  chan struct{}
}

// New returns an empty log.
func New() *Log { return &Log{added: make(chan struct{}, 1)} }

// Add records event.
func (l *Log) Add(event controllerapi.Event) {
	l.mu.Lock()
	l.events = append(l.events, event)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

// Count returns how many recorded events match.
func (l *Log) Count(match func(controllerapi.Event) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, event := range l.events {
		if match(event) {
			n++
		}
	}
	return n
}

// WaitFor returns the first recorded event that matches, waiting up to
// timeout for it; then the test fails naming what it waited for.
func (l *Log) WaitFor(tb testing.TB, timeout time.Duration, what string, match func(controllerapi.Event) bool) controllerapi.Event {
	tb.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		l.mu.Lock()
		events := l.events[seen:]
		seen = len(l.events)
		l.mu.Unlock()
		for _, event := range events {
			if match(event) {
				return event
			}
		}
		select {
		case <-l.added:
		case <-deadline:
			tb.Fatalf("no %s among the recorded events", what)
		}
	}
}
