package api

import (
	"sync"
	"time"
)

// Reachability is what the agent knows of the vswitch at one moment.
type Reachability struct {
	// Configured tells whether the agent programs a vswitch at all
	// (vswitch.conf names VPP's API socket). An agent that programs none
	// has nothing to wait for: its devices are always healthy.
	Configured bool
	// Reachable tells whether the vswitch answers: connected, and its last
	// health check answered within the bound.
	Reachable bool
	// Since is when Reachable last changed; for an unreachable vswitch,
	// when the first check it left unanswered was sent.
	Since time.Time
	// Err says why an unreachable vswitch is so.
	Err error
}

// VswitchAPI is what the vswitch plugin offers other plugins. Its methods
// are safe from any goroutine.
type VswitchAPI interface {
	// Reachability returns the current reachability and a channel closed
	// at its next change.
	Reachability() (Reachability, <-chan struct{})
}

// ReachabilityCell holds a Reachability and tells its watchers when it
// changes; it implements VswitchAPI. The zero value holds the zero
// Reachability (not configured).
type ReachabilityCell struct {
	mu      sync.Mutex
	current Reachability
	changed chan struct{}
}

// Reachability implements VswitchAPI.
func (c *ReachabilityCell) Reachability() (Reachability, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.current, c.changed
}

// Set stores r and wakes the watchers, unless r says the same as the
// current value (configured, reachable, since).
func (c *ReachabilityCell) Set(r Reachability) {
	c.mu.Lock()
	defer c.mu.Unlock()
	same := c.current.Configured == r.Configured && c.current.Reachable == r.Reachable && c.current.Since.Equal(r.Since)
	c.current = r
	if same {
		return
	}
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}
