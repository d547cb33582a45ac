package devicemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/infra"
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"google.golang.org/grpc"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/handover"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/nodelock"
	"github.com/contivpp/memif-agent/internal/promregistry"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/devicehealth"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// Plugin is the device manager in the agent. It is a controller event
// handler and implements dmapi.DeviceManagerAPI.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log logs.Logger
	dm  *manager.Manager
	// health follows the vswitch's reachability from AfterInit to Close.
	health     *devicehealth.Watcher
	stopHealth context.CancelFunc
	healthDone chan struct{}
	// nodeLock is held until the process exits (an unreferenced one would
	// be closed, and so released, by the garbage collector).
	nodeLock *nodelock.Lock
	lockPath string

	// podUID is $POD_UID (dmapi.PodUIDEnv): set, the device plugin socket
	// is the pod's own and the node is handed over (handover.go).
	podUID    string
	pluginDir string
	// granted is the handover from the agent this one replaces, until
	// this one serves.
	granted *handover.Granted
	// stopServing ends serveNode; servingDone is closed when it returned.
	stopServing context.CancelFunc
	servingDone chan struct{}
	// handover are the other parts of the agent that take part when the
	// node is handed over (HandOverWith). Not a dependency: cn-infra would
	// start them before this plugin.
	handover []dmapi.HandoverParticipant
}

// HandOverWith sets the other parts of the agent that take part, in this
// order, when the node is handed over to the agent replacing this one
// (dmapi.HandoverParticipant). Call it before Init.
func (p *Plugin) HandOverWith(participants ...dmapi.HandoverParticipant) {
	p.handover = participants
}

// NodeLockWait is how long a starting agent waits for the one it
// replaces to exit: the pod's termination grace period (30 s), after which
// kubelet kills it, and a margin. The agent's start timeout and the
// DaemonSet's startup probe must allow for it.
const NodeLockWait = 40 * time.Second

// Deps are the plugin's dependencies. EventLoop is required; LivePods,
// PodResolver, Prometheus and StatusCheck are optional.
type Deps struct {
	infra.PluginDeps
	EventLoop controllerapi.EventLoop
	// LivePods is the pod tracker, whose LivePods decisions the device
	// manager releases allocations on; optional.
	LivePods podapi.LivePodsSource
	// PodResolver answers GetPodMemifInfo for a pod kubelet has just
	// admitted; optional.
	PodResolver podapi.PodResolver
	Prometheus  cnprometheus.API
	// StatusCheck hears whether the device manager can work (manager.Ready):
	// the agent is not ready until its device plugin is registered with
	// kubelet and a pod source answers.
	StatusCheck statuscheck.PluginStatusWriter
	// Vswitch tells whether the vswitch answers: the devices are reported
	// unhealthy while it has not for longer than vswitch-health-grace.
	// Optional: without it the devices are always healthy.
	Vswitch vswitchapi.VswitchAPI
	// KubeletInterceptor, when set, wraps each of kubelet's calls to the
	// device plugin; optional (the agent sets none).
	KubeletInterceptor grpc.UnaryServerInterceptor
}

var (
	_ controllerapi.EventHandler = (*Plugin)(nil)
	_ dmapi.DeviceManagerAPI     = (*Plugin)(nil)
	_ dmapi.DeviceHealthSource   = (*Plugin)(nil)
)

// Init reads and validates the config, resolves the links in
// checkpoint-path (config.ResolveLinks), takes the node lock beside the
// checkpoint (nodelock) and creates the manager. An invalid config stops
// the agent with an error naming the key; so does another agent holding
// the node past NodeLockWait, naming it. A lock that cannot be taken for
// any other reason is logged, not fatal.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.EventLoop == nil {
		return errors.New("devicemanager plugin: no EventLoop dependency given")
	}
	cfg := config.Default()
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("devicemanager plugin: %w", err)
	}
	// Validate checked where checkpoint-path leads; opening that place,
	// not the spelling, keeps a link changed later from moving it.
	resolved, err := config.ResolveLinks(cfg.CheckpointPath)
	if err != nil {
		return fmt.Errorf("devicemanager plugin: %w", err)
	}
	if resolved != filepath.Clean(cfg.CheckpointPath) {
		p.log.InfoS("checkpoint-path resolves through a symbolic link: using where it leads", "checkpointPath", cfg.CheckpointPath, "resolved", resolved)
		cfg.CheckpointPath = resolved
	}
	p.podUID = os.Getenv(dmapi.PodUIDEnv)
	if p.podUID != "" {
		// It names this agent's kubelet sockets, and the successor's to
		// the agent it replaces.
		if err := handover.ValidatePodUID(p.podUID); err != nil {
			return fmt.Errorf("devicemanager plugin: $%s (the agent pod's metadata.uid): %w", dmapi.PodUIDEnv, err)
		}
	}
	if p.podUID != "" && cfg.PluginSocket == config.DefaultPluginSocket {
		cfg.PluginSocket = PluginSocketFor(p.podUID)
	}
	p.pluginDir = cfg.PluginDir
	// Before the checkpoint is read and before the agent listens anywhere:
	// the agent this one replaces may still be terminating, or hand the
	// node over (nodelock, handover.go).
	p.lockPath = cfg.CheckpointPath + ".lock"
	lock, err := p.takeNode(p.lockPath)
	var held *nodelock.HeldError
	switch {
	case errors.As(err, &held):
		return fmt.Errorf("devicemanager plugin: %w", err)
	case err != nil:
		// The lock only keeps agents apart: a directory the lock cannot
		// be taken in (unsafe, read-only) is the checkpoint's too, and the
		// manager refuses every Allocate naming what is wrong with it.
		p.log.WarnS("running without the node lock, so nothing keeps a second memif-agent off this node", "err", err)
	default:
		p.nodeLock = lock
	}
	p.health = devicehealth.New(p.Vswitch, cfg.VswitchHealthGrace.Duration(), p.log)
	opts := manager.Options{Log: p.log, LivePods: p.LivePods, PodResolver: p.PodResolver, DeviceHealth: p.health,
		DevicePluginInterceptor: p.KubeletInterceptor}
	if p.Prometheus != nil {
		opts.Metrics = promregistry.Default(p.Prometheus)
	}
	dm, err := manager.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("devicemanager plugin: %w", err)
	}
	p.dm = dm
	if p.StatusCheck != nil {
		p.StatusCheck.Register(p.PluginName, p.probe)
	}
	return nil
}

