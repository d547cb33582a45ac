package kubeletdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/contivpp/memif-agent/internal/logs"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claimprefetch"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// Config says where the driver serves and what it publishes.
type Config struct {
	// DriverName is the DRA driver's name (claims.DefaultDriverName).
	DriverName string
	// NodeName is this node; its pool has the same name.
	NodeName string
	// PluginDataDir holds the DRA gRPC socket (dra.sock); RegistrarDir is
	// kubelet's plugin registration directory.
	PluginDataDir string
	RegistrarDir  string
	// CDIDir is where claim CDI specs are written; created mode 0700.
	CDIDir string
	// SocketRoot and ContainerDir are the device manager's, published as
	// device attributes and used in the CDI mount.
	SocketRoot   string
	ContainerDir string
	// Devices are the claim devices to publish (the device manager's
	// claim-device-count).
	Devices []string
	// Interceptor, when set, wraps each of kubelet's calls
	// (NodePrepareResources, NodeUnprepareResources, registration), to
	// time or trace them as kubelet makes them.
	Interceptor grpc.UnaryServerInterceptor
	// Health, when set, says whether the devices are healthy: while they
	// are not, the ResourceSlice taints them (VswitchUnreachableTaint).
	Health dmapi.DeviceHealthSource
	// Claims makes and releases the claims' allocations (the device
	// manager); required.
	Claims dmapi.ClaimPreparer
	// PodUID, when set, is the agent's own pod: the driver runs for
	// rolling updates (kubeletplugin.RollingUpdate: its sockets are the
	// pod's own, and two agents of a node may serve kubelet at once), and
	// HandOver forwards to the driver replacing it.
	PodUID types.UID
}

// cdiDirMode: the specs hold memif secrets. socketDirMode: kubelet (root)
// alone calls the sockets.
const (
	cdiDirMode    = 0o700
	socketDirMode = 0o700
)

// syncTimeout bounds the claims' sync at start; withdrawTimeout the
// removal of the node's slices at a stop kubelet would not clean up after,
// well within the agent's 5 s stop timeout (cn-infra's) so that the
// plugins closed after the driver still remove their sockets.
const (
	syncTimeout     = 30 * time.Second
	withdrawTimeout = 2 * time.Second
)

