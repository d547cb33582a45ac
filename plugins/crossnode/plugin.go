package crossnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
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

// retryPeriod is how often what failed is tried again, and networks.conf
// read for new l3 networks.
const retryPeriod = 5 * time.Second

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
}

var _ crossnodeapi.SpanSource = (*Plugin)(nil)

// Init reads crossnode.conf and, when it is on, makes the tracker, so
// that the memif wiring's first resync already renders the underlay and
// waits for the shares.
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
		Changed: func(span crossnodeapi.Span) error {
			return p.EventLoop.PushEvent(&crossnodeapi.SpanChanged{Span: span})
		},
		Period: retryPeriod, Log: p.log})
	return nil
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

// AfterInit starts the tracker, which pushes into the event loop.
func (p *Plugin) AfterInit() error {
	if p.tracker == nil {
		p.log.InfoS("networks end at the node (crossnode.conf sets no underlay-address)")
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.running.Go(func() { p.tracker.Run(ctx) })
	span := p.tracker.Span()
	p.log.InfoS("networks span nodes", "underlay-interface", span.Interface, "underlay-address", span.Address.String())
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
