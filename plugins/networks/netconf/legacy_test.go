package netconf

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
)

func TestWithLegacy(t *testing.T) {
	red := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24"}
	pods := Network{Name: "pods", Type: L2}
	for _, tc := range []struct {
		name    string
		cfg     Config
		legacy  Legacy
		want    Config
		wantKey string // memifwiring.conf key of the problem; "" for none
		wantMsg string
	}{
		{name: "nothing old", cfg: Config{Networks: []Network{red}}, want: Config{Networks: []Network{red}}},
		{name: "bridge domain becomes the default l2 network",
			legacy: Legacy{BridgeDomain: "pods"},
			want:   Config{Networks: []Network{pods}, DefaultNetwork: "pods"}},
		{name: "bridge domain beside declared networks",
			cfg: Config{Networks: []Network{red}}, legacy: Legacy{BridgeDomain: "pods"},
			want: Config{Networks: []Network{red, pods}, DefaultNetwork: "pods"}},
		{name: "bridge domain names a declared l2 network",
			cfg: Config{Networks: []Network{{Name: "pods", Type: L2, MTU: 9000}}}, legacy: Legacy{BridgeDomain: "pods"},
			want: Config{Networks: []Network{{Name: "pods", Type: L2, MTU: 9000}}, DefaultNetwork: "pods"}},
		{name: "addresses and cross-connects without a default network",
			cfg:    Config{Networks: []Network{red}},
			legacy: Legacy{IPAddresses: map[string][]string{"default/a/app": {"10.10.1.1/24"}}, L2XConnect: [][]string{{"default/a/app", "default/b/app"}}, VRF: 3},
			want:   Config{Networks: []Network{red}}},
		{name: "bridge domain and a default network",
			cfg: Config{Networks: []Network{red}, DefaultNetwork: "red"}, legacy: Legacy{BridgeDomain: "pods"},
			wantKey: "bridge-domain", wantMsg: `"pods" and default-network "red" in networks.conf both say`},
		{name: "bridge domain not a network name",
			legacy:  Legacy{BridgeDomain: "Pods_1"},
			wantKey: "bridge-domain", wantMsg: "write in networks.conf: networks: [{name: <a network name>, type: l2}] and default-network"},
		{name: "bridge domain names an l3 network",
			cfg: Config{Networks: []Network{{Name: "pods", Type: L3, Subnet: "10.0.0.0/24"}}}, legacy: Legacy{BridgeDomain: "pods"},
			wantKey: "bridge-domain", wantMsg: `declares "pods" as type l3`},
		{name: "addresses with a default network",
			cfg:     Config{Networks: []Network{pods}, DefaultNetwork: "pods"},
			legacy:  Legacy{IPAddresses: map[string][]string{"default/a/app": {"10.10.1.1/24"}, "default/b/app": {"10.10.1.2/24", "fd00:1::1/64"}}},
			wantKey: "ip-addresses", wantMsg: "{name: <name>, type: l3, subnet: 10.10.1.0/24}, {name: <name>, type: l3, subnet: fd00:1::/64}"},
		{name: "addresses with the bridge domain's default network",
			legacy:  Legacy{BridgeDomain: "pods", IPAddresses: map[string][]string{"default/a/app": {"10.10.1.1/24"}}},
			wantKey: "ip-addresses", wantMsg: `default-network "pods" in networks.conf puts every memif`},
		{name: "cross-connects with a default network",
			cfg:     Config{Networks: []Network{pods}, DefaultNetwork: "pods"},
			legacy:  Legacy{L2XConnect: [][]string{{"default/a/app", "default/b/app"}}},
			wantKey: "l2-xconnect", wantMsg: "put each pair in an l2 network of its own"},
		{name: "vrf with a default network",
			cfg:     Config{Networks: []Network{pods}, DefaultNetwork: "pods"},
			legacy:  Legacy{VRF: 3},
			wantKey: "vrf", wantMsg: "remove vrf"},
		{name: "vrf is an l3 network's table",
			cfg:     Config{Networks: []Network{{Name: "red", Type: L3, Subnet: "10.70.0.0/24", ID: 3}}},
			legacy:  Legacy{VRF: 3},
			wantKey: "vrf", wantMsg: `table 3 is l3 network "red"'s VRF table`},
		{name: "bridge domain's derived id clashes",
			cfg:     Config{Networks: []Network{{Name: "lab", Type: L2, ID: DeriveID("pods")}}},
			legacy:  Legacy{BridgeDomain: "pods"},
			wantKey: "networks", wantMsg: `bridge-domain "pods" as its default l2 network`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.cfg.Networks)
			got, err := tc.cfg.WithLegacy(tc.legacy)
			if !slices.Equal(tc.cfg.Networks, before) {
				t.Errorf("WithLegacy changed its receiver's networks to %+v", tc.cfg.Networks)
			}
			if tc.wantKey == "" {
				if err != nil || got.DefaultNetwork != tc.want.DefaultNetwork || !slices.Equal(got.Networks, tc.want.Networks) {
					t.Fatalf("WithLegacy = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) || keyErr.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("WithLegacy = %v, want a problem with %q containing %q", err, tc.wantKey, tc.wantMsg)
			}
		})
	}
}
