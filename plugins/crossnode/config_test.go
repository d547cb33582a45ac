package crossnode

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// TestConfig: the documented example is off, and each key is checked.
func TestConfig(t *testing.T) {
	example, err := os.ReadFile(PluginName + ".conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content string
		enabled       bool
		wantKey       string // "" for a valid file
	}{
		{"the example", string(example), false, ""},
		{"empty", "", false, ""},
		{"on", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.1/24\n", true, ""},
		{"on, IPv6, every key", "underlay-interface: vpp-ul\nunderlay-address: 'fd00:230::1/64'\nnode-name: node-a\nnamespace: memif\nkubeconfig: /etc/kubeconfig\n", true, ""},
		{"an interface alone is off", "underlay-interface: vpp-ul\n", false, ""},
		{"no interface", "underlay-address: 192.168.230.1/24\n", true, "underlay-interface"},
		{"interface too long", "underlay-interface: a-very-long-name0\nunderlay-address: 192.168.230.1/24\n", true, "underlay-interface"},
		{"address without length", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.1\n", true, "underlay-address"},
		{"the underlay's network address", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.0/24\n", true, "underlay-address"},
		{"bad node name", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.1/24\nnode-name: Node_A\n", true, "node-name"},
		{"bad namespace", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.1/24\nnamespace: a.b\n", true, "namespace"},
		{"relative kubeconfig", "underlay-interface: vpp-ul\nunderlay-address: 192.168.230.1/24\nkubeconfig: kubeconfig\n", true, "kubeconfig"},
		{"per node", "nodes: {a: {underlay-interface: vpp-ul, underlay-address: 192.168.230.1/24}, b: {underlay-interface: vpp-ul2, underlay-address: 192.168.230.2/24}}\n", true, ""},
		{"a bad node's address", "nodes: {a: {underlay-interface: vpp-ul, underlay-address: 192.168.230.1}}\n", true, "nodes.a.underlay-address"},
		{"a node without interface", "nodes: {a: {underlay-address: 192.168.230.1/24}}\n", true, "nodes.a.underlay-interface"},
		{"an unknown node key", "nodes: {a: {address: 192.168.230.1/24}}\n", true, "nodes"},
		{"unknown key", "underlay: x\n", false, "underlay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			err := configfile.Decode([]byte(tc.content), &cfg)
			if tc.wantKey == "" {
				if err != nil || cfg.Enabled() != tc.enabled {
					t.Fatalf("Decode = %v, enabled %t; want valid, enabled %t", err, cfg.Enabled(), tc.enabled)
				}
				return
			}
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) || keyErr.Key != tc.wantKey {
				t.Fatalf("Decode = %v, want a *configfile.KeyError for %q", err, tc.wantKey)
			}
			if !strings.Contains(err.Error(), tc.wantKey) {
				t.Errorf("the error does not name the key: %v", err)
			}
		})
	}
}

// TestUnderlayFor: a node named in nodes gets its entry, the others the
// keys every node gets.
func TestUnderlayFor(t *testing.T) {
	cfg := Config{UnderlayInterface: "vpp-ul", UnderlayAddress: "192.168.230.9/24",
		Nodes: map[string]Underlay{"a": {Interface: "vpp-ul1", Address: "192.168.230.1/24"}}}
	for _, tc := range []struct {
		cfg  Config
		node string
		want Underlay
	}{
		{cfg, "a", Underlay{Interface: "vpp-ul1", Address: "192.168.230.1/24"}},
		{cfg, "b", Underlay{Interface: "vpp-ul", Address: "192.168.230.9/24"}},
		{Config{Nodes: cfg.Nodes}, "b", Underlay{}},
	} {
		if got := tc.cfg.For(tc.node); got != tc.want {
			t.Errorf("For(%s) = %+v, want %+v", tc.node, got, tc.want)
		}
	}
}
