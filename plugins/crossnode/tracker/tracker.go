package tracker

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/logs"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
)

// Options are what a Tracker needs.
type Options struct {
	// Client reaches the API server: get and patch on nodes, list and
	// watch on nodes, and get, list, watch, create, update and delete on
	// leases in Namespace.
	Client kubernetes.Interface
	// Node is the node's name; Namespace holds the shares' Leases.
	Node, Namespace string
	// Interface is the Linux interface VPP takes into the underlay, and
	// Address VPP's address on it.
	Interface string
	Address   netip.Prefix
	// Networks hands out networks.conf as it is now.
	Networks func() netconf.Config
	// Changed gets each new Span, on Run's goroutine; an error (the span
	// was not taken) has it handed again at the next Period.
	Changed func(crossnodeapi.Span) error
	// Period is how often what failed is tried again and networks.conf is
	// read for new l3 networks.
	Period time.Duration
	// Log gets what failed; nil: nothing is logged.
	Log logs.Logger
}

// Tracker keeps the node's Span.
type Tracker struct {
	opts    Options
	changed chan struct{}
	// listed is closed once the span holds the first complete listing.
	listed chan struct{}

	mu    sync.Mutex
	peers underlay.Peers
	held  shares.Held
	// peersListed and heldListed tell whether the watches reported once.
	peersListed, heldListed bool
	published               bool
	// claimed are the node's shares, and claimedFor what each was
	// claimed for, by network name.
	claimed    map[string]netip.Prefix
	claimedFor map[string]shares.Network
	span       crossnodeapi.Span
}

// New returns a Tracker whose Span is the node's underlay without shares
// or peers until Run learns them.
func New(opts Options) *Tracker {
	if opts.Log == nil {
		opts.Log = logs.Discard()
	}
	return &Tracker{opts: opts, changed: make(chan struct{}, 1), listed: make(chan struct{}), claimed: map[string]netip.Prefix{},
		claimedFor: map[string]shares.Network{}, span: crossnodeapi.Span{Interface: opts.Interface, Address: opts.Address}}
}

// Span implements crossnodeapi.SpanSource.
func (t *Tracker) Span() crossnodeapi.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.span
}

// Listed is closed once the Span holds the first complete listing: the
// node's share of each l3 network claimed (or found exhausted), and the
// peers' addresses and shares listed. Before, the Span lacks what the
// API server holds: rendered, it would remove the node's tunnels and
// routes to the peers, to put them back once listed.
func (t *Tracker) Listed() <-chan struct{} { return t.listed }

// Run publishes, claims and watches until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	var watchers sync.WaitGroup
	defer watchers.Wait()
	watchers.Go(func() {
		t.watch(ctx, "the peers' underlay addresses", func(ctx context.Context) error {
			return underlay.Watch(ctx, t.opts.Client, t.opts.Node, func(peers underlay.Peers) {
				t.update(func() { t.peers, t.peersListed = peers, true })
				for node, reason := range peers.Invalid {
					t.opts.Log.WarnS("a node's underlay address is left out", "node", node, "reason", reason)
				}
			})
		})
	})
	watchers.Go(func() {
		t.watch(ctx, "the shares the nodes hold", func(ctx context.Context) error {
			return shares.Watch(ctx, t.opts.Client, t.opts.Namespace, func(held shares.Held) { t.update(func() { t.held, t.heldListed = held, true }) })
		})
	})
	ticker := time.NewTicker(t.opts.Period)
	defer ticker.Stop()
	var pushed crossnodeapi.Span
	pending := true
	for {
		t.publish(ctx)
		claimed := t.claim(ctx)
		t.closeListed(claimed)
		span := t.Span()
		if pending || !span.Equal(pushed) {
			if err := t.opts.Changed(span); err != nil {
				t.opts.Log.ErrorS(err, "the new span waits for the next try", "span", span.String())
				pending = true
			} else {
				pushed, pending = span, false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-t.changed:
		}
	}
}

// watch runs a watcher until ctx ends, again after a Period when it fails.
func (t *Tracker) watch(ctx context.Context, what string, run func(context.Context) error) {
	for {
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		t.opts.Log.ErrorS(err, "watching failed; watched again", "what", what, "after", t.opts.Period)
		select {
		case <-ctx.Done():
			return
		case <-time.After(t.opts.Period):
		}
	}
}

// update changes what the span is made of, and tells Run.
func (t *Tracker) update(change func()) {
	t.mu.Lock()
	change()
	t.span = t.makeSpan()
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// makeSpan is the Span of what is known; t.mu is held.
func (t *Tracker) makeSpan() crossnodeapi.Span {
	span := crossnodeapi.Span{Interface: t.opts.Interface, Address: t.opts.Address, Shares: maps.Clone(t.claimed), Peers: map[string]crossnodeapi.Peer{}}
	for node, addr := range t.peers.Addresses {
		peer := crossnodeapi.Peer{Address: addr, Shares: map[string]netip.Prefix{}}
		for network, holders := range t.held {
			if share, ok := holders[node]; ok {
				peer.Shares[network] = share
			}
		}
		span.Peers[node] = peer
	}
	return span
}

// publish sets the node's annotation until it is set once.
func (t *Tracker) publish(ctx context.Context) {
	t.mu.Lock()
	done := t.published
	t.mu.Unlock()
	if done {
		return
	}
	if err := underlay.Publish(ctx, t.opts.Client, t.opts.Node, t.opts.Address.Addr()); err != nil {
		t.opts.Log.ErrorS(err, "the underlay address is published at the next try", "after", t.opts.Period)
		return
	}
	t.update(func() { t.published = true })
}

// closeListed closes listed once claimed (every share decided) and both
// watches reported; Run's goroutine only.
func (t *Tracker) closeListed(claimed bool) {
	select {
	case <-t.listed:
		return
	default:
	}
	t.mu.Lock()
	complete := claimed && t.peersListed && t.heldListed
	t.mu.Unlock()
	if complete {
		close(t.listed)
	}
}

// claim claims the node's share of each l3 network not claimed as
// networks.conf cuts it now, and tells whether each is decided: claimed,
// or every share held by other nodes.
func (t *Tracker) claim(ctx context.Context) bool {
	decided := true
	claimer := shares.Claimer{Client: t.opts.Client, Namespace: t.opts.Namespace, Node: t.opts.Node}
	for _, n := range t.opts.Networks().Networks {
		if n.Type != netconf.L3 {
			continue
		}
		want := shares.Network{Name: n.Name, Subnet: n.Prefix(), NodePrefixLength: n.NodePrefix()}
		t.mu.Lock()
		done := t.claimedFor[n.Name] == want
		t.mu.Unlock()
		if done {
			continue
		}
		share, err := claimer.Claim(ctx, want)
		if err != nil {
			level := "the network's share is claimed at the next try"
			if errors.Is(err, shares.ErrExhausted) {
				level = "every share of the network's subnet is held by other nodes; its memifs on this node stay refused"
			} else {
				decided = false
			}
			t.opts.Log.ErrorS(err, level, "network", n.Name, "after", t.opts.Period)
			continue
		}
		t.update(func() { t.claimed[n.Name], t.claimedFor[n.Name] = share.Prefix, want })
		t.opts.Log.InfoS("claimed the node's share", "network", n.Name, "share", share.Prefix.String(), "lease", share.Lease)
	}
	return decided
}
