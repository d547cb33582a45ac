package memifwiring

import (
	"fmt"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// DeviceManager tells which memifs each pod holds.
	DeviceManager dmapi.DeviceManagerAPI
}

// Plugin is the memif wiring event handler in the agent.
type Plugin struct {
	Deps
	handler *wiring.Handler
}

var _ controllerapi.EventHandler = (*Plugin)(nil)

// Init reads memifwiring.conf. The controller calls the handler only after
// every plugin's Init.
func (p *Plugin) Init() error {
	if p.DeviceManager == nil {
		return fmt.Errorf("memifwiring plugin: DeviceManager dependency is not set")
	}
	var cfg wiring.Config
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("memifwiring plugin: %w", err)
	}
	p.handler = wiring.NewHandler(p.DeviceManager, cfg)
	return nil
}

// Close implements infra.Plugin; the interfaces stay on the vswitch so that
// pods keep their data path while the agent restarts.
func (p *Plugin) Close() error { return nil }

// HandlesEvent implements controllerapi.EventHandler.
func (p *Plugin) HandlesEvent(event controllerapi.Event) bool { return p.handler.HandlesEvent(event) }

// Resync implements controllerapi.EventHandler.
func (p *Plugin) Resync(event controllerapi.Event, resyncCount int, txn controllerapi.EventOperations) error {
	return p.handler.Resync(event, resyncCount, txn)
}

// Update implements controllerapi.EventHandler.
func (p *Plugin) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	return p.handler.Update(event, txn)
}

// Revert implements controllerapi.EventHandler.
func (p *Plugin) Revert(event controllerapi.Event) error { return p.handler.Revert(event) }
