// Package crossnode is the cn-infra plugin that makes the node's networks
// span the cluster's nodes, when crossnode.conf sets an underlay address
// (off, it does nothing: networks end at the node).
//
// Off the event loop, its tracker (package tracker) publishes the node's
// underlay address as a Node annotation, claims the node's share of each
// l3 network's subnet through a Lease, and watches the other nodes'
// addresses and shares; each new Span (api.Span) is pushed into the
// controller's event loop as an api.SpanChanged event. The memif wiring
// reads the Span at each resync (api.SpanSource) and renders it: VPP's
// interface into the underlay, a VXLAN tunnel per network and peer, and
// the routes to the peers' shares (plugins/memifwiring/wiring RenderSpan),
// and hands out l3 addresses from the node's share only.
//
// A restart changes nothing in VPP: Init starts the tracker and waits, 15 s
// at most, for its first listing (tracker.Listed), so that the startup
// resync renders the span VPP holds, not the underlay alone, which would
// remove the tunnels and routes to the other nodes and put them back
// seconds later. Waiting rather than keeping the last span on the node:
// the listing is what holds now (a peer gone, a share freed with its Node
// while the agent was down), the node hands out only the share its Lease
// holds, and there is no file to keep consistent with the Leases. An API
// server that does not answer in time costs the cross-node traffic until
// it does (logged); the l3 memifs keep their addresses (assign.SetShares).
// The spans the tracker finds while Init waits are not pushed: the
// startup resync reads the span itself. One pushed after Init and handled
// after the resync renders the span as the plugin holds it then (the
// wiring reads Span again), so a SpanChanged queued before the resync
// never takes VPP back to what the resync went past.
//
// The plugin is thin: config (crossnode.conf) and lifecycle over package
// tracker. It touches nothing of VPP, the pods or the addresses.
//
//	crossNode := crossnode.NewPlugin(crossnode.UseDeps(func(deps *crossnode.Deps) {
//		deps.Cfg = forPlugin(crossnode.PluginName)
//		deps.Networks = networksPlugin
//	}))
//	crossNode.EventLoop = eventLoop
package crossnode
