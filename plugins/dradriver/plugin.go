package dradriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ligato/cn-infra/infra"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/kubeclient"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/dradriver/claimstatus"
	"github.com/contivpp/memif-agent/plugins/dradriver/kubeletdriver"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// Plugin is the DRA driver in the agent.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log logs.Logger
	cfg Config
	// driverMu guards driver and client, set by AfterInit and read by the
	// handover's goroutine.
	driverMu sync.Mutex
	client   kubernetes.Interface
	driver   *kubeletdriver.Driver
	// stopStatus ends the claims' status writer and waits for it.
	stopStatus func()
}

// ClaimPoolSource gives the devices to publish and prepares the claims
// made of them: the device manager. When it is also a
// dmapi.DeviceHealthSource, the devices are tainted in the ResourceSlice
// while they are unhealthy (kubeletdriver.VswitchUnreachableTaint).
type ClaimPoolSource interface {
	ClaimPool() dmapi.ClaimPool
	ClaimPreparer() dmapi.ClaimPreparer
	// ListAllocations lists the allocations, for the claims' status.
	ListAllocations() []dmapi.MemifInfo
}

// VswitchSource is what the claims' status reads of VPP: the vswitch
// plugin.
type VswitchSource interface {
	vswitchapi.LinkReader
	vswitchapi.VswitchAPI
	// LinkDownGrace is vswitch.conf's link-down-grace.
	LinkDownGrace() time.Duration
}

// Deps are the plugin's dependencies; EventLoop and DeviceManager are
// required.
type Deps struct {
	infra.PluginDeps
	// EventLoop is not called: it makes cn-infra start the controller
	// before the driver, whose claims' sync in AfterInit waits for the
	// device manager's events on the loop the controller starts (the
	// device manager itself starts before the controller).
	EventLoop     controllerapi.EventLoop
	DeviceManager ClaimPoolSource
	// KubeletInterceptor, when set, wraps each of kubelet's calls to the
	// driver; optional (the agent sets none).
	KubeletInterceptor grpc.UnaryServerInterceptor
	// Client, when set, is the driver's API server client in place of the
	// one dradriver.conf's kubeconfig (or the service account) makes;
	// optional (the agent sets none).
	Client kubernetes.Interface
	// Vswitch, when set, gives the claims' status VPP's links and
	// reachability; nil: LinkUp is never True.
	Vswitch VswitchSource
}

// Init reads and validates the config. An invalid config stops the agent
// with an error naming the key.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.EventLoop == nil || p.DeviceManager == nil {
		return errors.New("dradriver plugin: EventLoop and DeviceManager dependencies are required")
	}
	p.cfg = DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &p.cfg); err != nil {
		return fmt.Errorf("dradriver plugin: %w", err)
	}
	if p.cfg.Enabled && p.cfg.NodeName == "" {
		p.cfg.NodeName = os.Getenv(NodeNameEnv)
		if p.cfg.NodeName == "" {
			return fmt.Errorf("dradriver plugin: %w", &configfile.KeyError{Key: "node-name",
				Reason: "is empty and $" + NodeNameEnv + " is not set; set either to this node's name"})
		}
	}
	return nil
}

