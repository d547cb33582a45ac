package crossnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ligato/cn-infra/infra"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/kubeclient"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/crossnode/tracker"
	networksapi "github.com/contivpp/memif-agent/plugins/networks/api"
)

const (
	// retryPeriod is how often what failed is tried again, and
	// networks.conf read for new l3 networks.
	retryPeriod = 5 * time.Second
	// listingWait bounds Init's wait for the tracker's first listing:
	// longer than an API server under load takes to list the Nodes and
	// Leases, short enough for the agent to start within its startup
	// probe's 90 s after waiting 40 s for the agent it replaces.
	listingWait = 15 * time.Second
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// EventLoop gets a SpanChanged event per new span.
	EventLoop controllerapi.EventLoop
	// Networks hands out networks.conf, whose l3 networks get a share.
	Networks networksapi.Source
}

// Plugin keeps the node's span when crossnode.conf sets an underlay
// address; otherwise it does nothing and its Span is off.
type Plugin struct {
	Deps
	cfg     Config
	log     logs.Logger
	tracker *tracker.Tracker
	stop    context.CancelFunc
	running sync.WaitGroup
	// pushing is set once Init has waited for the first listing: the
	// startup resync reads the Span, and the spans found before are not
	// pushed, which would only rewire the pods again after it.
	pushing atomic.Bool
}

var _ crossnodeapi.SpanSource = (*Plugin)(nil)

// Init reads crossnode.conf and, when it is on, starts the tracker and
// waits (listingWait at most) for its first listing, so that the memif
// wiring's first resync, in the controller's AfterInit, renders the span
// the API server holds: after a restart, the one the node's VPP has.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if err := configfile.Load(p.Cfg.GetConfigName(), &p.cfg); err != nil {
		return fmt.Errorf("crossnode plugin: %w", err)
	}
	if !p.cfg.Enabled() {
		return nil
	}
	if p.EventLoop == nil || p.Networks == nil {
		return errors.New("crossnode plugin: EventLoop and Networks dependencies are required")
	}
	node, err := fromEnv(p.cfg.NodeName, "node-name", NodeNameEnv)
	if err != nil {
		return err
	}
	underlay := p.cfg.For(node)
	if underlay.Address == "" {
		p.log.WarnS("networks end at the node: crossnode.conf sets no underlay-address for it", "node", node)
		return nil
	}
	namespace, err := fromEnv(p.cfg.Namespace, "namespace", NamespaceEnv)
	if err != nil {
		return err
	}
	client, err := p.kubeClient()
	if err != nil {
		return err
	}
	p.tracker = tracker.New(tracker.Options{Client: client, Node: node, Namespace: namespace,
		Interface: underlay.Interface, Address: underlay.Prefix(), Networks: p.Networks.Networks,
		Changed: p.push, Period: retryPeriod, Log: p.log})
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.running.Go(func() { p.tracker.Run(ctx) })
	p.awaitListing(listingWait)
	return nil
}

// push hands span to the event loop once Init has waited.
func (p *Plugin) push(span crossnodeapi.Span) error {
	if !p.pushing.Load() {
		return nil
	}
	return p.EventLoop.PushEvent(&crossnodeapi.SpanChanged{Span: span})
}

// awaitListing waits for the tracker's first listing, at most limit,
// then lets the tracker push.
func (p *Plugin) awaitListing(limit time.Duration) {
	defer p.pushing.Store(true)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.tracker.Listed():
		p.log.InfoS("networks span nodes", "span", p.tracker.Span().String())
	case <-timer.C:
		p.log.WarnS("the API server did not list the nodes' underlay addresses and shares in time: the first resync removes the tunnels and routes to the other nodes, "+
			"put back once it answers; check the API server and the agent's RBAC (crossNode.enabled)", "waited", limit.String(), "span", p.tracker.Span().String())
	}
}

// fromEnv is value, or else the environment's variable env.
func fromEnv(value, key, env string) (string, error) {
	if value != "" {
		return value, nil
	}
	if value = os.Getenv(env); value == "" {
		return "", fmt.Errorf("crossnode plugin: %w", &configfile.KeyError{Key: key,
			Reason: "is empty and $" + env + " is not set; set either"})
	}
	return value, nil
}

func (p *Plugin) kubeClient() (kubernetes.Interface, error) {
	client, err := kubeclient.New(p.cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("crossnode plugin: %w", err)
	}
	return client, nil
}

// AfterInit says whether the networks span nodes.
func (p *Plugin) AfterInit() error {
	if p.tracker == nil {
		p.log.InfoS("networks end at the node (crossnode.conf sets no underlay-address)")
	}
	return nil
}

// Span implements crossnodeapi.SpanSource: off until Init found
// crossnode.conf on.
func (p *Plugin) Span() crossnodeapi.Span {
	if p.tracker == nil {
		return crossnodeapi.Span{}
	}
	return p.tracker.Span()
}

// Close stops the tracker. The annotation and the shares stay: a
// restarting agent changes nothing on the other nodes.
func (p *Plugin) Close() error {
	if p.stop != nil {
		p.stop()
	}
	p.running.Wait()
	return nil
}
