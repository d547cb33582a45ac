package netconf

import (
	"errors"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
)

const issueExample = `networks:
  - {name: red,  type: l3, subnet: 10.70.0.0/24}
  - {name: lab,  type: l2}
  - {name: v6,   type: l3, subnet: "fd00:70::/64", mtu: 9000, rx-mode: interrupt}
default-network: lab
`

func TestDecodeExample(t *testing.T) {
	cfg, err := Decode([]byte(issueExample))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if cfg.DefaultNetwork != "lab" || len(cfg.Networks) != 3 {
		t.Fatalf("Decode = %+v, want three networks and default lab", cfg)
	}
	red, ok := cfg.Network("red")
	if !ok || red.Type != L3 || red.Prefix().String() != "10.70.0.0/24" || red.TableID() != DeriveID("red") {
		t.Errorf("red = %+v (prefix %v, table %d)", red, red.Prefix(), red.TableID())
	}
	v6, _ := cfg.Network("v6")
	if v6.MTU != 9000 || v6.RxMode != RxInterrupt || v6.MinMTU() != MinMTUIPv6 {
		t.Errorf("v6 = %+v, min MTU %d", v6, v6.MinMTU())
	}
	if _, ok := cfg.Network("blue"); ok {
		t.Error("Network(blue) found a network the file does not declare")
	}
}

