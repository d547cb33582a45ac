package shares

import (
	"math"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestShareAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subnet  string
		bits    int
		index   uint64
		want    string
		wantErr string
	}{
		{"first IPv4 share", "10.70.0.0/24", 26, 0, "10.70.0.0/26", ""},
		{"last IPv4 share", "10.70.0.0/24", 26, 3, "10.70.0.192/26", ""},
		{"whole subnet", "10.70.0.0/24", 24, 0, "10.70.0.0/24", ""},
		{"across octets", "10.0.0.0/8", 24, 258, "10.1.2.0/24", ""},
		{"IPv6 in the low half", "fd00:70::/64", 122, 5, "fd00:70::140/122", ""},
		{"IPv6 across the halves", "fd00::/60", 70, 0x3ff, "fd00:0:0:f:fc00::/70", ""},
		{"IPv6 in the high half", "fd00::/16", 48, 0x10002, "fd00:1:2::/48", ""},
		{"index past the subnet", "10.70.0.0/24", 26, 4, "", "the subnet has 4"},
		{"share longer than the address", "10.70.0.0/24", 33, 0, "", "want from /24"},
		{"share shorter than the subnet", "10.70.0.0/24", 23, 0, "", "want from /24"},
		{"host bits", "10.70.0.1/24", 26, 0, "", "host bits zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShareAt(netip.MustParsePrefix(tc.subnet), tc.bits, tc.index)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ShareAt(%s, /%d, %d) = %v, %v; want an error containing %q", tc.subnet, tc.bits, tc.index, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != netip.MustParsePrefix(tc.want) {
				t.Fatalf("ShareAt(%s, /%d, %d) = %v, %v; want %s", tc.subnet, tc.bits, tc.index, got, err, tc.want)
			}
		})
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		subnet string
		bits   int
		want   uint64
	}{
		{"10.70.0.0/24", 24, 1},
		{"10.70.0.0/24", 26, 4},
		{"10.0.0.0/8", 30, 1 << 22},
		{"fd00::/64", 122, 1 << 58},
		{"fd00::/8", 126, math.MaxUint64},
	} {
		if got := Count(netip.MustParsePrefix(tc.subnet), tc.bits); got != tc.want {
			t.Errorf("Count(%s, /%d) = %d, want %d", tc.subnet, tc.bits, got, tc.want)
		}
	}
}

func TestLeaseNameIsAnObjectName(t *testing.T) {
	name := LeaseName(strings.Repeat("a", 32), math.MaxUint64)
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		t.Errorf("LeaseName = %q: %v", name, problems)
	}
}
