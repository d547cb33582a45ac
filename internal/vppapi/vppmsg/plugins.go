package vppmsg

import "strings"

// OptionalPlugins are the VPP plugins the agent can do without: their
// messages (named after the plugin) serve networks that span nodes (the
// underlay link, VXLAN tunnels). A VPP that does not load one lacks its
// messages and is still spoken to; only a request that needs it fails.
var OptionalPlugins = []string{"af_packet", "vxlan"}

// PluginOf returns the optional plugin that defines message name, or "".
func PluginOf(name string) string {
	for _, plugin := range OptionalPlugins {
		if strings.HasPrefix(name, plugin+"_") {
			return plugin
		}
	}
	return ""
}
