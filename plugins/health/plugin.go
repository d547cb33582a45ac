package health

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/health/statuscheck/model/status"
	"github.com/ligato/cn-infra/infra"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/unrolled/render"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/health/probesocket"
)

// Deps are the plugin's dependencies.
type Deps struct {
	// Cfg finds health.conf; nil means the defaults.
	Cfg config.PluginConfig
	// HTTPHandlers also serves the probes, for monitoring; nil serves
	// none there. kubelet asks them on the probe socket.
	HTTPHandlers rest.HTTPHandlers
}

// Plugin aggregates the states plugins report. Its methods are safe to
// call from any goroutine.
type Plugin struct {
	Deps

	config      Config
	probeServer *probesocket.Server

	mutex     sync.Mutex
	startTime time.Time
	plugins   map[infra.PluginName]*pluginState
}

// pluginState is what one plugin reported, or how to probe it.
type pluginState struct {
	status status.PluginStatus
	probe  statuscheck.PluginStateProbe
}

var (
	_ statuscheck.PluginStatusWriter = (*Plugin)(nil)
	_ statuscheck.StatusReader       = (*Plugin)(nil)
)

// String implements infra.Plugin.
func (p *Plugin) String() string { return "health" }

// Init implements infra.Plugin: it reads health.conf and registers the
// probes on the HTTP server.
func (p *Plugin) Init() error {
	p.config = DefaultConfig()
	if p.Cfg != nil {
		if err := configfile.Load(p.Cfg.GetConfigName(), &p.config); err != nil {
			return fmt.Errorf("health plugin: %w", err)
		}
	}
	if p.HTTPHandlers != nil {
		p.HTTPHandlers.RegisterHTTPHandler(ReadinessPath, p.readinessHandler, http.MethodGet)
		p.HTTPHandlers.RegisterHTTPHandler(LivenessPath, p.livenessHandler, http.MethodGet)
	}
	return nil
}

// ServeProbes serves the probes on the probe socket until Close. The
// agent calls it once every plugin has started: a plugin not yet started
// has not registered, and readiness would not wait for it.
func (p *Plugin) ServeProbes() error {
	formatter := render.New(render.Options{IndentJSON: true})
	probes := http.NewServeMux()
	probes.Handle(http.MethodGet+" "+ReadinessPath, p.readinessHandler(formatter))
	probes.Handle(http.MethodGet+" "+LivenessPath, p.livenessHandler(formatter))
	server, err := probesocket.Serve(p.ProbeSocket(), probes)
	if err != nil {
		return err
	}
	p.probeServer = server
	return nil
}

// ProbeSocket is the socket the probes are served on.
func (p *Plugin) ProbeSocket() string {
	if p.config.ProbeSocket == "" {
		return probesocket.DefaultPath
	}
	return p.config.ProbeSocket
}

// Close implements infra.Plugin: it stops serving the probes.
func (p *Plugin) Close() error {
	if p.probeServer == nil {
		return nil
	}
	return p.probeServer.Close()
}

// Register implements statuscheck.PluginStatusWriter. A plugin registered
// with a probe is asked for its state whenever the state is read; one
// without reports it and starts in INIT.
func (p *Plugin) Register(pluginName infra.PluginName, probe statuscheck.PluginStateProbe) {
	p.mutex.Lock()
	defer p.mutex.Unlock()
	now := time.Now().Unix()
	p.plugins[pluginName] = &pluginState{
		status: status.PluginStatus{Name: string(pluginName), State: status.OperationalState_INIT, LastChange: now, LastUpdate: now},
		probe:  probe,
	}
}

// ReportStateChange implements statuscheck.PluginStatusWriter. A report
// from an unregistered plugin registers it.
func (p *Plugin) ReportStateChange(pluginName infra.PluginName, state statuscheck.PluginState, lastError error) {
	p.mutex.Lock()
	defer p.mutex.Unlock()
	p.recordLocked(pluginName, state, lastError)
}

// ReportStateChangeWithMeta implements statuscheck.PluginStatusWriter; the
// metadata is meant for a datastore, which this status check has not.
func (p *Plugin) ReportStateChangeWithMeta(pluginName infra.PluginName, state statuscheck.PluginState, lastError error, _ proto.Message) {
	p.ReportStateChange(pluginName, state, lastError)
}

func (p *Plugin) recordLocked(pluginName infra.PluginName, state statuscheck.PluginState, lastError error) {
	reported, found := p.plugins[pluginName]
	if !found {
		reported = &pluginState{status: status.PluginStatus{Name: string(pluginName)}}
		p.plugins[pluginName] = reported
	}
	now := time.Now().Unix()
	newState, newError := stateToProto(state), errorText(lastError)
	if reported.status.State != newState || reported.status.Error != newError {
		reported.status.LastChange = now
	}
	reported.status.State, reported.status.Error, reported.status.LastUpdate = newState, newError, now
}

// GetAllPluginStatus implements statuscheck.StatusReader with copies.
func (p *Plugin) GetAllPluginStatus() map[string]*status.PluginStatus {
	p.probeAll()
	p.mutex.Lock()
	defer p.mutex.Unlock()
	copies := make(map[string]*status.PluginStatus, len(p.plugins))
	for name, reported := range p.plugins {
		pluginStatus := reported.status
		copies[string(name)] = &pluginStatus
	}
	return copies
}

// GetAgentStatus implements statuscheck.AgentStatusReader: the worst state
// of the plugins.
func (p *Plugin) GetAgentStatus() status.AgentStatus {
	p.probeAll()
	p.mutex.Lock()
	defer p.mutex.Unlock()
	agentStatus := status.AgentStatus{State: status.OperationalState_OK, StartTime: p.startTime.Unix(), LastUpdate: time.Now().Unix()}
	for _, reported := range p.plugins {
		pluginStatus := reported.status
		agentStatus.Plugins = append(agentStatus.Plugins, &pluginStatus)
		agentStatus.State = worse(agentStatus.State, pluginStatus.State)
		agentStatus.LastChange = max(agentStatus.LastChange, pluginStatus.LastChange)
	}
	return agentStatus
}

// GetInterfaceStats implements statuscheck.InterfaceStatusReader: the agent
// reports no interface states.
func (p *Plugin) GetInterfaceStats() status.InterfaceStats {
	return status.InterfaceStats{}
}

// probeAll asks the plugins registered with a probe for their state. The
// probes run outside the lock: they may take time or report themselves.
func (p *Plugin) probeAll() {
	p.mutex.Lock()
	probes := map[infra.PluginName]statuscheck.PluginStateProbe{}
	for name, reported := range p.plugins {
		if reported.probe != nil {
			probes[name] = reported.probe
		}
	}
	p.mutex.Unlock()
	for name, probe := range probes {
		state, err := probe()
		p.ReportStateChange(name, state, err)
	}
}

// severity orders states from best to worst.
var severity = map[status.OperationalState]int{
	status.OperationalState_OK:    0,
	status.OperationalState_INIT:  1,
	status.OperationalState_ERROR: 2,
}

func worse(a, b status.OperationalState) status.OperationalState {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

func stateToProto(state statuscheck.PluginState) status.OperationalState {
	switch state {
	case statuscheck.Init:
		return status.OperationalState_INIT
	case statuscheck.OK:
		return status.OperationalState_OK
	}
	return status.OperationalState_ERROR
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
