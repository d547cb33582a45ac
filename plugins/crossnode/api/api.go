// Package api is the Go API of the crossnode plugin: Span, how the node's
// networks reach the other nodes (the node's underlay, its shares of the
// l3 subnets, the peers), the SpanChanged event the plugin pushes into the
// controller's event loop when it changes, and the SpanSource the memif
// wiring reads it from at a resync. It owns types only.
package api

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Span is how the node's networks span the cluster. The zero Span is off:
// the networks end at the node.
type Span struct {
	// Interface is the Linux interface VPP takes (af_packet) into the
	// underlay between nodes, and Address VPP's address on it, with the
	// underlay's prefix length.
	Interface string
	Address   netip.Prefix
	// Shares are the node's claimed shares of the l3 networks' subnets,
	// by network name.
	Shares map[string]netip.Prefix
	// Peers are the other nodes that published an underlay address, by
	// node name.
	Peers map[string]Peer
}

// Peer is another node.
type Peer struct {
	// Address is its underlay address.
	Address netip.Addr
	// Shares are its shares of the l3 networks' subnets, by network name.
	Shares map[string]netip.Prefix
}

// Enabled tells whether the networks span nodes.
func (s Span) Enabled() bool { return s.Address.IsValid() }

// Equal tells whether s and o are the same.
func (s Span) Equal(o Span) bool {
	return s.Interface == o.Interface && s.Address == o.Address && maps.Equal(s.Shares, o.Shares) &&
		maps.EqualFunc(s.Peers, o.Peers, func(a, b Peer) bool { return a.Address == b.Address && maps.Equal(a.Shares, b.Shares) })
}

// String describes s in one line.
func (s Span) String() string {
	if !s.Enabled() {
		return "networks end at the node"
	}
	peers := make([]string, 0, len(s.Peers))
	for _, name := range slices.Sorted(maps.Keys(s.Peers)) {
		peers = append(peers, fmt.Sprintf("%s at %s %v", name, s.Peers[name].Address, s.Peers[name].Shares))
	}
	return fmt.Sprintf("underlay %s on %s, shares %v, peers %v", s.Address, s.Interface, s.Shares, peers)
}

// SpanSource hands out the span as it is now. Safe from any goroutine.
type SpanSource interface {
	Span() Span
}

// SpanChanged is pushed when the span changes: a share claimed, a peer
// that joined, left or moved, or one of its shares. It is best effort: a
// failure is healed by the resync, which reads the SpanSource again.
type SpanChanged struct {
	Span Span
}

// Spec implements controllerapi.Event.
func (*SpanChanged) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "SpanChanged", Transaction: controllerapi.BestEffort, Direction: controllerapi.Forward}
}

// String implements controllerapi.Event.
func (e *SpanChanged) String() string { return "SpanChanged " + e.Span.String() }
