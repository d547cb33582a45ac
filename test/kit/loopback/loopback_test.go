package loopback

import (
	"net"
	"testing"
)

func TestFreePortCanBeListenedOn(t *testing.T) {
	port := FreePort(t)
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatalf("listen on the free port %s: %v", port, err)
	}
	listener.Close()
}
