// Package backoff owns the agent's one retry delay: it starts at a
// minimum, doubles after each retry up to a maximum, and starts over at
// the minimum once the retried thing worked (Reset). A reconnection to
// Docker or the CRI, a call kubelet's rate limiter refused, a push into a
// full controller queue, a healing resync and a registration with kubelet
// all wait this way.
//
// A Delay is not safe for concurrent use: each retrying goroutine has its
// own.
package backoff
