package kubelettest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	plugin "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
)

// StubPlugin is the kubelet's reference device plugin
// (plugin/v1beta1.NewDevicePluginStub): healthy devices, an empty response
// per container. It is the cheapest plugin possible, the baseline for
// benchmarks. It registers again as soon as the kubelet's registration
// socket reappears; the stub's own Watch would wait 10 s first and has no
// way to stop.
type StubPlugin struct {
	stub         *plugin.Stub
	resourceName string
	logger       klog.Logger
	watcher      *fsnotify.Watcher
	cancel       context.CancelFunc
	watching     sync.WaitGroup
}

// StartStubPlugin serves deviceCount healthy devices of resourceName in
// PluginDir and registers them with the kubelet, which must be running.
// Stop it with Stop.
func StartStubPlugin(ctx context.Context, resourceName string, deviceCount int) (*StubPlugin, error) {
	logger := klog.FromContext(ctx)
	devices := make([]*pluginapi.Device, deviceCount)
	for i := range devices {
		devices[i] = &pluginapi.Device{ID: fmt.Sprintf("stub-%d", i), Health: pluginapi.Healthy}
	}
	socket := filepath.Join(PluginDir, "stub-"+strings.NewReplacer("/", "-", ".", "-").Replace(resourceName)+".sock")
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("kubelettest: watch for kubelet restarts: %w", err)
	}
	if err := watcher.Add(PluginDir); err != nil {
		_ = watcher.Close()
		return nil, fmt.Errorf("kubelettest: watch %s for kubelet restarts (is the kubelet started?): %w", PluginDir, err)
	}
	stub := plugin.NewDevicePluginStub(logger, devices, socket, resourceName, false, false)
	stub.SetAllocFunc(allocateNothing)
	p := &StubPlugin{
		stub:         stub,
		resourceName: resourceName,
		logger:       logger,
		watcher:      watcher,
	}
	if err := p.serveAndRegister(ctx, p.stub.Start); err != nil {
		_ = watcher.Close()
		return nil, err
	}
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.watching.Add(1)
	go p.registerOnKubeletRestart(watchCtx)
	return p, nil
}

// allocateNothing is the cheapest answer the kubelet accepts: one empty
// response per container request (the stub's default answers with none,
// which the kubelet rejects).
func allocateNothing(req *pluginapi.AllocateRequest, _ map[string]*pluginapi.Device) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{ContainerResponses: make([]*pluginapi.ContainerAllocateResponse, len(req.ContainerRequests))}
	for i := range resp.ContainerResponses {
		resp.ContainerResponses[i] = &pluginapi.ContainerAllocateResponse{}
	}
	return resp, nil
}

func (p *StubPlugin) serveAndRegister(ctx context.Context, serve func(context.Context) error) error {
	if err := serve(ctx); err != nil {
		return fmt.Errorf("kubelettest: serve the stub plugin for %s: %w", p.resourceName, err)
	}
	if err := p.stub.Register(ctx, RegistrationSocket, p.resourceName, ""); err != nil {
		return fmt.Errorf("kubelettest: register the stub plugin for %s at %s: %w", p.resourceName, RegistrationSocket, err)
	}
	return nil
}

func (p *StubPlugin) registerOnKubeletRestart(ctx context.Context) {
	defer p.watching.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case event, ok := <-p.watcher.Events:
			if !ok {
				return
			}
			if event.Name == RegistrationSocket && event.Has(fsnotify.Create) {
				if err := p.serveAndRegister(ctx, p.stub.Restart); err != nil {
					p.logger.Error(err, "Stub plugin did not come back after a kubelet restart")
				}
			}
		case err, ok := <-p.watcher.Errors:
			if !ok {
				return
			}
			p.logger.Error(err, "Stub plugin lost track of kubelet restarts")
		}
	}
}

// Stop stops watching for kubelet restarts and stops the stub.
func (p *StubPlugin) Stop() error {
	p.cancel()
	p.watching.Wait()
	if err := p.watcher.Close(); err != nil {
		return fmt.Errorf("kubelettest: stop watching for kubelet restarts: %w", err)
	}
	if err := p.stub.Stop(p.logger); err != nil {
		return fmt.Errorf("kubelettest: stop the stub plugin for %s: %w", p.resourceName, err)
	}
	return nil
}
