package vswitch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/infra"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
)

// ReconnectResyncName names the resync the plugin pushes when VPP answers.
const ReconnectResyncName = "VswitchConnected"

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// KVScheduler gets the VPP descriptors.
	KVScheduler kvs.KVScheduler
	// EventLoop runs the resync after each connection to VPP.
	EventLoop controllerapi.EventLoop
	// StatusCheck gets the plugin's state (error while VPP is away);
	// optional.
	StatusCheck statuscheck.PluginStatusWriter
	// LinkEvents is told of memifs refused for a wrong secret and of
	// links down past vswitch.conf's link-down-grace; optional.
	LinkEvents vswitchapi.LinkEvents
}

// Plugin connects the agent to VPP.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log    logs.Logger
	config Config
	client *vppapi.Client
	links  *linkWatcher
	// linkStates tells the KV scheduler the memifs' link states.
	linkStates *descriptor.LinkStates
	// reachability is whether VPP answers, for the device manager.
	reachability vswitchapi.ReachabilityCell

	stop context.CancelFunc
	done sync.WaitGroup
	// firstDial is closed once the first dial to VPP connected or failed.
	firstDial     chan struct{}
	firstDialOnce sync.Once

	mu sync.Mutex
	// lastErr is the last connection error reported, so that a VPP that
	// stays away is logged once, not at every dial.
	lastErr string
}

// Init reads vswitch.conf, registers the descriptors and starts
// connecting to VPP (see start).
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.KVScheduler == nil || p.EventLoop == nil {
		return errors.New("vswitch plugin: KVScheduler and EventLoop dependencies must be set")
	}
	p.config = DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &p.config); err != nil {
		return fmt.Errorf("vswitch plugin: %w", err)
	}
	if p.config.VPPAPISocket == "" {
		p.reachability.Set(vswitchapi.Reachability{})
		p.log.InfoS("no vpp-api-socket in vswitch config: VPP is not programmed; memif interfaces stay unimplemented in the KV scheduler")
		return nil
	}
	if p.StatusCheck != nil {
		p.StatusCheck.Register(p.PluginName, nil)
	}
	p.reachability.Set(vswitchapi.Reachability{Configured: true, Since: time.Now(), Err: errNotConnectedYet})
	p.client = vppapi.NewClient(vppapi.ClientConfig{
		Socket:       p.config.VPPAPISocket,
		Name:         "memif-agent",
		Timeout:      p.config.RequestTimeout.Duration(),
		OnConnect:    p.connected,
		OnDisconnect: p.disconnected,
	})
	interfaces := descriptor.NewInterfaces(p.client.Conn)
	p.linkStates = interfaces.WithLinkStates(p.KVScheduler.PushSBNotification)
	p.links = newLinkWatcher(p.client.Conn, p.linkStates, interfaces.Index(), p.log)
	p.links.events, p.links.grace = p.LinkEvents, p.config.LinkDownGrace.Duration()
	bridgeDomains := descriptor.NewBridgeDomains(p.client.Conn, interfaces.Index())
	xconnects := descriptor.NewXConnects(p.client.Conn, interfaces.Index())
	routes := descriptor.NewRoutes(p.client.Conn, interfaces.Index())
	vrfTables := descriptor.NewVrfTables(p.client.Conn)
	for _, d := range []*kvs.KVDescriptor{interfaces.Descriptor(), p.linkStates.Descriptor(),
		descriptor.NewRxModes(p.client.Conn, interfaces.Index()).Descriptor(), vrfTables.Descriptor(), routes.Descriptor(),
		bridgeDomains.Descriptor(), bridgeDomains.InterfaceDescriptor(), xconnects.Descriptor()} {
		if err := p.KVScheduler.RegisterKVDescriptor(d); err != nil {
			return fmt.Errorf("vswitch plugin: register descriptor %s: %w", d.Name, err)
		}
	}
	p.start()
	return nil
}

// start connects to VPP and waits for the first dial's outcome, so that a
// VPP that is up is connected before the controller's AfterInit runs the
// startup resync (the controller is initialised first: this plugin pushes
// into its loop). Otherwise the startup resync would race the dial and
// fail with vppapi.ErrNotConnected at nearly every start. A VPP that is
// away fails the dial at once; a hung one within request-timeout.
func (p *Plugin) start() {
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.firstDial = make(chan struct{})
	p.done.Add(3)
	go func() {
		defer p.done.Done()
		p.client.Run(ctx)
	}()
	go func() {
		defer p.done.Done()
		p.checkHealth(ctx, p.config.HealthCheckPeriod.Duration())
	}()
	go func() {
		defer p.done.Done()
		p.links.run(ctx, p.config.LinkCheckPeriod.Duration())
	}()
	<-p.firstDial
}

// firstDialDone tells start that the first dial has ended.
func (p *Plugin) firstDialDone() {
	p.firstDialOnce.Do(func() { close(p.firstDial) })
}

// Close disconnects from VPP. VPP keeps the interfaces, so that pods keep
// their data path while the agent restarts.
func (p *Plugin) Close() error {
	if p.stop != nil {
		p.stop()
		p.done.Wait()
	}
	return nil
}

var _ vswitchapi.LinkReader = (*Plugin)(nil)

// MemifLinks implements vswitchapi.LinkReader.
func (p *Plugin) MemifLinks() []vswitchapi.MemifLink {
	if p.links == nil {
		return nil
	}
	return p.links.lastLinks()
}

// LinkDownGrace is vswitch.conf's link-down-grace, once Init read it.
func (p *Plugin) LinkDownGrace() time.Duration {
	return p.config.LinkDownGrace.Duration()
}

func (p *Plugin) connected(conn *vppapi.Conn) {
	var version vppmsg.ShowVersionReply
	if err := conn.Request(context.Background(), &vppmsg.ShowVersion{}, &version); err != nil {
		p.log.WarnS("connected to VPP, but show_version failed", "socket", p.config.VPPAPISocket, "err", err)
	}
	p.log.InfoS("connected to VPP: resyncing the vswitch side", "version", version.Version, "socket", p.config.VPPAPISocket)
	p.linkStates.Reconnected()
	p.links.connected(context.Background(), conn)
	p.reachable()
	p.mu.Lock()
	p.lastErr = ""
	p.mu.Unlock()
	if p.StatusCheck != nil {
		p.StatusCheck.ReportStateChange(p.PluginName, statuscheck.OK, nil)
	}
	resync := eventloop.NewResyncEvent(ReconnectResyncName)
	if err := p.EventLoop.PushEvent(resync); err != nil {
		p.log.ErrorS(err, "resync after connecting to VPP not pushed")
	}
	p.firstDialDone()
}

func (p *Plugin) disconnected(err error) {
	err = fmt.Errorf("vswitch not ready: VPP at %s: %w", p.config.VPPAPISocket, err)
	p.unreachable(time.Now(), err)
	p.mu.Lock()
	repeated := p.lastErr == err.Error()
	p.lastErr = err.Error()
	p.mu.Unlock()
	var mismatch *vppapi.APIMismatchError
	switch {
	case repeated:
	case errors.As(err, &mismatch):
		// Not a VPP that is away: one that the agent cannot speak to
		// until one of the two is replaced.
		p.log.ErrorS(err, "VPP's binary API does not match the agent's")
	default:
		p.log.WarnS("VPP not reachable: retrying, the vswitch side is re-created once VPP answers", "err", err)
	}
	if p.StatusCheck != nil {
		p.StatusCheck.ReportStateChange(p.PluginName, statuscheck.Error, err)
	}
	p.firstDialDone()
}
