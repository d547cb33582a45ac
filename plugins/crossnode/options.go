package crossnode

// PluginName is the plugin's name; its config file is crossnode.conf
// (flag -crossnode-config).
const PluginName = "crossnode"

// Option changes the plugin before it is used.
type Option func(*Plugin)

// NewPlugin returns the plugin with opts applied. EventLoop and Networks
// must be set with UseDeps (or assigned before Init).
func NewPlugin(opts ...Option) *Plugin {
	p := &Plugin{}
	p.PluginName = PluginName
	for _, opt := range opts {
		opt(p)
	}
	p.Setup()
	return p
}

// UseDeps sets the plugin's dependencies.
func UseDeps(setDeps func(*Deps)) Option {
	return func(p *Plugin) { setDeps(&p.Deps) }
}
