package manager

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Options are the manager's optional collaborators.
type Options struct {
	// Log is required.
	Log logs.Logger
	// LivePods, when set, is the pod tracker, which decides which pods
	// are alive and pushes that decision (podapi.LivePods); the manager
	// asks it for one at every resync, and is not ready while it says no
	// pod source answers. Without it nothing is collected.
	LivePods podapi.LivePodsSource
	// PodResolver, when set, answers GetPodMemifInfo and GetPodMemifs for a
	// pod that holds no bound allocation yet (just admitted by kubelet):
	// unbound allocations its evidence proves are returned, not bound.
	PodResolver podapi.PodResolver
	// Metrics is where the manager registers its metrics; nil: none.
	Metrics prometheus.Registerer
	// LookupTimeout bounds one PodResolver call, and a lookup's wait for
	// the startup resync to restore the checkpoint; default 10s.
	LookupTimeout time.Duration
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
	log     logs.Logger
	state   *allocation.State
	metrics *metrics

	// loaded, checkpoint, bootMarked, unexplained and unremoved are
	// touched only on the event loop. unexplained maps the name of each
	// directory under the socket root that no allocation holds to its
	// device.
	loaded     bool
	checkpoint *checkpoint.Writer
	// bootMarked: the checkpoint is recorded whole in the current boot
	// (markBoot), so the device plugin's changes are saved buffered.
	bootMarked bool
	// restored is closed once the startup resync has restored the
	// checkpoint: until then the state is empty, and the off-loop lookups
	// wait for it rather than answer "no memif" for a pod that has one.
	restored    chan struct{}
	unexplained map[string]string
	// unremoved are the unexplained directories whose removal failed,
	// logged once.
	unremoved map[string]bool
	// takenOver are the allocations the AllocateDevice being processed
	// took over, which its revert restores.
	takenOver takenOver

	// networks are what the memif wiring resolved for each allocation's
	// memifs (SetMemifNetworks), by allocation ID, behind networksMu:
	// written on the loop, read by every lookup.
	networksMu sync.RWMutex
	networks   map[string][]dmapi.MemifNetwork

	// live is the pod tracker's last LivePods decision, behind liveMu:
	// written on the loop, read before an AllocateDevice is pushed.
	liveMu sync.Mutex
	live   *podapi.LivePods
	// handedOver: HandOver was called; the successor owns the allocations,
	// and LivePods decisions release nothing here any more.
	handedOver atomic.Bool
	readiness  *readiness
	// remover empties the trash under the socket root from Start to Stop.
	remover *remover
	// deviceInfo are the device-info files of kubelet's allocations
	// (deviceinfo.go), touched only on the event loop.
	deviceInfo *deviceinfo.Files

	// serverMu guards started and server.
	serverMu sync.Mutex
	started  bool
	server   *deviceplugin.Server
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
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = 10 * time.Second
	}
	m := &Manager{
		cfg:   cfg,
		gid:   gid,
		opts:  opts,
		log:   opts.Log,
		state: allocation.NewState(cfg.ResourceName, allocation.DeviceIDs(cfg.DeviceCount), allocation.ClaimDeviceIDs(cfg.ClaimDeviceCount)),

		checkpoint: checkpoint.NewWriter(cfg.CheckpointPath),
		restored:   make(chan struct{}),
		networks:   map[string][]dmapi.MemifNetwork{},
		readiness:  newReadiness(opts.Log, opts.LivePods),
		deviceInfo: deviceinfo.New(cfg.DeviceInfoDir, cfg.ResourceName),
	}
	if m.metrics, err = newMetrics(opts.Metrics, m.state); err != nil {
		return nil, err
	}
	m.remover = newRemover(cfg.SocketRoot, m.openSocketRoot, m.log, m.metrics, opts.Now)
	return m, nil
}

// Start serves the device plugin and registers it with kubelet; Allocate
// calls go through loop. kubelet need not be there: registration retries.
// It starts the remover, which empties the trash of released directories
// (what a crash or a stop left first).
func (m *Manager) Start(loop controllerapi.EventLoop) error {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	if m.started {
		return errors.New("start device manager: already started")
	}
	if err := m.serveKubelet(loop); err != nil {
		return err
	}
	m.remover.start()
	m.started = true
	return nil
}

// Ready says why the device manager cannot do its work yet: its device
// plugin is not registered with kubelet, or (with the pod tracker) no pod
// source answered its last comparison; nil when it can. It is safe from
// any goroutine.
func (m *Manager) Ready() error { return m.readiness.err() }

// WasReady tells whether the device manager has been ready at least once
// since it started.
func (m *Manager) WasReady() bool { return m.readiness.wasReady() }

// Stop stops serving kubelet and the remover, between two reads of a
// directory. Allocations, their directories, the trash and the checkpoint
// stay: the next start picks them up.
func (m *Manager) Stop() {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	m.started = false
	m.remover.halt()
	if m.server != nil {
		m.server.Stop()
		m.server = nil
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
// from then on releases nothing on the pod tracker's LivePods decisions:
// the successor owns the allocations now. Stop ends serving kubelet once
// the successor serves it.
func (m *Manager) HandOver(successorSocket string) {
	m.handedOver.Store(true)
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	if m.server != nil {
		m.server.HandOver(successorSocket)
	}
}
