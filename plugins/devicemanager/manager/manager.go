package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Logger is the part of a logger the manager uses; cn-infra's
// logging.Logger satisfies it.
type Logger = deviceplugin.Logger

// Options are the manager's optional collaborators.
type Options struct {
	// Log is required.
	Log Logger
	// PodLister, when set, tells which pods are alive, so that allocations
	// of gone pods are collected, and what became of the pod holding
	// devices kubelet hands out again. It is called off the event loop.
	// Without it nothing is collected.
	PodLister podapi.PodLister
	// PodResolver, when set, answers GetPodMemifInfo and GetPodMemifs for a
	// pod that holds no bound allocation yet (just admitted by kubelet):
	// unbound allocations its evidence proves are returned, not bound.
	PodResolver podapi.PodResolver
	// Metrics is where the manager registers its metrics; nil: none.
	Metrics prometheus.Registerer
	// PodListTimeout bounds one PodLister call; default 10s.
	PodListTimeout time.Duration
	// Now returns the current time; default time.Now. Collection of
	// unbound allocations compares it with their allocation time.
	Now func() time.Time
	// DevicePluginInterceptor, when set, wraps each of kubelet's calls to
	// the device plugin (deviceplugin.Config.Interceptor).
	DevicePluginInterceptor grpc.UnaryServerInterceptor
	// DeviceHealth, when set, says whether the devices kubelet gets are
	// healthy (deviceplugin.Config.Health); nil: always.
	DeviceHealth dmapi.DeviceHealthSource
}

// Manager is the device manager. Create it with New, register it as a
// handler of the event loop, then Start it with that loop.
type Manager struct {
	cfg     config.Config
	gid     int
	opts    Options
	log     Logger
	state   *allocation.State
	metrics *metrics

	// loaded, checkpoint, unexplained and missing are touched only on the
	// event loop. unexplained maps the name of each directory under the
	// socket root that no allocation holds to its device.
	loaded     bool
	checkpoint *checkpoint.Writer
	// restored is closed once the startup resync has restored the
	// checkpoint: until then the state is empty, and the off-loop lookups
	// wait for it rather than answer "no memif" for a pod that has one.
	restored    chan struct{}
	unexplained map[string]string
	// missing are the gone pods a kubelet-only listing missed once.
	missing map[podapi.Pod]bool
	// takenOver are the allocations the AllocateDevice being processed
	// took over, which its revert restores.
	takenOver takenOver

	// networks are what the memif wiring resolved for each allocation's
	// memifs (SetMemifNetworks), by allocation ID, behind networksMu:
	// written on the loop, read by every lookup.
	networksMu sync.RWMutex
	networks   map[string][]dmapi.MemifNetwork

	// reconcileNow asks the reconciliation goroutine to list the pods now.
	reconcileNow chan struct{}
	readiness    *readiness

	// serverMu guards started, server and the reconciliation goroutine.
	serverMu sync.Mutex
	started  bool
	server   *deviceplugin.Server
	// stopReconcile ends the reconciliation goroutine; reconcileDone is
	// closed when it has ended.
	stopReconcile context.CancelFunc
	reconcileDone chan struct{}
}

// New validates cfg and returns a manager holding no allocation; the
// startup resync loads the checkpoint.
func New(cfg config.Config, opts Options) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid device manager config: %w", err)
	}
	gid, err := cfg.ResolveGroup()
	if err != nil {
		return nil, fmt.Errorf("invalid device manager config: %w", err)
	}
	if opts.Log == nil {
		return nil, errors.New("create device manager: no logger given")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PodListTimeout <= 0 {
		opts.PodListTimeout = 10 * time.Second
	}
	m := &Manager{
		cfg:   cfg,
		gid:   gid,
		opts:  opts,
		log:   opts.Log,
		state: allocation.NewState(cfg.ResourceName, allocation.DeviceIDs(cfg.DeviceCount), allocation.ClaimDeviceIDs(cfg.ClaimDeviceCount)),

		checkpoint:   checkpoint.NewWriter(cfg.CheckpointPath),
		restored:     make(chan struct{}),
		missing:      map[podapi.Pod]bool{},
		networks:     map[string][]dmapi.MemifNetwork{},
		readiness:    newReadiness(opts.Log, opts.PodLister != nil),
		reconcileNow: make(chan struct{}, 1),
	}
	if m.metrics, err = newMetrics(opts.Metrics, m.state); err != nil {
		return nil, err
	}
	return m, nil
}

