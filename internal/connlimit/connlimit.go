package connlimit

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bound returns listener bounded to limit open connections, for server
// to serve: it sets server.ConnState, to follow which connections are
// being served.
func Bound(server *http.Server, listener net.Listener, limit int) net.Listener {
	l := newListener(listener, limit)
	server.ConnState = l.track
	return l
}

// boundedListener counts the open connections and, at its limit, closes
// one to admit another.
type boundedListener struct {
	net.Listener
	limit int

	mu       sync.Mutex
	open     map[*conn]struct{}
	bySource map[source]int
	accepted uint64 // orders the connections by age
}

// conn is one accepted connection and what the choice of the one to close
// needs to know of it.
type conn struct {
	net.Conn
	source source
	seq    uint64
	// served is set while a request is being served on it
	// (http.StateActive), guarded by boundedListener.mu.
	served bool
	// spoke is set once a read returned bytes.
	spoke atomic.Bool
}

func newListener(listener net.Listener, limit int) *boundedListener {
	return &boundedListener{Listener: listener, limit: limit, open: map[*conn]struct{}{}, bySource: map[source]int{}}
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
func (l *boundedListener) Accept() (net.Conn, error) {
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
func (l *boundedListener) admit(c *conn) *conn {
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
func (l *boundedListener) closesBefore(a, b *conn) bool {
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
// waiting in the socket (a probe's or a scrape's request is there as it
// is accepted).
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

func (l *boundedListener) forgetLocked(c *conn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.bySource[c.source]--; l.bySource[c.source] == 0 {
		delete(l.bySource, c.source)
	}
}

// track is the server's ConnState hook: it follows whether a connection
// is being served, and forgets it once closed. A TLS server hands it the
// TLS connection over the accepted one.
func (l *boundedListener) track(nc net.Conn, state http.ConnState) {
	if tlsConn, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tlsConn.NetConn()
	}
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

// source is who opened a connection: the client's address over TCP, its
// user over a Unix socket (SO_PEERCRED), so that one user's flood of a
// root-only socket, or of the loopback port, is that user's to pay for.
type source string

// sourceOf is the client's source; every connection whose client is
// unknown counts as one source.
func sourceOf(c net.Conn) source {
	switch addr := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return source(addr.AddrPort().Addr().Unmap().String())
	case *net.UnixAddr:
		if uc, ok := c.(*net.UnixConn); ok {
			if uid, ok := peerUID(uc); ok {
				return source("uid " + strconv.FormatUint(uint64(uid), 10))
			}
		}
	}
	return ""
}

// peerUID is the user of the process that connected uc.
func peerUID(uc *net.UnixConn) (uint32, bool) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || credErr != nil {
		return 0, false
	}
	return cred.Uid, true
}
