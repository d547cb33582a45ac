package agentwiring

import (
	"slices"

	"github.com/ligato/cn-infra/logging/logmanager"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"

	"github.com/contivpp/memif-agent/plugins/controller"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/crossnode"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/health"
	"github.com/contivpp/memif-agent/plugins/memifwiring"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	metricsplugin "github.com/contivpp/memif-agent/plugins/metrics"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/plugins/networks"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/nodeapi"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	"github.com/contivpp/memif-agent/plugins/vswitch"
)

// PluginConfig is one config file of the agent, <Name>.conf.
type PluginConfig struct {
	// Name is the plugin's name: its file is <Name>.conf, its flag
	// -<Name>-config.
	Name string
	// New returns a pointer to a fresh value of the type the file is
	// decoded into, holding the plugin's defaults (the framework's
	// logs.conf and kvscheduler.conf: the zero value, which their plugins
	// fill in themselves).
	New func() any
}

// PluginConfigs is every config file the agent reads, one per plugin that
// New configures.
var PluginConfigs = []PluginConfig{
	{"http", func() any { return rest.DefaultConfig() }},
	{"logs", func() any { return &logmanager.Config{} }},
	{"kvscheduler", func() any { return &kvscheduler.Config{} }},
	{health.PluginName, pointer(health.DefaultConfig)},
	{podmanager.PluginName, pointer(podmanager.DefaultConfig)},
	{devicemanager.PluginName, pointer(dmconfig.Default)},
	{networks.PluginName, func() any { return &netconf.Config{} }},
	{memifwiring.PluginName, func() any { return &wiring.Config{} }},
	{vswitch.PluginName, pointer(vswitch.DefaultConfig)},
	{controller.PluginName, pointer(eventloop.DefaultConfig)},
	{crossnode.PluginName, func() any { return &crossnode.Config{} }},
	{dradriver.PluginName, pointer(dradriver.DefaultConfig)},
	{nodeapi.PluginName, pointer(nodeapi.DefaultConfig)},
	{metricsplugin.PluginName, func() any { return &listener.Config{Port: listener.DefaultPort} }},
}

// LookupPluginConfig returns the config file of the plugin called name.
func LookupPluginConfig(name string) (PluginConfig, bool) {
	i := slices.IndexFunc(PluginConfigs, func(c PluginConfig) bool { return c.Name == name })
	if i < 0 {
		return PluginConfig{}, false
	}
	return PluginConfigs[i], true
}

func pointer[T any](defaults func() T) func() any {
	return func() any {
		value := defaults()
		return &value
	}
}
