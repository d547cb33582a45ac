package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// interval is Until's pause between two checks: short next to the
// milliseconds a peer takes to act, long enough not to busy the CPU the
// peer needs.
const interval = 10 * time.Millisecond

// Until calls check until it returns nil. When timeout passes first it
// fails tb with what and check's last error.
func Until(tb testing.TB, timeout time.Duration, what string, check func() error) {
	tb.Helper()
	Every(tb, timeout, interval, what, check)
}

// Every is Until with its own pause between two checks, for a caller that
// times what it waits for and wants that resolution.
func Every(tb testing.TB, timeout, pause time.Duration, what string, check func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: %v", what, err)
		}
		time.Sleep(pause)
	}
}

// Wait calls check every pause until it returns nil, and returns nil; or
// check's last error once timeout passes or ctx ends first. It fails no
// test, so goroutines other than the test's may call it.
func Wait(ctx context.Context, timeout, pause time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: last: %w", ctx.Err(), err)
		case <-time.After(pause):
		}
	}
}
