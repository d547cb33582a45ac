package manager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
)

// serveKubelet serves the device plugin over the device manager's
// Allocator on loop, unless device-plugin is off.
func (m *Manager) serveKubelet(loop controllerapi.EventLoop) error {
	if !m.cfg.DevicePlugin {
		m.log.InfoS("device plugin off (device-plugin: false): not registering with kubelet", "resource", m.cfg.ResourceName)
		return nil
	}
	cfg := deviceplugin.Config{
		ResourceName:  m.cfg.ResourceName,
		PluginDir:     m.cfg.PluginDir,
		PluginSocket:  m.cfg.PluginSocket,
		KubeletSocket: m.cfg.KubeletSocket,
		Devices:       m.state.Devices(),
		Interceptor:   m.opts.DevicePluginInterceptor,
	}
	if source := m.opts.DeviceHealth; source != nil {
		cfg.Health = func() (bool, <-chan struct{}) {
			health, changed := source.DeviceHealth()
			return health.Healthy, changed
		}
	}
	observer := serverObserver{metrics: m.metrics, readiness: m.readiness, kubeletSocket: filepath.Join(m.cfg.PluginDir, m.cfg.KubeletSocket)}
	server, err := deviceplugin.New(cfg, m.Allocator(loop), m.log, observer)
	if err != nil {
		return err
	}
	if err := server.Start(); err != nil {
		return err
	}
	m.server = server
	return nil
}

// Allocator returns the device manager as the device plugin's
// deviceplugin.Allocator: each container request of kubelet's Allocate
// becomes a blocking AllocateDevice event on loop, and its answer is what
// the handlers left in it.
func (m *Manager) Allocator(loop controllerapi.EventLoop) deviceplugin.Allocator {
	return kubeletAllocator{m: m, loop: loop}
}

// kubeletAllocator is the device manager with the event loop kubelet's
// allocations go through.
type kubeletAllocator struct {
	m    *Manager
	loop controllerapi.EventLoop
}

// Allocate implements deviceplugin.Allocator. When the allocation's
// devices are held, the event carries the pod tracker's last decision, for
// the takeover to say what became of the holder (prepareAllocate). An
// allocation made after kubelet stopped waiting is released once made
// (abandonWhenMade).
func (a kubeletAllocator) Allocate(ctx context.Context, deviceIDs []string) (deviceplugin.Answer, error) {
	a.m.remover.activity.begin()
	defer a.m.remover.activity.end()
	event := dmapi.NewAllocateDevice(a.m.cfg.ResourceName, deviceIDs)
	a.m.prepareAllocate(ctx, event)
	if err := a.loop.PushEvent(event); err != nil {
		return deviceplugin.Answer{}, kubeletError(fmt.Errorf("queue the allocation: %w", err))
	}
	if err := event.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			a.abandonWhenMade(event, fmt.Sprintf("kubelet stopped waiting for it (%v)", ctx.Err()))
			return deviceplugin.Answer{}, err
		}
		return deviceplugin.Answer{}, kubeletError(err)
	}
	if event.AllocationID == "" {
		return deviceplugin.Answer{}, fmt.Errorf("the event loop answered %s without an allocation: the device manager is not among its handlers", event)
	}
	return answerOf(event), nil
}

// abandonWhenMade waits, in a goroutine, for an event kubelet stopped
// waiting for, and releases its allocation if it made one. The loop tells
// every event it accepted its outcome, at the latest when it closes, so
// the goroutine ends.
func (a kubeletAllocator) abandonWhenMade(event *dmapi.AllocateDevice, reason string) {
	go func() {
		if event.Wait(context.Background()) == nil && event.AllocationID != "" {
			a.Abandon([]string{event.AllocationID}, reason)
		}
	}()
}

// Abandon implements deviceplugin.Allocator: one ReleaseAbandoned event
// for all of them.
func (a kubeletAllocator) Abandon(allocationIDs []string, reason string) {
	release := &ReleaseAbandoned{AllocationIDs: allocationIDs, Reason: reason}
	if err := a.loop.PushEvent(release); err != nil {
		a.m.log.WarnS("abandoned allocations released later, at collection", "event", release.String(), "err", err)
	}
}

// answerOf is what the handlers left in a processed event.
func answerOf(event *dmapi.AllocateDevice) deviceplugin.Answer {
	answer := deviceplugin.Answer{
		AllocationID: event.AllocationID, Envs: event.Envs, Annotations: event.Annotations,
		Mounts: make([]deviceplugin.Mount, len(event.Mounts)),
	}
	for i, mount := range event.Mounts {
		answer.Mounts[i] = deviceplugin.Mount(mount)
	}
	return answer
}

// kubeletError gives an allocation failure the gRPC code kubelet sees.
func kubeletError(err error) error {
	switch {
	case errors.Is(err, dmapi.ErrInvalidRequest):
		return deviceplugin.WithCode(codes.InvalidArgument, err)
	case errors.Is(err, dmapi.ErrDeviceInUse):
		return deviceplugin.WithCode(codes.FailedPrecondition, err)
	case errors.Is(err, controllerapi.ErrEventQueueFull), errors.Is(err, controllerapi.ErrClosedEventLoop):
		return deviceplugin.WithCode(codes.Unavailable, err)
	}
	return err
}

// serverObserver feeds the device plugin server's outcomes into the
// readiness and the metrics.
type serverObserver struct {
	metrics       *metrics
	readiness     *readiness
	kubeletSocket string
}

// Registered implements deviceplugin.Observer.
func (o serverObserver) Registered(again bool) {
	o.readiness.registeredAt(o.kubeletSocket)
	o.metrics.countRegistration(again)
}

// RegistrationFailed implements deviceplugin.Observer.
func (o serverObserver) RegistrationFailed(err error) {
	o.readiness.registrationFailed(o.kubeletSocket, err)
	o.metrics.countError(registrationErrorKind(err))
}

// Answered implements deviceplugin.Observer.
func (o serverObserver) Answered(latency time.Duration, err error) {
	o.metrics.observeAllocate(latency, err)
}