// Start serves the device plugin and registers it with kubelet; Allocate
// calls go through loop. kubelet need not be there: registration retries.
func (m *Manager) Start(loop controllerapi.EventLoop) error {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	if m.started {
		return errors.New("start device manager: already started")
	}
	if err := m.serveKubelet(loop); err != nil {
		return err
	}
	m.started = true
	m.startReconciling(loop)
	return nil
}

// startReconciling lists the pods off the event loop and pushes
// ReconcileAllocations with them every reconcile-period and whenever a
// resync asks (reconcileSoon), when there is a pod lister. While no pod
// source answers it lists again every podRetryPeriod, so that readiness
// follows the sources closely.
func (m *Manager) startReconciling(loop controllerapi.EventLoop) {
	if m.opts.PodLister == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopReconcile, m.reconcileDone = cancel, make(chan struct{})
	go func() {
		defer close(m.reconcileDone)
		ticker := time.NewTicker(m.cfg.ReconcilePeriod.Duration())
		defer ticker.Stop()
		retry := time.NewTimer(podRetryPeriod)
		retry.Stop()
		defer retry.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			case <-m.reconcileNow:
			case <-retry.C:
			}
			if !m.reconcile(ctx, loop) {
				retry.Reset(podRetryPeriod)
			}
		}
	}()
}

// podRetryPeriod is how often the pods are listed while no source answers.
const podRetryPeriod = time.Second

// reconcile lists the live pods and pushes them to the event loop; false
// when no pod source answered.
func (m *Manager) reconcile(ctx context.Context, loop controllerapi.EventLoop) bool {
	listCtx, cancel := context.WithTimeout(ctx, m.opts.PodListTimeout)
	live, err := m.opts.PodLister.ListPods(listCtx)
	cancel()
	if ctx.Err() != nil {
		return true
	}
	m.readiness.podsListed(err)
	if err != nil {
		return false
	}
	if err := loop.PushEvent(&ReconcileAllocations{Live: live}); err != nil {
		m.log.Warnf("skip this allocation reconciliation: %v", err)
	}
	return true
}

// Ready says why the device manager cannot do its work yet: its device
// plugin is not registered with kubelet, or (with a pod lister) no pod
// source answered the last listing; nil when it can. It is safe from any
// goroutine.
func (m *Manager) Ready() error { return m.readiness.err() }

// WasReady tells whether the device manager has been ready at least once
// since it started.
func (m *Manager) WasReady() bool { return m.readiness.wasReady() }

// reconcileSoon asks for a reconciliation without waiting; one already
// asked for is enough.
func (m *Manager) reconcileSoon() {
	select {
	case m.reconcileNow <- struct{}{}:
	default:
	}
}

// Stop stops serving kubelet. Allocations, their directories and the
// checkpoint stay: the next start picks them up.
func (m *Manager) Stop() {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	m.stopReconciling()
	m.started = false
	if m.server != nil {
		m.server.Stop()
		m.server = nil
	}
}

func (m *Manager) stopReconciling() {
	if m.stopReconcile != nil {
		m.stopReconcile()
		<-m.reconcileDone
		m.stopReconcile = nil
	}
}

// ClaimPool returns the devices handed out through ResourceClaims
// (claim-device-count of them), for the DRA driver to publish.
func (m *Manager) ClaimPool() dmapi.ClaimPool {
	return dmapi.ClaimPool{Devices: m.state.ClaimDevices(), SocketRoot: m.cfg.SocketRoot, ContainerDir: m.cfg.ContainerDir}
}

// SocketPath is the device plugin socket's path.
func (m *Manager) SocketPath() string { return m.cfg.PluginSocketPath() }

// HandOver forwards kubelet's Allocate calls to the device plugin at
// successorSocket, the agent that replaces this one (internal/handover),
// returns once the calls this manager was answering are answered, and
// stops reconciling: the successor owns the allocations now. Stop ends
// serving kubelet once the successor serves it.
func (m *Manager) HandOver(successorSocket string) {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	if m.server != nil {
		m.server.HandOver(successorSocket)
	}
	m.stopReconciling()
}
