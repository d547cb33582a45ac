package nodeapi

// Option changes the plugin before it is used.
type Option func(*Plugin)

// PluginName is the plugin's name; its config file is nodeapi.conf
// (flag -nodeapi-config).
const PluginName = "nodeapi"

// NewPlugin returns the plugin named "nodeapi" with opts applied. The
// DeviceManager dependency must be set with UseDeps.
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
