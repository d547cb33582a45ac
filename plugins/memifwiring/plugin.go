package memifwiring

import (
	"fmt"

	"github.com/ligato/cn-infra/infra"
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/promregistry"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	networksapi "github.com/contivpp/memif-agent/plugins/networks/api"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// DeviceManager tells which memifs each pod holds. When it is also a
	// dmapi.NetworkRecorder, it learns what each memif got, writes the
	// pods' memif.json, and the networks' state is kept beside its
	// checkpoint.
	DeviceManager dmapi.DeviceManagerAPI
	// Networks hands out networks.conf; nil: no networks.
	Networks networksapi.Source
	// Prometheus serves the wiring's metrics; nil: none.
	Prometheus cnprometheus.API
	// Events tells pods of their memifs refused or wired, as Kubernetes
	// Events (plugins/podevents); nil: nothing is told.
	Events wiring.PodEvents
	// Links are the memifs' links and counters as VPP showed them last
	// (the vswitch plugin), served as metrics labelled by pod with
	// Prometheus; nil: no link metrics.
	Links vswitchapi.LinkReader
	// Span tells how the networks span nodes (plugins/crossnode); nil:
	// they end at the node.
	Span crossnodeapi.SpanSource
}

// Plugin is the memif wiring event handler in the agent.
type Plugin struct {
	Deps
	handler *wiring.Handler
}

var _ controllerapi.EventHandler = (*Plugin)(nil)

// Init reads memifwiring.conf. The controller calls the handler only after
// every plugin's Init.
func (p *Plugin) Init() error {
	if p.DeviceManager == nil {
		return fmt.Errorf("memifwiring plugin: DeviceManager dependency is not set")
	}
	cfg, err := p.loadConfig()
	if err != nil {
		return fmt.Errorf("memifwiring plugin: %w", err)
	}
	opts := wiring.Options{Networks: p.Networks, Span: p.Span, Log: logs.FromPlugin(p.Log), Events: p.Events}
	if recorder, ok := p.DeviceManager.(dmapi.NetworkRecorder); ok {
		opts.Recorder = recorder
		if opts.Assigner, err = assign.Open(recorder.NetworksStatePath()); err != nil {
			return fmt.Errorf("memifwiring plugin: %w", err)
		}
		if removed, err := opts.Assigner.RemoveTemps(); err != nil {
			opts.Log.WarnS("temporary files a crash left beside the networks' state not removed", "removed", removed, "err", err)
		} else if len(removed) > 0 {
			opts.Log.InfoS("removed the temporary files a crash left beside the networks' state", "files", removed)
		}
	}
	if p.Prometheus != nil {
		opts.Metrics = promregistry.Default(p.Prometheus)
		if p.Links != nil {
			if err := opts.Metrics.Register(wiring.NewLinkCollector(p.Links, p.DeviceManager.ListAllocations)); err != nil {
				return fmt.Errorf("memifwiring plugin: memif link metrics: %w", err)
			}
		}
	}
	if p.handler, err = wiring.NewHandler(p.DeviceManager, cfg, opts); err != nil {
		return fmt.Errorf("memifwiring plugin: %w", err)
	}
	return nil
}

func (p *Plugin) loadConfig() (wiring.Config, error) {
	var cfg wiring.Config
	err := configfile.Load(p.Cfg.GetConfigName(), &cfg)
	return cfg, err
}

// LegacyNetworks reads what memifwiring.conf says about networks, for the
// networks plugin (netconf.WithLegacy); it reads the file itself, so it
// may be called before Init.
func (p *Plugin) LegacyNetworks() (netconf.Legacy, error) {
	cfg, err := p.loadConfig()
	if err != nil {
		return netconf.Legacy{}, err
	}
	return netconf.Legacy{BridgeDomain: cfg.BridgeDomain, IPAddresses: cfg.IPAddresses, L2XConnect: cfg.L2XConnect, VRF: cfg.VRF}, nil
}

// Close implements infra.Plugin; the interfaces stay on the vswitch so that
// pods keep their data path while the agent restarts.
func (p *Plugin) Close() error { return nil }

// HandlesEvent implements controllerapi.EventHandler.
func (p *Plugin) HandlesEvent(event controllerapi.Event) bool { return p.handler.HandlesEvent(event) }

// Resync implements controllerapi.EventHandler.
func (p *Plugin) Resync(event controllerapi.Event, txn controllerapi.EventOperations) error {
	return p.handler.Resync(event, txn)
}

// Update implements controllerapi.EventHandler.
func (p *Plugin) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	return p.handler.Update(event, txn)
}

// Revert implements controllerapi.EventHandler.
func (p *Plugin) Revert(event controllerapi.Event) error { return p.handler.Revert(event) }