// Driver is the DRA driver. Create it with New, then Start.
type Driver struct {
	cfg    Config
	client kubernetes.Interface
	log    logs.Logger
	specs  *cdi.Cache

	// forward sends kubelet's calls to the replacing agent after HandOver.
	forward forwarding
	// ahead are the claims prepared as their pods were bound, until
	// kubelet's call takes them (ahead.go).
	ahead aheadClaims

	mu     sync.Mutex
	helper *kubeletplugin.Helper
	// stopHealth ends followHealth, which closes healthDone.
	stopHealth context.CancelFunc
	healthDone chan struct{}
	// stopPrefetch ends the reads of the node's pods' claims ahead of
	// kubelet (claimprefetch) and waits for them.
	stopPrefetch func()
	// registered is set when kubelet reports it registered the driver
	// (NotifyRegistrationStatus), for this start.
	registered atomic.Bool
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New returns a driver that prepares claims through cfg.Claims and reads
// them with client.
func New(cfg Config, client kubernetes.Interface, log logs.Logger) (*Driver, error) {
	if cfg.Claims == nil {
		return nil, errors.New("DRA driver: Config.Claims is required")
	}
	if err := os.MkdirAll(cfg.CDIDir, cdiDirMode); err != nil {
		return nil, fmt.Errorf("create CDI directory %s: %w", cfg.CDIDir, err)
	}
	specs, err := cdi.NewCache(cdi.WithSpecDirs(cfg.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("open CDI directory %s: %w", cfg.CDIDir, err)
	}
	return &Driver{cfg: cfg, client: client, log: log, specs: specs}, nil
}

// Start checks the prepared claims against the API server (syncClaims; on
// failure they are kept and a warning logged), then serves kubelet's DRA
// API, registers with kubelet and publishes the node's devices. kubelet
// need not be there yet: it finds the registration socket when it starts.
func (d *Driver) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.helper != nil {
		return errors.New("start DRA driver: already started")
	}
	// kubelet makes its registration directory when it starts; the driver
	// may start first.
	for _, dir := range []string{d.cfg.PluginDataDir, d.cfg.RegistrarDir} {
		if err := os.MkdirAll(dir, socketDirMode); err != nil {
			return fmt.Errorf("start DRA driver: create %s: %w", dir, err)
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	err := d.syncClaims(syncCtx)
	cancel()
	if err != nil {
		d.log.WarnS("DRA driver's prepared claims not checked against the API server: they stay until kubelet unprepares them", "driver", d.cfg.DriverName, "err", err)
	}
	prefetched, stopPrefetch := d.prefetchClaims(ctx)
	options := []kubeletplugin.Option{
		kubeletplugin.DriverName(d.cfg.DriverName),
		kubeletplugin.NodeName(d.cfg.NodeName),
		kubeletplugin.KubeClient(prefetched.Client()),
		kubeletplugin.PluginDataDirectoryPath(d.cfg.PluginDataDir),
		kubeletplugin.RegistrarDirectoryPath(d.cfg.RegistrarDir),
		kubeletplugin.HealthService(false),
		kubeletplugin.GRPCInterceptor(d.watchRegistration),
		kubeletplugin.GRPCInterceptor(d.forwardCalls),
	}
	if d.cfg.PodUID != "" {
		options = append(options, kubeletplugin.RollingUpdate(d.cfg.PodUID))
	}
	if d.cfg.Interceptor != nil {
		options = append(options, kubeletplugin.GRPCInterceptor(d.cfg.Interceptor))
	}
	d.registered.Store(false)
	helper, err := kubeletplugin.Start(ctx, d, options...)
	if err != nil {
		stopPrefetch()
		return fmt.Errorf("start DRA driver %s: %w", d.cfg.DriverName, err)
	}
	health, changed := d.healthNow()
	if err := helper.PublishResources(ctx, d.resources(health)); err != nil {
		helper.Stop()
		stopPrefetch()
		return fmt.Errorf("publish ResourceSlices of %s: %w", d.cfg.DriverName, err)
	}
	d.helper, d.stopPrefetch = helper, stopPrefetch
	healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
	d.stopHealth, d.healthDone = stopHealth, make(chan struct{})
	go func() {
		defer close(d.healthDone)
		d.followHealth(healthCtx, helper, health, changed)
	}()
	return nil
}

// prefetchClaims follows the node's pods, reads their claims and prepares
// them ahead of kubelet (ahead.go), until the returned stop is called;
// kubeletplugin reads the claims it prepares through the returned Claims'
// Client.
func (d *Driver) prefetchClaims(ctx context.Context) (*claimprefetch.Claims, func()) {
	prefetched := claimprefetch.New(d.client, d.cfg.NodeName, claimprefetch.DefaultTimeToLive, d)
	followCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := prefetched.Follow(followCtx); err != nil {
			d.log.WarnS("DRA driver reads each claim when kubelet asks to prepare it, not ahead", "driver", d.cfg.DriverName, "err", err)
		}
	}()
	return prefetched, func() {
		cancel()
		<-done
	}
}

// Stop stops serving kubelet and publishing, and removes the driver's
// sockets, so kubelet unregisters it. The slices stay: a restart publishes
// the same ones again, untouched, and prepared claims stay in the
// checkpoint with their CDI specs. A driver that does not come back loses
// its slices to kubelet: 30 seconds after the last registration of a
// driver goes (or its connection breaks), kubelet deletes the driver's
// ResourceSlices of its node, unless the driver registers again first.
// kubelet cleans up only after a driver it registered, though: one that
// stops before kubelet registered it (kubelet slow, or not running)
// withdraws its slices itself, or they would advertise devices nobody
// prepares.
func (d *Driver) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.helper == nil {
		return
	}
	d.stopHealth()
	<-d.healthDone
	d.helper.Stop()
	d.helper = nil
	d.stopPrefetch()
	d.forward.close()
	if d.registered.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	if err := d.withdrawSlices(ctx); err != nil {
		d.log.WarnS("DRA driver stopped before kubelet registered it, and its ResourceSlices stay (kubelet deletes them when it next starts; or delete them by hand)",
			"driver", d.cfg.DriverName, "node", d.cfg.NodeName, "err", err)
		return
	}
	d.log.InfoS("DRA driver stopped before kubelet registered it: deleted its ResourceSlices, as kubelet does for a driver that goes", "driver", d.cfg.DriverName, "node", d.cfg.NodeName)
}

// Registered reports whether kubelet has registered the driver since it
// last started. A notification still in flight as Stop checks it changes
// nothing: kubelet's notify then fails, and kubelet unregisters the driver
// and wipes its slices itself. Not covered: kubelet restarting (it wipes
// the node's slices at its start, the driver publishes them again) and
// the driver stopping before the new kubelet registered it; the slices
// stay until kubelet's next start.
func (d *Driver) Registered() bool { return d.registered.Load() }

// watchRegistration wraps kubelet's calls to note a successful
// registration; kubeletplugin.Helper keeps the status unguarded.
func (d *Driver) watchRegistration(ctx context.Context, request any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	response, err := handler(ctx, request)
	if status, ok := request.(*registerapi.RegistrationStatus); ok && err == nil && status.PluginRegistered {
		d.registered.Store(true)
	}
	return response, err
}

// withdrawSlices deletes the driver's ResourceSlices of the node.
func (d *Driver) withdrawSlices(ctx context.Context) error {
	selector := fields.Set{
		resourceapi.ResourceSliceSelectorNodeName: d.cfg.NodeName,
		resourceapi.ResourceSliceSelectorDriver:   d.cfg.DriverName,
	}.String()
	list, err := d.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return fmt.Errorf("list ResourceSlices (%s): %w", selector, err)
	}
	var errs []error
	for _, slice := range list.Items {
		err := d.client.ResourceV1().ResourceSlices().Delete(ctx, slice.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &slice.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete ResourceSlice %s: %w", slice.Name, err))
		}
	}
	return errors.Join(errs...)
}