// probe tells the status check whether the device manager can work, and
// why not: INIT until it first can, ERROR when it no longer can.
func (p *Plugin) probe() (statuscheck.PluginState, error) {
	err := p.dm.Ready()
	switch {
	case err == nil:
		return statuscheck.OK, nil
	case p.dm.WasReady():
		return statuscheck.Error, err
	}
	return statuscheck.Init, err
}

// AfterInit follows the vswitch's health, serves the device plugin and
// registers it with kubelet.
func (p *Plugin) AfterInit() error {
	ctx, stop := context.WithCancel(context.Background())
	p.stopHealth, p.healthDone = stop, make(chan struct{})
	go func() {
		defer close(p.healthDone)
		p.health.Run(ctx)
	}()
	if err := p.dm.Start(p.EventLoop); err != nil {
		return err
	}
	servingCtx, stopServing := context.WithCancel(context.Background())
	p.stopServing, p.servingDone = stopServing, make(chan struct{})
	go func() {
		defer close(p.servingDone)
		p.serveNode(servingCtx)
	}()
	return nil
}

// Close stops serving kubelet; allocations stay in the checkpoint.
func (p *Plugin) Close() error {
	if p.stopServing != nil {
		p.stopServing()
		<-p.servingDone
	}
	if p.dm != nil {
		p.dm.Stop()
	}
	if p.stopHealth != nil {
		p.stopHealth()
		<-p.healthDone
	}
	return nil
}

// DeviceHealth implements dmapi.DeviceHealthSource: the DRA driver taints
// its devices while they are unhealthy.
func (p *Plugin) DeviceHealth() (dmapi.DeviceHealth, <-chan struct{}) {
	return p.health.DeviceHealth()
}

// HandlesEvent implements controllerapi.EventHandler.
func (p *Plugin) HandlesEvent(event controllerapi.Event) bool { return p.dm.HandlesEvent(event) }

// Resync implements controllerapi.EventHandler.
func (p *Plugin) Resync(event controllerapi.Event, txn controllerapi.EventOperations) error {
	return p.dm.Resync(event, txn)
}

// Update implements controllerapi.EventHandler.
func (p *Plugin) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	return p.dm.Update(event, txn)
}

// Revert implements controllerapi.EventHandler.
func (p *Plugin) Revert(event controllerapi.Event) error { return p.dm.Revert(event) }

// BoundPodMemifs implements dmapi.DeviceManagerAPI.
func (p *Plugin) BoundPodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	return p.dm.BoundPodMemifs(pod)
}

// GetPodMemifInfo implements dmapi.DeviceManagerAPI.
func (p *Plugin) GetPodMemifInfo(pod podapi.PodID) (dmapi.MemifInfo, error) {
	return p.dm.GetPodMemifInfo(pod)
}

// GetPodMemifs implements dmapi.DeviceManagerAPI.
func (p *Plugin) GetPodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	return p.dm.GetPodMemifs(pod)
}

// ClaimPool returns the devices the DRA driver publishes.
func (p *Plugin) ClaimPool() dmapi.ClaimPool { return p.dm.ClaimPool() }

// ListAllocations implements dmapi.DeviceManagerAPI.
func (p *Plugin) ListAllocations() []dmapi.MemifInfo { return p.dm.ListAllocations() }

// WatchAllocations implements dmapi.DeviceManagerAPI.
func (p *Plugin) WatchAllocations(ctx context.Context, changes chan<- dmapi.AllocationChange) {
	p.dm.WatchAllocations(ctx, changes)
}

var _ dmapi.NetworkRecorder = (*Plugin)(nil)

// SetMemifNetworks implements dmapi.NetworkRecorder.
func (p *Plugin) SetMemifNetworks(allocationID string, networks []dmapi.MemifNetwork) {
	p.dm.SetMemifNetworks(allocationID, networks)
}

// WriteMemifJSON implements dmapi.NetworkRecorder.
func (p *Plugin) WriteMemifJSON(allocationID string, content []byte) error {
	return p.dm.WriteMemifJSON(allocationID, content)
}

// NetworksStatePath implements dmapi.NetworkRecorder.
func (p *Plugin) NetworksStatePath() string { return p.dm.NetworksStatePath() }

// ClaimPreparer is the device manager as the DRA driver's
// dmapi.ClaimPreparer, over the plugin's event loop.
func (p *Plugin) ClaimPreparer() dmapi.ClaimPreparer { return p.dm.ClaimPreparer(p.EventLoop) }
