package wiring_test

import (
	"fmt"
	"strings"
	"testing"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// vppTagLength is what the VPP interface tag holds after the agent's
// prefix: 64 bytes with the terminating NUL.
const vppTagLength = 63 - len(owner.Prefix)

func TestRenderedInterfaceNames(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct {
		name      string
		pod       podapi.PodID
		container string
		devices   int
		// want are the names' prefixes, one per device.
		want []string
	}{
		{"short", podapi.PodID{Namespace: "default", Name: "web"}, "app", 2,
			[]string{"memif_default_web_app_0", "memif_default_web_app_1"}},
		{"dashes stay apart from separators", podapi.PodID{Namespace: "a-b", Name: "c"}, "d", 1, []string{"memif_a-b_c_d_0"}},
		{"long names are cut and hashed", podapi.PodID{Namespace: long, Name: long}, "app", 2,
			[]string{"memif_" + strings.Repeat("a", 36) + "_", "memif_" + strings.Repeat("a", 36) + "_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memif := dmapi.MemifInfo{AllocationID: "alloc-1", Pod: tc.pod, ContainerName: tc.container,
				HostSocket: "/run/memif/alloc-1/memif.sock", Secret: "secret-1"}
			for i := range tc.devices {
				memif.DeviceIDs = append(memif.DeviceIDs, fmt.Sprintf("memif-%03d", i))
			}
			values := wiring.Render(tc.pod, []dmapi.MemifInfo{memif}, nil, wiring.Config{}).Values
			names := map[uint32]string{}
			for key, value := range values {
				iface := value.(*vpp_interfaces.Interface)
				if key != vpp_interfaces.InterfaceKey(iface.Name) {
					t.Errorf("interface %s is under key %s", iface.Name, key)
				}
				names[iface.GetMemif().GetId()] = iface.Name
			}
			if len(names) != len(tc.want) {
				t.Fatalf("rendered %v, want %d interfaces with distinct memif IDs", values, len(tc.want))
			}
			seen := map[string]bool{}
			for id, want := range tc.want {
				got := names[uint32(id)]
				if len(got) > vppTagLength {
					t.Errorf("name %q has %d characters, more than a VPP tag holds (%d)", got, len(got), vppTagLength)
				}
				if !strings.HasPrefix(got, want) {
					t.Errorf("name of memif %d = %q, want %q", id, got, want)
				}
				if seen[got] {
					t.Errorf("two memifs share the name %q", got)
				}
				seen[got] = true
			}
		})
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
		{"unknown rx mode", wiring.Config{RxMode: "busy"}, `config key "rx-mode": must be polling, interrupt, adaptive or empty, got "busy"`},
		{"key without container", wiring.Config{IPAddresses: map[string][]string{"default/web": {"10.1.1.1/24"}}},
			`config key "ip-addresses": must be keyed by namespace/pod/container, got "default/web"`},
		{"address without prefix", wiring.Config{IPAddresses: map[string][]string{"default/web/app": {"10.1.1.1"}}},
			`config key "ip-addresses": entry "10.1.1.1" of default/web/app must be an address with prefix length`},
		{"cross-connect pairs", wiring.Config{L2XConnect: [][]string{{"default/a/app", "default/b/app/0"}, {"default/a/app/1", "other/c/x/12"}}}, ""},
		{"cross-connect of three", wiring.Config{L2XConnect: [][]string{{"default/a/app", "default/b/app", "default/c/app"}}},
			`config key "l2-xconnect": entry 1 must be a pair of two memifs, got 3`},
		{"cross-connect of a pod", wiring.Config{L2XConnect: [][]string{{"default/a", "default/b/app"}}},
			`config key "l2-xconnect": entry 1: "default/a" must name a memif as namespace/pod/container or namespace/pod/container/N`},
		{"cross-connect with a bad memif ID", wiring.Config{L2XConnect: [][]string{{"default/a/app/-1", "default/b/app/x"}}},
			`entry 1: "default/b/app/x" must name a memif`},
		{"cross-connect of a memif to itself", wiring.Config{L2XConnect: [][]string{{"default/a/app", "default/a/app/0"}}},
			`config key "l2-xconnect": entry 1 pairs default/a/app with itself`},
		{"memif in two pairs", wiring.Config{L2XConnect: [][]string{{"default/a/app", "default/b/app"}, {"default/c/app", "default/a/app/0"}}},
			`config key "l2-xconnect": default/a/app/0 is in entries 1 and 2; a memif is cross-connected to one other at most`},
		{"cross-connect with a bridge domain", wiring.Config{BridgeDomain: "pods", L2XConnect: [][]string{{"default/a/app", "default/b/app"}}},
			`config key "l2-xconnect": excludes bridge-domain`},
		{"cross-connect with addresses", wiring.Config{IPAddresses: map[string][]string{"default/a/app": {"10.1.1.1/24"}},
			L2XConnect: [][]string{{"default/a/app", "default/b/app"}}}, `config key "l2-xconnect": excludes ip-addresses`},
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
	memifs := []dmapi.MemifInfo{
		{AllocationID: "alloc-1", DeviceIDs: []string{"d1", "d2"}, Pod: pod, ContainerName: "app",
			HostSocket: "/run/memif/alloc-1/memif.sock", Secret: "secret-1"},
		{AllocationID: "alloc-2", DeviceIDs: []string{"d3"}, Pod: pod,
			HostSocket: "/run/memif/alloc-2/memif.sock", Secret: "secret-2"},
	}
	config := wiring.Config{MTU: 9000, RxMode: "interrupt",
		IPAddresses: map[string][]string{"default/web/app": {"10.1.1.1/24"}}}
	values := wiring.Render(pod, memifs, nil, config).Values

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
