package controller

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/infra"
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/unrolled/render"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/promregistry"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
)

// Plugin runs the controller event loop in the agent. It implements
// controllerapi.EventLoop.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log  logs.Logger
	loop *eventloop.Loop
}

// Deps are the plugin's dependencies. KVScheduler is required; HTTPHandlers,
// StatusCheck and Prometheus are optional (nil: not served, not reported,
// not exposed).
type Deps struct {
	infra.PluginDeps
	KVScheduler  kvs.KVScheduler
	HTTPHandlers rest.HTTPHandlers
	StatusCheck  statuscheck.PluginStatusWriter
	// Prometheus serves the loop's metrics in its default registry
	// (cn-infra's /metrics).
	Prometheus cnprometheus.API
	// EventHandlers in the order they see events (reverse events: the
	// opposite order).
	EventHandlers []controllerapi.EventHandler
}

var (
	_ controllerapi.EventLoop    = (*Plugin)(nil)
	_ controllerapi.EventHistory = (*Plugin)(nil)
)

// Init reads the config and creates the loop; events may be pushed from now
// on and wait for the startup resync.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.KVScheduler == nil {
		return fmt.Errorf("controller plugin: no KVScheduler dependency given")
	}
	cfg := eventloop.DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("controller plugin: %w", err)
	}
	var metrics prometheus.Registerer
	if p.Prometheus != nil {
		metrics = promregistry.Default(p.Prometheus)
	}
	if p.StatusCheck != nil {
		p.StatusCheck.Register(p.PluginName, nil)
	}
	loop, err := eventloop.New(cfg, eventloop.Deps{
		Handlers:      p.EventHandlers,
		Committer:     kvSchedulerCommitter{scheduler: p.KVScheduler},
		Metrics:       metrics,
		Log:           p.log,
		HealthChanged: p.reportHealth,
	})
	if err != nil {
		return fmt.Errorf("controller plugin: %w", err)
	}
	p.loop = loop
	p.registerHTTPHandlers()
	return nil
}

// AfterInit starts the loop, which runs the startup resync first.
func (p *Plugin) AfterInit() error {
	p.loop.Start()
	return nil
}

// Close stops the loop: the event in progress finishes, the shutdown event
// runs through the handlers, queued events fail with controllerapi.ErrClosedEventLoop.
func (p *Plugin) Close() error {
	if p.loop == nil {
		return nil
	}
	return p.loop.Close()
}

// PushEvent queues an event; see controllerapi.EventLoop.
func (p *Plugin) PushEvent(event controllerapi.Event) error {
	if p.loop == nil {
		return fmt.Errorf("push event %s before the controller plugin's Init: %w", event.Spec().Name, controllerapi.ErrClosedEventLoop)
	}
	return p.loop.PushEvent(event)
}

// Health returns the loop's health.
func (p *Plugin) Health() eventloop.Health {
	if p.loop == nil {
		return eventloop.Health{State: eventloop.Starting}
	}
	return p.loop.Health()
}

// EventHistory implements controllerapi.EventHistory: the node API serves
// it (GetEventHistory, memifctl events). Before Init it holds no event.
func (p *Plugin) EventHistory(query controllerapi.HistoryQuery) []controllerapi.EventRecord {
	if p.loop == nil {
		return nil
	}
	return p.loop.EventHistory(query)
}

func (p *Plugin) registerHTTPHandlers() {
	if p.HTTPHandlers == nil {
		return
	}
	p.HTTPHandlers.RegisterHTTPHandler(eventloop.HistoryPath, provide(p.loop.HistoryHandler()), http.MethodGet)
	p.HTTPHandlers.RegisterHTTPHandler(eventloop.ResyncPath, provide(p.loop.ResyncHandler()), http.MethodPost)
}

func provide(handler http.Handler) rest.HandlerProvider {
	return func(*render.Render) http.HandlerFunc { return handler.ServeHTTP }
}

// reportHealth maps the loop's health onto statuscheck, which drives the
// readiness probe.
func (p *Plugin) reportHealth(health eventloop.Health) {
	if p.StatusCheck == nil {
		return
	}
	state := statuscheck.Init
	switch health.State {
	case eventloop.Healthy:
		state = statuscheck.OK
	case eventloop.Unhealthy:
		state = statuscheck.Error
	}
	p.StatusCheck.ReportStateChange(p.PluginName, state, health.Err)
}

// HandOver implements dmapi.HandoverParticipant: the loop drains (the
// events already queued are processed and committed, no more are taken),
// so that the agent replacing this one reads a checkpoint that holds
// every admission this one answered.
func (p *Plugin) HandOver(context.Context, string) {
	if p.loop != nil {
		p.loop.Drain()
		p.log.InfoS("controller event loop drained for the handover: events pushed from now on are refused")
	}
}

// SuccessorServing implements dmapi.HandoverParticipant.
func (p *Plugin) SuccessorServing() {}
