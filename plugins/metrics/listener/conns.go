package listener

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// connections is the listener's bound on open connections. It never makes
// a new connection wait (a limit that does, as netutil.LimitListener's,
// leaves a scrape in the kernel's accept queue behind every connection a
// client keeps reopening): at the limit it closes one that is not being
// served instead, taken from the source address that holds the most, the
// quietest and oldest of that source first. A scrape sends its request as
// it connects and is answered in milliseconds, so it is the last a flood
// of idle, slow or reopening connections from any address makes room with.
type connections struct {
	net.Listener
	limit int

	mu       sync.Mutex
	open     map[*conn]struct{}
	bySource map[netip.Addr]int
	accepted uint64 // orders the connections by age
}

// conn is one accepted connection and what the choice of the one to close
// needs to know of it.
type conn struct {
	net.Conn
	source netip.Addr
	seq    uint64
	// served is set while a request is being served on it
	// (http.StateActive), guarded by connections.mu.
	served bool
	// spoke is set once a read returned bytes.
	spoke atomic.Bool
}

func newConnections(listener net.Listener, limit int) *connections {
	return &connections{Listener: listener, limit: limit, open: map[*conn]struct{}{}, bySource: map[netip.Addr]int{}}
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.spoke.Store(true)
	}
	return n, err
}

// Accept returns the next connection, first closing another (or this one)
// if the limit is reached.
func (l *connections) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: raw, source: sourceOf(raw)}
		victim := l.admit(c)
		if victim != nil {
			victim.Conn.Close()
		}
		if victim != c {
			return c, nil
		}
	}
}

// admit counts c among the open connections; at the limit it takes one
// out of the count, c itself when every other is being served, and
// returns it for the caller to close.
func (l *connections) admit(c *conn) *conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepted++
	c.seq = l.accepted
	l.open[c] = struct{}{}
	l.bySource[c.source]++
	if len(l.open) <= l.limit {
		return nil
	}
	victim := c
	for candidate := range l.open {
		if l.closesBefore(candidate, victim) {
			victim = candidate
		}
	}
	l.forgetLocked(victim)
	return victim
}

// closesBefore says whether a is to be closed before b: a connection
// being served last; then the one whose source holds more; then one that
// has sent nothing before one that has; then the older.
func (l *connections) closesBefore(a, b *conn) bool {
	if a.served != b.served {
		return b.served
	}
	if na, nb := l.bySource[a.source], l.bySource[b.source]; na != nb {
		return na > nb
	}
	if sa, sb := a.hasSpoken(), b.hasSpoken(); sa != sb {
		return sb
	}
	return a.seq < b.seq
}

// hasSpoken says whether the client has sent anything: read already, or
// waiting in the socket (a scrape's request is there as it is accepted).
func (c *conn) hasSpoken() bool {
	if c.spoke.Load() {
		return true
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	pending := 0
	if err := raw.Control(func(fd uintptr) { pending, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return false
	}
	return pending > 0
}

func (l *connections) forgetLocked(c *conn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.bySource[c.source]--; l.bySource[c.source] == 0 {
		delete(l.bySource, c.source)
	}
}

// track is the server's ConnState hook: it follows whether a connection
// is being served, and forgets it once closed.
func (l *connections) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateActive:
		c.served = true
	case http.StateIdle:
		c.served = false
	case http.StateClosed, http.StateHijacked:
		l.forgetLocked(c)
	}
}

// sourceOf is the client's address; every connection whose address is
// unknown counts as one source.
func sourceOf(c net.Conn) netip.Addr {
	if addr, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return addr.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
