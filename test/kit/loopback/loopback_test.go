package loopback

import (
	"net"
	"os"
	"strconv"
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

// Ports never answers a port the kernel could give an outgoing connection
// meanwhile, nor the same port twice.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	if _, err := os.Stat(ephemeralRange); err != nil {
		t.Skipf("no %s here: %v", ephemeralRange, err)
	}
	first := firstEphemeralPort()
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, port := range ports {
		number, err := strconv.Atoi(port)
		if err != nil || number < lowestPort || number >= first || seen[port] {
			t.Fatalf("Ports(50) = %v, want 50 distinct ports in [%d, %d)", ports, lowestPort, first)
		}
		seen[port] = true
	}
}
