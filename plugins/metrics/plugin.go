package metrics

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/ligato/cn-infra/infra"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// Gatherer is what is served; nil: Prometheus's default registry,
	// where the agent's metrics are registered.
	Gatherer prometheus.Gatherer
}

// Plugin serves the metrics from AfterInit until Close, or until the
// node is handed over to the agent replacing this one, which listens on
// the same address.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log    logs.Logger
	config listener.Config

	mu         sync.Mutex
	server     *listener.Server
	handedOver bool
}

// Init reads metrics.conf and $MEMIF_AGENT_POD_IP.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	var configFile string
	if p.Cfg != nil {
		configFile = p.Cfg.GetConfigName()
	}
	cfg, source, err := listener.Load(configFile, os.Getenv(listener.AddressEnv))
	if err != nil {
		return fmt.Errorf("metrics plugin: %w", err)
	}
	p.config = cfg
	if source == listener.FromFallback {
		p.log.WarnS("metrics listener address", "address", cfg.Address, "source", source)
	} else {
		p.log.InfoS("metrics listener address", "address", cfg.Address, "source", source)
	}
	return nil
}

// AfterInit starts serving, unless the node was handed over already.
func (p *Plugin) AfterInit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handedOver {
		return nil
	}
	gatherer := p.Gatherer
	if gatherer == nil {
		gatherer = prometheus.DefaultGatherer
	}
	server, err := listener.Start(p.config.Endpoint(), gatherer, p.log)
	if err != nil {
		return fmt.Errorf("metrics plugin: %w", err)
	}
	p.server = server
	p.log.InfoS("metrics served (read-only)", "url", "http://"+server.Addr().String()+listener.MetricsPath)
	return nil
}

// Close stops serving.
func (p *Plugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server == nil {
		return nil
	}
	err := p.server.Close()
	p.server = nil
	return err
}

// HandOver stops serving: the agent replacing this one on the node (a
// rolling update with maxSurge) listens on the same address. It is the
// device manager's handover participant.
func (p *Plugin) HandOver(context.Context, string) {
	p.mu.Lock()
	p.handedOver = true
	p.mu.Unlock()
	if err := p.Close(); err != nil {
		p.log.WarnS("metrics listener close failed", "err", err)
	}
	p.log.InfoS("metrics listener closed: handed over to the agent replacing this one", "endpoint", p.config.Endpoint())
}

// SuccessorServing is the device manager's handover participant's; the
// listener has nothing more to do then.
func (p *Plugin) SuccessorServing() {}

// Endpoint is where the metrics are served once AfterInit ran.
func (p *Plugin) Endpoint() string { return p.config.Endpoint() }
