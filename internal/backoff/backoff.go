package backoff

import (
	"context"
	"time"
)

// Delay is a retry delay that doubles from its minimum up to its maximum.
type Delay struct {
	min, max time.Duration
	// next is the delay Next returns; 0 before the first.
	next time.Duration
}

// New returns a delay starting at min and doubling up to max; a max below
// min is min.
func New(min, max time.Duration) *Delay {
	return &Delay{min: min, max: max}
}

// Next returns the delay to wait before this retry; the following one is
// twice as long, up to the maximum.
func (d *Delay) Next() time.Duration {
	if d.next == 0 {
		d.next = d.min
	}
	delay := max(min(d.next, d.max), d.min)
	d.next = 2 * delay
	return delay
}

// Reset starts over at the minimum: the retried thing worked.
func (d *Delay) Reset() { d.next = 0 }

// Wait waits the next delay (Next). It returns false, at once, when ctx
// ends first.
func (d *Delay) Wait(ctx context.Context) bool {
	timer := time.NewTimer(d.Next())
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
