package k8s_test

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/vswitch"
)

// TestVPPManifestsGiveTheAgentVPPsSocket: in k8s/vpp (the chart with
// ci/vpp-values.yaml) the agent reaches the API socket vswitch.conf names
// through a host directory mounted at the same path, and puts the pods'
// memifs in a bridge domain.
func TestVPPManifestsGiveTheAgentVPPsSocket(t *testing.T) {
	m := loadRendered(t, "vpp/memif-agent.yaml")
	vswitchCfg := vswitch.DefaultConfig()
	if err := configfile.Decode([]byte(m.configMap.Data["vswitch.conf"]), &vswitchCfg); err != nil || vswitchCfg.VPPAPISocket == "" {
		t.Fatalf("vswitch.conf = %+v, %v; want VPP's API socket", vswitchCfg, err)
	}
	var wiringCfg wiring.Config
	if err := configfile.Decode([]byte(m.configMap.Data["memifwiring.conf"]), &wiringCfg); err != nil {
		t.Fatalf("memifwiring.conf: %v", err)
	}
	networksCfg, err := netconf.Decode([]byte(m.configMap.Data["networks.conf"]))
	if err == nil {
		networksCfg, err = networksCfg.WithLegacy(netconf.Legacy{BridgeDomain: wiringCfg.BridgeDomain, IPAddresses: wiringCfg.IPAddresses, L2XConnect: wiringCfg.L2XConnect, VRF: wiringCfg.VRF})
	}
	if network, ok := networksCfg.Network(networksCfg.DefaultNetwork); err != nil || !ok || network.Type != netconf.L2 {
		t.Fatalf("networks.conf = %+v, %v; want an l2 default network (a bridge domain)", networksCfg, err)
	}
	pod := m.daemonSet.Spec.Template.Spec
	hostPaths := map[string]*corev1.HostPathVolumeSource{}
	for _, volume := range pod.Volumes {
		hostPaths[volume.Name] = volume.HostPath
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "memif-agent" {
		t.Fatalf("the DaemonSet's containers %+v are not the agent's", pod.Containers)
	}
	socketDir := filepath.Dir(vswitchCfg.VPPAPISocket)
	for _, mount := range pod.Containers[0].VolumeMounts {
		if mount.MountPath != socketDir {
			continue
		}
		hostPath := hostPaths[mount.Name]
		if hostPath == nil || hostPath.Path != socketDir || hostPath.Type == nil || *hostPath.Type != corev1.HostPathDirectory {
			t.Errorf("%s in the agent is %+v, want the host's directory %s", socketDir, hostPath, socketDir)
		}
		return
	}
	t.Errorf("nothing is mounted at %s, the directory of vpp-api-socket %s", socketDir, vswitchCfg.VPPAPISocket)
}
