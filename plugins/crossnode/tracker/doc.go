// Package tracker keeps the node's Span (plugins/crossnode/api): how its
// networks reach the other nodes, from the API server. Run, off the event
// loop, publishes the node's underlay address (networks/underlay.Publish),
// claims the node's share of each l3 network's subnet
// (networks/shares.Claimer), watches the peers' addresses
// (underlay.Watch) and every node's shares (shares.Watch), and hands each
// new Span to Options.Changed (the plugin pushes it into the event loop
// as a SpanChanged event). Listed tells when the Span first holds all
// the API server knows: the node's shares and the peers'; until then it
// is the node's underlay alone.
//
// What fails (the API server unreachable, a subnet's shares exhausted, a
// push refused by a full queue) is logged and tried again each
// Options.Period, which also finds the l3 networks networks.conf added;
// the Span known meanwhile stays in force. A network removed keeps its
// share: its Lease goes with the Node, or when networks.conf gives the
// network another subnet or share length (shares.Claim deletes a Lease
// that no longer matches).
//
// A Tracker's Span is safe from any goroutine. The package knows nothing
// of VPP: the memif wiring renders the Span.
package tracker
