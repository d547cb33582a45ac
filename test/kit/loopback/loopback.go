package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
)

// The ports Ports picks from: below the kernel's ephemeral range, which it
// never hands out by itself. A port from that range (a listen on port 0)
// may be taken as the local port of any outgoing connection between the
// test's choice and its server's listen, as happened with a dozen suites'
// clusters side by side.
const (
	lowestPort       = 10000
	ephemeralRange   = "/proc/sys/net/ipv4/ip_local_port_range"
	defaultEphemeral = 32768
	triesPerPort     = 100
)

// FreePort is Ports(1), failing tb when there is none.
func FreePort(tb testing.TB) string {
	tb.Helper()
	ports, err := Ports(1)
	if err != nil {
		tb.Fatal(err)
	}
	return ports[0]
}

// Ports returns n distinct ports no one listened on at 127.0.0.1 when they
// were asked, from below the kernel's ephemeral port range, for the
// caller's servers.
func Ports(n int) ([]string, error) {
	highest := firstEphemeralPort() - 1
	if highest <= lowestPort {
		return nil, fmt.Errorf("find a free loopback port: the ephemeral range in %s starts at %d, leaving none from %d", ephemeralRange, highest+1, lowestPort)
	}
	var ports []string
	var listeners []net.Listener
	// Held until all are picked, so that the ports differ.
	defer func() {
		for _, listener := range listeners {
			listener.Close()
		}
	}()
	for range n {
		listener, port, err := listenBelow(highest)
		if err != nil {
			return nil, err
		}
		listeners, ports = append(listeners, listener), append(ports, port)
	}
	return ports, nil
}

// listenBelow listens on a random free port from lowestPort to highest.
func listenBelow(highest int) (net.Listener, string, error) {
	var err error
	for range triesPerPort {
		port := strconv.Itoa(lowestPort + rand.IntN(highest-lowestPort+1))
		var listener net.Listener
		if listener, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
			return listener, port, nil
		}
	}
	return nil, "", fmt.Errorf("find a free loopback port from %d to %d: %d tries failed, the last with %w", lowestPort, highest, triesPerPort, err)
}

// firstEphemeralPort reads where the kernel's ephemeral range starts.
func firstEphemeralPort() int {
	content, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return defaultEphemeral
	}
	var low, high int
	if _, err := fmt.Sscan(string(content), &low, &high); err != nil || low <= 0 {
		return defaultEphemeral
	}
	return low
}
