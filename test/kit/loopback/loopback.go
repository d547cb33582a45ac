package loopback

import (
	"net"
	"testing"
)

// FreePort returns a port no one listened on at 127.0.0.1 when it was
// asked: the kernel picks it, and it is released for the caller's server.
func FreePort(tb testing.TB) string {
	tb.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free loopback port: %v", err)
	}
	defer listener.Close()
	_, port, err := net.SplitHostPort(listener.Addr().String())
	if err != nil {
		tb.Fatalf("read the port of %s: %v", listener.Addr(), err)
	}
	return port
}
