package health

import (
	"time"

	"github.com/ligato/cn-infra/infra"
)

// NewPlugin returns the status check with no plugin registered.
func NewPlugin(opts ...Option) *Plugin {
	p := &Plugin{startTime: time.Now(), plugins: map[infra.PluginName]*pluginState{}}
	for _, o := range opts {
		o(p)
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
