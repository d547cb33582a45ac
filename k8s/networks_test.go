package k8s_test

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// TestConfigMapNetworks: the ConfigMap ships networks.conf as documented
// in plugins/networks, and with the shipped memifwiring.conf it starts the
// agent with an l2 default network, so that pods naming no network are
// switched as before networks existed.
func TestConfigMapNetworks(t *testing.T) {
	m := loadManifests(t)
	example, err := os.ReadFile("../plugins/networks/networks.conf")
	if err != nil {
		t.Fatal(err)
	}
	shipped := m.configMap.Data["networks.conf"]
	if shipped != string(example) {
		t.Errorf("the ConfigMap's networks.conf differs from plugins/networks/networks.conf:\n%s", shipped)
	}
	var wiringCfg wiring.Config
	if err := configfile.Decode([]byte(m.configMap.Data["memifwiring.conf"]), &wiringCfg); err != nil {
		t.Fatal(err)
	}
	cfg, err := netconf.Decode([]byte(shipped))
	if err == nil {
		cfg, err = cfg.WithLegacy(netconf.Legacy{BridgeDomain: wiringCfg.BridgeDomain, IPAddresses: wiringCfg.IPAddresses, L2XConnect: wiringCfg.L2XConnect, VRF: wiringCfg.VRF})
	}
	if err != nil {
		t.Fatalf("networks.conf with memifwiring.conf: %v", err)
	}
	if network, ok := cfg.Network(cfg.DefaultNetwork); !ok || network.Type != netconf.L2 {
		t.Errorf("default network %q is %+v, want an l2 network", cfg.DefaultNetwork, network)
	}
}
