package networks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	networksapi "github.com/contivpp/memif-agent/plugins/networks/api"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/reload"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// EventLoop gets a NetworksChanged event per new valid version.
	EventLoop controllerapi.EventLoop
	// Legacy reads memifwiring.conf's keys about networks; nil: none.
	Legacy func() (netconf.Legacy, error)
}

// Plugin owns networks.conf.
type Plugin struct {
	Deps
	// log is Log, structured; set in Init.
	log     logs.Logger
	mu      sync.Mutex
	current netconf.Config
	watcher *reload.Watcher[netconf.Config]
}

var _ networksapi.Source = (*Plugin)(nil)

// Init reads networks.conf and starts watching it.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.EventLoop == nil {
		return fmt.Errorf("networks plugin: EventLoop dependency is not set")
	}
	path := p.configPath()
	if path == "" {
		cfg, err := p.parse(nil)
		if err != nil {
			return fmt.Errorf("networks plugin: %w", err)
		}
		p.current = cfg
		return nil
	}
	// Stat before the watch: a file written between the two is applied
	// by the watcher, and only this log line is then out of date.
	_, statErr := os.Stat(path)
	watcher, cfg, err := reload.Start(reload.Options[netconf.Config]{
		Path:         path,
		Parse:        p.parse,
		Apply:        p.apply,
		Refuse:       p.refuse,
		MayBeMissing: true,
	})
	if err != nil {
		return fmt.Errorf("networks plugin: %w", err)
	}
	p.current, p.watcher = cfg, watcher
	if errors.Is(statErr, fs.ErrNotExist) {
		p.log.InfoS("no networks.conf: no networks declared; memifs are wired as memifwiring.conf says until the file is written", "path", path)
		return nil
	}
	p.log.InfoS("networks declared", "networks", describe(cfg))
	return nil
}

// configPath is where networks.conf is, or would be while it is missing
// (configfile.Locator), so that a file written later is applied.
func (p *Plugin) configPath() string {
	if p.Cfg == nil {
		return ""
	}
	if locator, ok := p.Cfg.(configfile.Locator); ok {
		return locator.ConfigPath()
	}
	return p.Cfg.GetConfigName()
}

// refuse logs why a new version is not applied. A file removed keeps the
// networks applied last, as a bad version does: a removal is more often a
// step of replacing the file than a wish for no networks, and a file
// without networks declares none.
func (p *Plugin) refuse(err error) {
	if errors.Is(err, fs.ErrNotExist) {
		p.log.WarnS("networks.conf removed: the networks applied last stay in force until it is written again", "err", err)
		return
	}
	p.log.ErrorS(err, "networks.conf not applied: the last applied version stays in force")
}

// parse decodes networks.conf and applies memifwiring.conf's legacy keys.
func (p *Plugin) parse(content []byte) (netconf.Config, error) {
	cfg := netconf.Config{}
	if content != nil {
		var err error
		if cfg, err = netconf.Decode(content); err != nil {
			return netconf.Config{}, err
		}
	}
	if p.Legacy == nil {
		return cfg, nil
	}
	legacy, err := p.Legacy()
	if err != nil {
		return netconf.Config{}, err
	}
	return cfg.WithLegacy(legacy)
}

// apply hands a new version to the event loop.
func (p *Plugin) apply(cfg netconf.Config) {
	p.mu.Lock()
	p.current = cfg
	p.mu.Unlock()
	p.log.InfoS("networks.conf changed", "networks", describe(cfg))
	if err := p.EventLoop.PushEvent(&networksapi.NetworksChanged{Config: cfg}); err != nil {
		p.log.ErrorS(err, "the new networks wait for the next resync")
	}
}

// Networks implements networksapi.Source.
func (p *Plugin) Networks() netconf.Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Close stops watching networks.conf.
func (p *Plugin) Close() error {
	if p.watcher != nil {
		p.watcher.Stop()
	}
	return nil
}

func describe(cfg netconf.Config) string {
	return (&networksapi.NetworksChanged{Config: cfg}).String()
}
