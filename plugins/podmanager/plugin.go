package podmanager

import (
	"context"
	"errors"
	"fmt"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
)

// Plugin is the pod manager in the agent. It implements
// podapi.LivePodsSource and podapi.PodResolver.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log     logs.Logger
	kubelet *podresources.Client
	tracker *podtracker.Tracker
	// closeRuntime closes the runtime's connection; nil when none is kept.
	closeRuntime func() error
}

// Deps are the plugin's dependencies; EventLoop is required.
type Deps struct {
	infra.PluginDeps
	EventLoop controllerapi.EventLoop
}

var (
	_ podapi.LivePodsSource = (*Plugin)(nil)
	_ podapi.PodResolver    = (*Plugin)(nil)
)

// Init reads the config and creates the clients and the tracker; nothing is
// dialled yet. An invalid config stops the agent with the key named.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.EventLoop == nil {
		return errors.New("podmanager plugin: no EventLoop dependency given")
	}
	cfg := DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("podmanager plugin: %w", err)
	}
	choice, err := chooseRuntime(cfg, p.log)
	if err != nil {
		return fmt.Errorf("podmanager plugin: %w", err)
	}
	p.closeRuntime = choice.close
	if cfg.PodResourcesSocket != "" {
		p.kubelet, err = podresources.New(cfg.PodResourcesSocket, cfg.PodResourcesTimeout.Duration())
		if err != nil {
			return fmt.Errorf("podmanager plugin: %w", err)
		}
	} else {
		p.log.WarnS("pod-resources disabled: the runtime alone tells which pods live")
	}
	if choice.runtime == nil && p.kubelet == nil {
		return fmt.Errorf("podmanager plugin: no pod source (%s, and pod-resources-socket is empty): set runtime or pod-resources-socket", choice.reason)
	}
	p.tracker, err = podtracker.New(podtracker.Config{ReconcilePeriod: cfg.ReconcilePeriod.Duration()},
		podtracker.Deps{Runtime: choice.runtime, Kubelet: p.kubelet, EventLoop: p.EventLoop, Log: p.log})
	if err != nil {
		return fmt.Errorf("podmanager plugin: %w", err)
	}
	runtime := "none: kubelet's pod-resources alone tells which pods live"
	if choice.runtime != nil {
		runtime = choice.runtime.String()
	}
	p.log.InfoS("pod manager watching the pods", "runtime", runtime, "choice", choice.reason,
		"podResourcesSocket", cfg.PodResourcesSocket, "reconcilePeriod", cfg.ReconcilePeriod.Duration())
	return nil
}

// AfterInit starts watching the runtime and reconciling.
func (p *Plugin) AfterInit() error {
	p.tracker.Start()
	return nil
}

// Close stops the tracker's goroutines and closes the kubelet connection.
func (p *Plugin) Close() error {
	if p.tracker != nil {
		p.tracker.Close()
	}
	if p.closeRuntime != nil {
		if err := p.closeRuntime(); err != nil {
			return err
		}
	}
	if p.kubelet != nil {
		return p.kubelet.Close()
	}
	return nil
}

// RequestLivePods implements podapi.LivePodsSource; before Init it does
// nothing: the tracker's first comparison pushes LivePods anyway.
func (p *Plugin) RequestLivePods() {
	if p.tracker != nil {
		p.tracker.RequestLivePods()
	}
}

// PodSourcesAnswer implements podapi.LivePodsSource.
func (p *Plugin) PodSourcesAnswer() error {
	if p.tracker == nil {
		return errors.New("the podmanager plugin is not initialized yet")
	}
	return p.tracker.PodSourcesAnswer()
}

// ResolvePod implements podapi.PodResolver.
func (p *Plugin) ResolvePod(ctx context.Context, pod podapi.PodID) (podapi.PodState, bool, error) {
	if p.tracker == nil {
		return podapi.PodState{}, false, errors.New("resolve a pod before the podmanager plugin's Init")
	}
	return p.tracker.ResolvePod(ctx, pod)
}
