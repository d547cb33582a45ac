package server

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of WatchLimits, and the bound on connections.
const (
	// DefaultWatchBuffer is how many allocation changes a watcher may lag
	// behind before it is ended.
	DefaultWatchBuffer = 64
	// DefaultMaxWatchers is how many watch streams may be open at once.
	DefaultMaxWatchers = 64
	// DefaultMaxWatchersPerUser is how many of them one user may hold.
	DefaultMaxWatchersPerUser = 16
	// MaxConnectionsPerUser is how many connections one user may hold; a
	// connection beyond is closed before gRPC serves it.
	MaxConnectionsPerUser = 64
)

// WatchLimits bound the allocation watchers, so that clients holding
// watch streams cannot grow the agent's memory without bound.
type WatchLimits struct {
	// Buffer is how many changes a watcher may lag behind before it is
	// ended; <= 0 means DefaultWatchBuffer.
	Buffer int
	// Max is how many watch streams may be open at once; <= 0 means
	// DefaultMaxWatchers.
	Max int
	// MaxPerUser is how many of them one user (the client's user ID) may
	// hold; <= 0 means DefaultMaxWatchersPerUser.
	MaxPerUser int
}

func (l WatchLimits) withDefaults() WatchLimits {
	if l.Buffer <= 0 {
		l.Buffer = DefaultWatchBuffer
	}
	if l.Max <= 0 {
		l.Max = DefaultMaxWatchers
	}
	if l.MaxPerUser <= 0 {
		l.MaxPerUser = DefaultMaxWatchersPerUser
	}
	return l
}

// peers counts the connections and the watchers of each user. A watcher
// ended for falling behind keeps its count until its connection closes:
// gRPC holds its unsent messages (up to 64 KiB) until the client reads
// them or goes, and a client that stalls and watches again on the same
// connection must not grow that without bound.
type peers struct {
	limits WatchLimits

	mu          sync.Mutex
	connections map[uint32]int
	watchers    map[uint32]int
	open        int
	// stalled counts, per open connection, its watchers ended for
	// falling behind; stalledTotal is their sum. open counts them too.
	stalled      map[*peerConn]int
	stalledTotal int
}

func newPeers(limits WatchLimits) *peers {
	return &peers{
		limits:      limits.withDefaults(),
		connections: map[uint32]int{},
		watchers:    map[uint32]int{},
		stalled:     map[*peerConn]int{},
	}
}

func (p *peers) connect(c *peerConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.connections[c.uid] >= MaxConnectionsPerUser {
		return fmt.Errorf("node API: user %d already holds %d connections, the most one user may", c.uid, MaxConnectionsPerUser)
	}
	p.connections[c.uid]++
	return nil
}

func (p *peers) disconnect(c *peerConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.closed = true
	if p.connections[c.uid]--; p.connections[c.uid] <= 0 {
		delete(p.connections, c.uid)
	}
	for range p.stalled[c] {
		p.releaseLocked(c.uid)
	}
	p.stalledTotal -= p.stalled[c]
	delete(p.stalled, c)
}

// watch counts a new watcher of c's user, or refuses it with
// ResourceExhausted when a cap is reached.
func (p *peers) watch(c *peerConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if held := p.watchers[c.uid]; held >= p.limits.MaxPerUser {
		return status.Errorf(codes.ResourceExhausted,
			"too many allocation watches: user %d holds %d, max-watchers-per-user is %d (nodeapi.conf); end one (a watch ended for falling behind counts until its connection closes), or raise max-watchers-per-user",
			c.uid, held, p.limits.MaxPerUser)
	}
	if p.open >= p.limits.Max {
		return status.Errorf(codes.ResourceExhausted,
			"too many allocation watches: %d are open, max-watchers is %d (nodeapi.conf); end one, or raise max-watchers", p.open, p.limits.Max)
	}
	p.watchers[c.uid]++
	p.open++
	return nil
}

// unwatch counts a watcher of c out; stalled keeps it counted until c
// closes.
func (p *peers) unwatch(c *peerConn, stalled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if stalled && !c.closed {
		p.stalled[c]++
		p.stalledTotal++
		return
	}
	p.releaseLocked(c.uid)
}

func (p *peers) releaseLocked(uid uint32) {
	p.open--
	if p.watchers[uid]--; p.watchers[uid] <= 0 {
		delete(p.watchers, uid)
	}
}

// WatchCounts are the watch streams counted against the caps.
type WatchCounts struct {
	// Open is how many are being served.
	Open int
	// FellBehind is how many were ended for falling behind and count
	// until their connection closes.
	FellBehind int
}

func (p *peers) counts() WatchCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return WatchCounts{Open: p.open - p.stalledTotal, FellBehind: p.stalledTotal}
}
