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
// The plugin is thin: config (crossnode.conf) and lifecycle over package
// tracker. It touches nothing of VPP, the pods or the addresses.
//
//	crossNode := crossnode.NewPlugin(crossnode.UseDeps(func(deps *crossnode.Deps) {
//		deps.Cfg = forPlugin(crossnode.PluginName)
//		deps.Networks = networksPlugin
//	}))
//	crossNode.EventLoop = eventLoop
package crossnode
