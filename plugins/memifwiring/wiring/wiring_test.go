package wiring_test

import (
	"strings"
	"testing"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	devapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func TestInterfaceName(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct {
		name  string
		pod   podapi.PodID
		owner string
		id    int
		want  string
	}{
		{"short", podapi.PodID{Namespace: "default", Name: "web"}, "app", 1, "memif_default_web_app_1"},
		{"dashes stay apart from separators", podapi.PodID{Namespace: "a-b", Name: "c"}, "d", 0, "memif_a-b_c_d_0"},
		{"long names are cut and hashed", podapi.PodID{Namespace: long, Name: long}, "app", 0,
			"memif_" + strings.Repeat("a", 48) + "_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wiring.InterfaceName(tc.pod, tc.owner, tc.id)
			if len(got) > wiring.MaxInterfaceNameLength {
				t.Errorf("name %q has %d characters, more than %d", got, len(got), wiring.MaxInterfaceNameLength)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("name = %q, want %q", got, tc.want)
			}
		})
	}
	first := wiring.InterfaceName(podapi.PodID{Namespace: long, Name: long}, "app", 0)
	second := wiring.InterfaceName(podapi.PodID{Namespace: long, Name: long}, "app", 1)
	if first == second {
		t.Errorf("two memifs of a long-named pod share the name %q", first)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  wiring.Config
		wantErr string
	}{
		{"empty", wiring.Config{}, ""},
		{"full", wiring.Config{MTU: 9000, VRF: 2, RxMode: "adaptive",
			IPAddresses: map[string][]string{"default/web/app": {"10.1.1.1/24", "fd00::1/64"}}}, ""},
		{"unknown rx mode", wiring.Config{RxMode: "busy"}, `invalid rx-mode "busy"`},
		{"key without container", wiring.Config{IPAddresses: map[string][]string{"default/web": {"10.1.1.1/24"}}},
			`invalid ip-addresses key "default/web"`},
		{"address without prefix", wiring.Config{IPAddresses: map[string][]string{"default/web/app": {"10.1.1.1"}}},
			`invalid ip-addresses entry "10.1.1.1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.config.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRender(t *testing.T) {
	pod := podapi.PodID{Namespace: "default", Name: "web"}
	memifs := []devapi.MemifInfo{
		{AllocationID: "alloc-1", DeviceIDs: []string{"d1", "d2"}, Pod: pod, ContainerName: "app",
			HostSocket: "/run/memif/alloc-1/memif.sock", Secret: "secret-1"},
		{AllocationID: "alloc-2", DeviceIDs: []string{"d3"}, Pod: pod,
			HostSocket: "/run/memif/alloc-2/memif.sock", Secret: "secret-2"},
	}
	config := wiring.Config{MTU: 9000, RxMode: "interrupt",
		IPAddresses: map[string][]string{"default/web/app": {"10.1.1.1/24"}}}
	values := wiring.Render(pod, memifs, config)

	want := map[string]struct {
		socket, secret string
		id             uint32
		addresses      int
	}{
		"memif_default_web_app_0":     {"/run/memif/alloc-1/memif.sock", "secret-1", 0, 1},
		"memif_default_web_app_1":     {"/run/memif/alloc-1/memif.sock", "secret-1", 1, 0},
		"memif_default_web_alloc-2_0": {"/run/memif/alloc-2/memif.sock", "secret-2", 0, 0},
	}
	if len(values) != len(want) {
		t.Fatalf("rendered %d interfaces, want %d: %v", len(values), len(want), values)
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			iface, ok := values[vpp_interfaces.InterfaceKey(name)].(*vpp_interfaces.Interface)
			if !ok {
				t.Fatalf("no interface %s in %v", name, values)
			}
			link := iface.GetMemif()
			if iface.Type != vpp_interfaces.Interface_MEMIF || !iface.Enabled || !link.GetMaster() ||
				link.GetSocketFilename() != w.socket || link.GetSecret() != w.secret || link.GetId() != w.id {
				t.Errorf("interface = %v, want enabled memif master id %d on %s", iface, w.id, w.socket)
			}
			if iface.Mtu != 9000 || len(iface.RxModes) != 1 || iface.RxModes[0].Mode != vpp_interfaces.Interface_RxMode_INTERRUPT {
				t.Errorf("interface = %v, want MTU 9000 and interrupt rx mode", iface)
			}
			if len(iface.IpAddresses) != w.addresses {
				t.Errorf("addresses = %v, want %d", iface.IpAddresses, w.addresses)
			}
		})
	}
}
