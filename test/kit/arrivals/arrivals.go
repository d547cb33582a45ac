// Package arrivals notes when a peer's reports, each about one key (a
// container ID, a pod UID), arrive on a watcher's goroutine, and lets a
// benchmark wait for the report it times against. It owns only the noted
// arrivals; the caller owns the watcher and its stream.
package arrivals

import (
	"context"
	"testing"
	"time"
)

// Log is the reports noted and not yet awaited, in arrival order; create
// it with New.
type Log struct {
	arrived chan arrival
}

type arrival struct {
	key string
	at  time.Time
}

// New returns a log holding up to buffer reports not yet awaited.
func New(buffer int) *Log { return &Log{arrived: make(chan arrival, buffer)} }

// Note records that a report about key arrives now. While buffer reports
// wait it blocks, until ctx ends; false then.
func (l *Log) Note(ctx context.Context, key string) bool {
	select {
	case l.arrived <- arrival{key: key, at: time.Now()}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Await returns when the first report about key not awaited before
// arrived, dropping the reports noted before it; it fails tb when none
// arrives within timeout.
func (l *Log) Await(tb testing.TB, key string, timeout time.Duration) time.Time {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case report := <-l.arrived:
			if report.key == key {
				return report.at
			}
		case <-deadline:
			tb.Fatalf("no report about %s arrived", key)
		}
	}
}