// TestDerivedIDsAreStable pins the derivation (FNV-1a; the values come
// from an independent implementation): a changed hash would move
// every network's VRF table and bridge domain on an agent upgrade.
func TestDerivedIDsAreStable(t *testing.T) {
	for _, tc := range []struct {
		name string
		want uint32
	}{
		{"red", 16023837},
		{"lab", 6329175},
		{"v6", 4870665},
		{"a", 797201},
	} {
		if got := DeriveID(tc.name); got != tc.want {
			t.Errorf("DeriveID(%q) = %d, want %d", tc.name, got, tc.want)
		}
		if got := (Network{Name: tc.name}).TableID(); got != tc.want {
			t.Errorf("TableID of %q = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := (Network{Name: "red", ID: 7}).TableID(); got != 7 {
		t.Errorf("TableID with id 7 = %d", got)
	}
}

// TestVNIs: a network's VNI is its name's alone, apart from its VRF
// table or bridge domain ID (an l3 and an l2 network may share an ID, so
// an ID cannot be the VNI), and stable across versions (values computed
// from an independent implementation): a changed VNI would cut a network
// between nodes of two versions.
func TestVNIs(t *testing.T) {
	for _, tc := range []struct {
		network Network
		want    uint32
	}{
		{Network{Name: "red", Type: L3}, DeriveID("vni:red")},
		{Network{Name: "red", Type: L3, ID: 9}, DeriveID("vni:red")},
		{Network{Name: "lab", Type: L2, ID: 9}, DeriveID("vni:lab")},
		{Network{Name: "n6293", Type: L2}, 12371894},
	} {
		got := tc.network.VNI()
		if got != tc.want {
			t.Errorf("VNI of %+v = %d, want %d", tc.network, got, tc.want)
		}
		if got == tc.network.TableID() {
			t.Errorf("VNI of %+v is its ID %d", tc.network, got)
		}
	}
}

func TestNodePrefix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		network Network
		want    int
	}{
		{"IPv4 default", Network{Type: L3, Subnet: "10.70.0.0/24"}, DefaultNodePrefixLength},
		{"IPv6 default", Network{Type: L3, Subnet: "fd00:70::/64"}, DefaultNodePrefixLengthIPv6},
		{"IPv4 subnet smaller than the default share", Network{Type: L3, Subnet: "10.70.0.0/28"}, 28},
		{"IPv6 subnet smaller than the default share", Network{Type: L3, Subnet: "fd00:70::/124"}, 124},
		{"set", Network{Type: L3, Subnet: "10.70.0.0/16", NodePrefixLength: 24}, 24},
		{"l2", Network{Type: L2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.network.NodePrefix(); got != tc.want {
				t.Errorf("NodePrefix of %+v = %d, want %d", tc.network, got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		wantKey       string // "" for a valid file
		wantMsg       string
	}{
		{"empty file", "", "", ""},
		{"networks without default", "networks: [{name: red, type: l3, subnet: 10.70.0.0/24}]\n", "", ""},
		{"largest subnets", "networks: [{name: a, type: l3, subnet: 10.0.0.0/30}, {name: b, type: l3, subnet: 'fd00::/126'}]\n", "", ""},
		{"overlapping subnets in two VRFs", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24}, {name: b, type: l3, subnet: 10.0.0.0/16}]\n", "", ""},
		{"explicit id", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, id: 42}]\n", "", ""},
		{"unknown key", "network: []\n", "network", "unknown key"},
		{"unknown network key", "networks: [{name: a, type: l2, vlan: 3}]\n", "networks", `unknown field "vlan"`},
		{"no name", "networks: [{type: l2}]\n", "networks", `entry 1 (""): name is required`},
		{"upper-case name", "networks: [{name: Red, type: l2}]\n", "networks", "lower-case letters, digits and '-'"},
		{"name with dash at end", "networks: [{name: red-, type: l2}]\n", "networks", "starting and ending with a letter or digit"},
		{"long name", "networks: [{name: " + strings.Repeat("a", 33) + ", type: l2}]\n", "networks", "at most 32 characters, got 33"},
		{"duplicate name", "networks: [{name: a, type: l2}, {name: a, type: l2}]\n", "networks", `entries 1 and 2 are both named "a"`},
		{"bad type", "networks: [{name: a, type: l4}]\n", "networks", `type must be l3 or l2, got "l4"`},
		{"l3 without subnet", "networks: [{name: a, type: l3}]\n", "networks", "subnet is required for an l3 network"},
		{"l2 with subnet", "networks: [{name: a, type: l2, subnet: 10.0.0.0/24}]\n", "networks", "an l2 network has no subnet"},
		{"subnet not a prefix", "networks: [{name: a, type: l3, subnet: 10.0.0.0}]\n", "networks", "must be an IPv4 or IPv6 prefix"},
		{"subnet host bits", "networks: [{name: a, type: l3, subnet: 10.70.0.1/24}]\n", "networks", "write 10.70.0.0/24"},
		{"subnet too small", "networks: [{name: a, type: l3, subnet: 10.0.0.0/31}]\n", "networks", "too small"},
		{"IPv6 subnet too small", "networks: [{name: a, type: l3, subnet: 'fd00::/127'}]\n", "networks", "too small"},
		{"IPv4-mapped subnet", "networks: [{name: a, type: l3, subnet: '::ffff:10.0.0.0/120'}]\n", "networks", "not an IPv4-mapped one"},
		{"zone", "networks: [{name: a, type: l3, subnet: 'fe80::%eth0/64'}]\n", "networks", "must be an IPv4 or IPv6 prefix"},
		{"id too large", "networks: [{name: a, type: l2, id: 16777216}]\n", "networks", "id must be from 1 to 16777215"},
		{"id clash", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, id: 9}, {name: b, type: l3, subnet: 10.1.0.0/24, id: 9}]\n", "networks", `"a" and "b" would both use VRF table 9`},
		{"derived id clash", "networks: [{name: a, type: l2, id: 6329175}, {name: lab, type: l2}]\n", "networks", "would both use bridge domain 6329175"},
		{"same id, other type", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, id: 9}, {name: b, type: l2, id: 9}]\n", "", ""},
		{"VNI clash", "networks: [{name: n6293, type: l2}, {name: n17130, type: l2}]\n", "networks", `"n6293" and "n17130" would both use VXLAN network identifier 12371894`},
		{"mtu too small", "networks: [{name: a, type: l2, mtu: 100}]\n", "networks", "mtu must be from 576 to 9216"},
		{"IPv6 mtu", "networks: [{name: a, type: l3, subnet: 'fd00::/64', mtu: 1000}]\n", "networks", "mtu must be from 1280 to 9216"},
		{"mtu too large", "networks: [{name: a, type: l2, mtu: 9217}]\n", "networks", "mtu must be from 576"},
		{"rx mode", "networks: [{name: a, type: l2, rx-mode: fast}]\n", "networks", `rx-mode must be polling, interrupt, adaptive or empty, got "fast"`},
		{"node prefix lengths", "networks: [{name: a, type: l3, subnet: 10.0.0.0/16, node-prefix-length: 24}, {name: b, type: l3, subnet: 10.1.0.0/24, node-prefix-length: 30}, {name: c, type: l3, subnet: 'fd00::/64', node-prefix-length: 126}, {name: d, type: l3, subnet: 10.2.0.0/24, node-prefix-length: 24}]\n", "", ""},
		{"node prefix shorter than the subnet", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, node-prefix-length: 23}]\n", "networks", "node-prefix-length must be from 24 (subnet 10.0.0.0/24, one node's) to 30"},
		{"node prefix too long", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, node-prefix-length: 31}]\n", "networks", "got 31"},
		{"IPv6 node prefix too long", "networks: [{name: a, type: l3, subnet: 'fd00::/64', node-prefix-length: 127}]\n", "networks", "to 126 (room for the gateway"},
		{"negative node prefix", "networks: [{name: a, type: l3, subnet: 10.0.0.0/24, node-prefix-length: -1}]\n", "networks", "got -1"},
		{"node prefix of an l2 network", "networks: [{name: a, type: l2, node-prefix-length: 26}]\n", "networks", "remove node-prefix-length 26"},
		{"unknown default", "networks: [{name: a, type: l2}]\ndefault-network: b\n", "default-network", `"b" is not a network of this file; the networks are a`},
		{"default without networks", "default-network: b\n", "default-network", "the networks are none"},
		{"long value cut", "networks: [{name: a, type: '" + strings.Repeat("x", 500) + "'}]\n", "networks", "... (500 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.content))
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("Decode(%q) = %v, want valid", tc.content, err)
				}
				return
			}
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) || keyErr.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Decode(%q) = %v, want a *configfile.KeyError for %q containing %q", tc.content, err, tc.wantKey, tc.wantMsg)
			}
			if len(err.Error()) > 600 {
				t.Errorf("the error repeats too much of the file: %d bytes", len(err.Error()))
			}
		})
	}
}

// TestValidateReportsEveryProblem: every bad network is reported at once.
func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := Decode([]byte("networks: [{name: A, type: l2}, {name: b, type: l3}]\ndefault-network: c\n"))
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("Decode = %v, want three problems", err)
	}
}