// PluginSocket is the path of the DRA gRPC socket kubelet calls.
func (d *Driver) PluginSocket() string {
	if d.cfg.PodUID != "" {
		return d.PluginSocketFor(d.cfg.PodUID)
	}
	return d.cfg.PluginDataDir + "/dra.sock"
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin: each claim
// prepared by the device manager, then its CDI spec written; a claim
// prepared ahead as its pod was bound is answered with what that gave.
func (d *Driver) PrepareResourceClaims(ctx context.Context, list []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	results := make(map[types.UID]kubeletplugin.PrepareResult, len(list))
	for _, claim := range list {
		if devices, ok := d.ahead.take(ctx, claim); ok {
			results[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
			continue
		}
		if ctx.Err() != nil {
			results[claim.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare claim %s/%s: %w", claim.Namespace, claim.Name, context.Cause(ctx))}
			continue
		}
		devices, err := d.prepare(ctx, claim)
		if err != nil {
			d.log.WarnS("preparing a claim failed", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "err", err)
		}
		results[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return results, nil
}

func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if err := claims.Unshared(claim); err != nil {
		return nil, err
	}
	pool := claims.PoolName(d.cfg.NodeName)
	requests, err := claims.Requests(claim, d.cfg.DriverName, pool)
	if err != nil {
		return nil, err
	}
	ref := dmapi.ClaimRef{UID: string(claim.UID), Namespace: claim.Namespace, Name: claim.Name}
	prepared, err := d.cfg.Claims.Prepare(ctx, ref, claims.Pod(claim), requests)
	if errors.Is(err, dmapi.ErrDeviceInUse) {
		// The scheduler gave the devices to this claim, so the claim
		// holding them here is one whose end the agent missed (its pod
		// went while the agent was down or handing over, and kubelet
		// unprepares only what it prepared): the claims' sync releases
		// what the API server no longer reserves, before the retry.
		d.log.InfoS("a device of the claim is held by another claim: checking the node's claims with the API server", "claim", claim.Namespace+"/"+claim.Name, "err", err)
		if syncErr := d.syncClaims(ctx); syncErr != nil {
			return nil, errors.Join(err, fmt.Errorf("check the node's claims with the API server: %w", syncErr))
		}
		prepared, err = d.cfg.Claims.Prepare(ctx, ref, claims.Pod(claim), requests)
	}
	if err != nil {
		return nil, err
	}
	spec := claims.CDISpec(string(claim.UID), prepared, d.cfg.ContainerDir)
	if err := d.writeSpec(spec, claims.CDISpecName(string(claim.UID))); err != nil {
		return nil, fmt.Errorf("write CDI spec of claim %s/%s to %s (the allocation stays; kubelet retries): %w", claim.Namespace, claim.Name, d.cfg.CDIDir, err)
	}
	var devices []kubeletplugin.Device
	for _, request := range requests {
		for _, id := range request.DeviceIDs {
			devices = append(devices, kubeletplugin.Device{
				Requests: []string{request.Name}, PoolName: pool, DeviceName: id,
				CDIDeviceIDs: []string{claims.CDIDeviceID(string(claim.UID), request.Name)},
			})
		}
	}
	return devices, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin: each claim
// released by the device manager, then its CDI spec removed.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, list []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	results := make(map[types.UID]error, len(list))
	for _, claim := range list {
		err := d.unprepare(ctx, claim)
		if err != nil {
			d.log.WarnS("unpreparing a claim failed", "claim", claim.NamespacedName.String(), "claimUID", claim.UID, "err", err)
		}
		results[claim.UID] = err
	}
	return results, nil
}

func (d *Driver) unprepare(ctx context.Context, claim kubeletplugin.NamespacedObject) error {
	d.ahead.forget(ctx, claim.UID)
	ref := dmapi.ClaimRef{UID: string(claim.UID), Namespace: claim.Namespace, Name: claim.Name}
	if err := d.cfg.Claims.Unprepare(ctx, ref); err != nil {
		return err
	}
	if err := d.specs.RemoveSpec(claims.CDISpecName(string(claim.UID))); err != nil {
		return fmt.Errorf("remove CDI spec of claim %s from %s: %w", claim.NamespacedName, d.cfg.CDIDir, err)
	}
	return nil
}

// HandleError implements kubeletplugin.DRAPlugin: publishing errors are
// logged; the resourceslice controller retries.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.log.ErrorS(err, "DRA driver publishing error (the resourceslice controller retries)", "driver", d.cfg.DriverName, "context", msg)
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin; the health service
// is off (a memif has no health of its own to report).
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