// AfterInit starts the driver when it is enabled: kubelet's DRA API,
// registration, and the node's ResourceSlice.
func (p *Plugin) AfterInit() error {
	if !p.cfg.Enabled {
		p.log.InfoS("DRA driver off (dradriver.conf enabled: false)")
		return nil
	}
	pool := p.DeviceManager.ClaimPool()
	if len(pool.Devices) == 0 {
		return errors.New("dradriver plugin: enabled, but devicemanager.conf claim-device-count is 0: set it to the number of memifs this node offers through ResourceClaims")
	}
	client, err := p.kubeClient()
	if err != nil {
		return err
	}
	health, _ := p.DeviceManager.(dmapi.DeviceHealthSource)
	driver, err := kubeletdriver.New(kubeletdriver.Config{
		DriverName: p.cfg.DriverName, NodeName: p.cfg.NodeName,
		PluginDataDir: p.cfg.PluginDataDir, RegistrarDir: p.cfg.RegistrarDir, CDIDir: p.cfg.CDIDir,
		SocketRoot: pool.SocketRoot, ContainerDir: pool.ContainerDir, Devices: pool.Devices,
		Health: health, Claims: p.DeviceManager.ClaimPreparer(), PodUID: types.UID(os.Getenv(dmapi.PodUIDEnv)),
		Interceptor: p.KubeletInterceptor,
	}, client, p.log)
	if err != nil {
		return fmt.Errorf("dradriver plugin: %w", err)
	}
	if err := driver.Start(context.Background()); err != nil {
		return fmt.Errorf("dradriver plugin: %w", err)
	}
	stopStatus := p.writeStatus(client)
	p.driverMu.Lock()
	p.driver, p.client, p.stopStatus = driver, client, stopStatus
	p.driverMu.Unlock()
	p.log.InfoS("DRA driver serving", "driver", p.cfg.DriverName, "socket", driver.PluginSocket(), "devices", len(pool.Devices), "node", p.cfg.NodeName)
	return nil
}

// writeStatus starts the writer of the claims' device status
// (claimstatus) and returns what stops it.
func (p *Plugin) writeStatus(client kubernetes.Interface) func() {
	source := claimstatus.Source{Allocations: p.DeviceManager.ListAllocations}
	if p.Vswitch != nil {
		source.Links, source.Vswitch, source.Grace = p.Vswitch, p.Vswitch, p.Vswitch.LinkDownGrace()
	}
	writer := claimstatus.NewWriter(client, p.cfg.DriverName, p.cfg.NodeName, claims.PoolName(p.cfg.NodeName), source, p.log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		writer.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func (p *Plugin) kubeClient() (kubernetes.Interface, error) {
	if p.Client != nil {
		return p.Client, nil
	}
	client, err := kubeclient.New(p.cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("dradriver plugin: %w", err)
	}
	return client, nil
}

// KubeClient is the driver's API server client once AfterInit started
// the driver; nil when it is off. The agent posts its pod events with it.
func (p *Plugin) KubeClient() kubernetes.Interface {
	p.driverMu.Lock()
	defer p.driverMu.Unlock()
	return p.client
}

// Close stops serving kubelet and publishing; prepared claims stay in the
// checkpoint, the slices in the API server for the next start. When no
// start follows (the DaemonSet deleted, or dradriver.conf enabled: false),
// kubelet deletes this node's slices of the driver 30 seconds later; a
// driver kubelet never registered deletes them itself as it stops.
func (p *Plugin) Close() error {
	if driver := p.startedDriver(); driver != nil {
		driver.Stop()
	}
	p.driverMu.Lock()
	stopStatus := p.stopStatus
	p.stopStatus = nil
	p.driverMu.Unlock()
	if stopStatus != nil {
		stopStatus()
	}
	return nil
}

// startedDriver is the driver once AfterInit started it, else nil.
func (p *Plugin) startedDriver() *kubeletdriver.Driver {
	p.driverMu.Lock()
	defer p.driverMu.Unlock()
	return p.driver
}

var (
	_ dmapi.HandoverParticipant = (*Plugin)(nil)
	_ dmapi.KubeletRegistration = (*Plugin)(nil)
)

// HandOver implements dmapi.HandoverParticipant: kubelet's prepare and
// unprepare calls go to the replacing agent's driver.
func (p *Plugin) HandOver(_ context.Context, successorUID string) {
	if driver := p.startedDriver(); driver != nil {
		driver.HandOver(types.UID(successorUID))
	}
}

// SuccessorServing implements dmapi.HandoverParticipant: the driver stops
// serving kubelet, which then calls only the replacing agent's; the
// slices stay, published by both alike.
func (p *Plugin) SuccessorServing() {
	if driver := p.startedDriver(); driver != nil {
		driver.Stop()
	}
}

// KubeletRegistered implements dmapi.KubeletRegistration.
func (p *Plugin) KubeletRegistered() bool {
	if !p.cfg.Enabled {
		return true
	}
	driver := p.startedDriver()
	return driver != nil && driver.Registered()
}
