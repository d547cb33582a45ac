package dradriver

import (
	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/logging"
)

// PluginName is the plugin's name; the config file is PluginName + ".conf"
// (flag -dradriver-config).
const PluginName = "dradriver"

// NewPlugin creates the DRA driver plugin with the given options.
func NewPlugin(opts ...Option) *Plugin {
	p := &Plugin{}
	p.PluginName = PluginName
	for _, o := range opts {
		o(p)
	}
	if p.Log == nil {
		p.Log = logging.ForPlugin(p.String())
	}
	if p.Cfg == nil {
		p.Cfg = config.ForPlugin(p.String())
	}
	return p
}

// Option customizes the plugin in NewPlugin.
type Option func(*Plugin)

// UseDeps sets the plugin's dependencies.
func UseDeps(cb func(*Deps)) Option {
	return func(p *Plugin) {
		cb(&p.Deps)
	}
}
