package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func mustPool(t testing.TB, subnet, share string) *Pool {
	t.Helper()
	pool, err := NewPool(netip.MustParsePrefix(subnet), netip.MustParsePrefix(share))
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestNewPool(t *testing.T) {
	for _, tc := range []struct {
		name, subnet, share  string
		gateway, first, last string
		capacity             uint64
		wantErr              string
	}{
		{name: "IPv4 subnet on one node", subnet: "10.70.0.0/24", share: "10.70.0.0/24", gateway: "10.70.0.1", first: "10.70.0.2", last: "10.70.0.254", capacity: 253},
		{name: "IPv4 lower half", subnet: "10.70.0.0/24", share: "10.70.0.0/25", gateway: "10.70.0.1", first: "10.70.0.2", last: "10.70.0.127", capacity: 126},
		{name: "IPv4 upper half", subnet: "10.70.0.0/24", share: "10.70.0.128/25", gateway: "10.70.0.128", first: "10.70.0.129", last: "10.70.0.254", capacity: 126},
		{name: "IPv4 middle quarter", subnet: "10.70.0.0/24", share: "10.70.0.64/26", gateway: "10.70.0.64", first: "10.70.0.65", last: "10.70.0.127", capacity: 63},
		{name: "smallest IPv4", subnet: "10.0.0.0/30", share: "10.0.0.0/30", gateway: "10.0.0.1", first: "10.0.0.2", last: "10.0.0.2", capacity: 1},
		{name: "IPv6 /64", subnet: "fd00:70::/64", share: "fd00:70::/64", gateway: "fd00:70::1", first: "fd00:70::2", last: "fd00:70::ffff:ffff:ffff:ffff", capacity: 1<<64 - 1},
		{name: "IPv6 /120", subnet: "fd00:70::/120", share: "fd00:70::/120", gateway: "fd00:70::1", first: "fd00:70::2", last: "fd00:70::ff", capacity: 254},
		{name: "smallest IPv6", subnet: "fd00::/126", share: "fd00::/126", gateway: "fd00::1", first: "fd00::2", last: "fd00::3", capacity: 2},
		{name: "share outside", subnet: "10.70.0.0/24", share: "10.71.0.0/24", wantErr: "is not within subnet"},
		{name: "share larger", subnet: "10.70.0.0/24", share: "10.70.0.0/16", wantErr: "is not within subnet"},
		{name: "share of another family", subnet: "10.70.0.0/24", share: "fd00::/120", wantErr: "is not within subnet"},
		{name: "share of one address", subnet: "10.70.0.0/24", share: "10.70.0.5/32", wantErr: "leaves no room"},
		{name: "share of the network address and the gateway", subnet: "10.70.0.0/24", share: "10.70.0.0/31", wantErr: "leaves no room"},
		{name: "subnet with host bits", subnet: "10.70.0.1/24", share: "10.70.0.0/24", wantErr: "host bits zero"},
		{name: "IPv4-mapped subnet", subnet: "::ffff:10.0.0.0/120", share: "::ffff:10.0.0.0/120", wantErr: "want an IPv4 or IPv6 prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := NewPool(netip.MustParsePrefix(tc.subnet), netip.MustParsePrefix(tc.share))
			if tc.wantErr != "" {
				if err == nil || !contains(err, tc.wantErr) {
					t.Fatalf("NewPool = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The other nodes route to this share through GatewayOf.
			if gateway := GatewayOf(netip.MustParsePrefix(tc.subnet), netip.MustParsePrefix(tc.share)); gateway != pool.Gateway() {
				t.Errorf("GatewayOf = %s, the pool's gateway %s", gateway, pool.Gateway())
			}
			got := fmt.Sprintln(pool.Gateway(), pool.first, pool.last, pool.capacity)
			if want := fmt.Sprintln(tc.gateway, tc.first, tc.last, tc.capacity); got != want {
				t.Errorf("gateway, first, last, capacity = %s, want %s", got, want)
			}
		})
	}
}

func contains(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}

// TestAllocateHandsOutEveryAddressOnce: a share is handed out whole, each
// address once and never the gateway, then exhaustion is ErrExhausted.
func TestAllocateHandsOutEveryAddressOnce(t *testing.T) {
	for _, tc := range []struct{ subnet, share string }{
		{"10.70.0.0/24", "10.70.0.0/24"},
		{"10.70.0.0/24", "10.70.0.128/26"},
		{"fd00:70::/120", "fd00:70::/121"},
		{"fd00:70::/120", "fd00:70::80/121"},
	} {
		t.Run(tc.share, func(t *testing.T) {
			pool := mustPool(t, tc.subnet, tc.share)
			seen := map[netip.Addr]bool{}
			for i := range pool.capacity {
				addr, err := pool.Allocate(fmt.Sprint("memif-", i))
				if err != nil {
					t.Fatalf("allocation %d: %v", i, err)
				}
				if seen[addr] || addr == pool.Gateway() || !pool.Share().Contains(addr) || pool.checkClaimable(addr) != nil {
					t.Fatalf("allocation %d handed out %s (gateway %s, share %s, seen %v)", i, addr, pool.Gateway(), pool.Share(), seen[addr])
				}
				seen[addr] = true
			}
			_, err := pool.Allocate("one-more")
			if !errors.Is(err, ErrExhausted) || !contains(err, tc.share) {
				t.Fatalf("Allocate on a full pool = %v, want ErrExhausted naming the share", err)
			}
			released, _ := pool.Release("memif-3")
			if again, err := pool.Allocate("one-more"); err != nil || again != released {
				t.Errorf("after a release Allocate = %s, %v; want the released %s", again, err, released)
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	pool := mustPool(t, "10.70.0.0/29", "10.70.0.0/29")
	steps := []struct {
		do, owner string
		want      string // the address, or the error
	}{
		{"allocate", "a", "10.70.0.2"},
		{"allocate", "b", "10.70.0.3"},
		{"allocate", "a", "10.70.0.2"}, // what it holds
		{"release", "a", ""},
		{"allocate", "c", "10.70.0.4"}, // not the just-released .2
		{"claim", "d", "10.70.0.5"},
		{"allocate", "e", "10.70.0.6"}, // .5 is claimed
		{"allocate", "f", "10.70.0.2"}, // wrapped around
		{"allocate", "g", ErrExhausted.Error()},
		{"release", "b", ""},
		{"release", "b", ""}, // twice is nothing
		{"allocate", "g", "10.70.0.3"},
	}
	for i, step := range steps {
		var got string
		switch step.do {
		case "allocate":
			addr, err := pool.Allocate(step.owner)
			got = addr.String()
			if err != nil {
				got = err.Error()
			}
		case "claim":
			got = step.want
			if err := pool.Claim(step.owner, netip.MustParseAddr(step.want)); err != nil {
				got = err.Error()
			}
		case "release":
			pool.Release(step.owner)
		}
		if step.want != "" && !strings.Contains(got, step.want) {
			t.Fatalf("step %d: %s %s = %s, want %s", i+1, step.do, step.owner, got, step.want)
		}
	}
}

func TestClaim(t *testing.T) {
	for _, tc := range []struct {
		name, subnet, share, addr string
		// meHolds is what owner "me" holds before the claim.
		meHolds string
		wantErr error
	}{
		{name: "free address", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.11"},
		{name: "what the owner holds", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.20", meHolds: "10.70.0.20"},
		{name: "IPv6", subnet: "fd00:70::/64", share: "fd00:70::/64", addr: "fd00:70::abcd"},
		{name: "outside the subnet", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.71.0.11", wantErr: ErrOutsideSubnet},
		{name: "another family", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "fd00:70::b", wantErr: ErrOutsideSubnet},
		{name: "zoned", subnet: "fe80::/64", share: "fe80::/64", addr: "fe80::5%eth0", wantErr: ErrOutsideSubnet},
		{name: "outside the share", subnet: "10.70.0.0/24", share: "10.70.0.128/25", addr: "10.70.0.11", wantErr: ErrOutsideShare},
		{name: "the gateway", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.1", wantErr: ErrReserved},
		{name: "the network address", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.0", wantErr: ErrReserved},
		{name: "the broadcast address", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.255", wantErr: ErrReserved},
		{name: "the upper share's gateway", subnet: "10.70.0.0/24", share: "10.70.0.128/25", addr: "10.70.0.128", wantErr: ErrReserved},
		{name: "the IPv6 subnet-router anycast address", subnet: "fd00:70::/64", share: "fd00:70::/64", addr: "fd00:70::", wantErr: ErrReserved},
		{name: "taken", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.10", wantErr: ErrTaken},
		{name: "the owner holds another", subnet: "10.70.0.0/24", share: "10.70.0.0/24", addr: "10.70.0.21", meHolds: "10.70.0.20", wantErr: ErrOwnerHolds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := mustPool(t, tc.subnet, tc.share)
			if taken := netip.MustParseAddr("10.70.0.10"); pool.Share().Contains(taken) {
				if err := pool.Claim("neighbour", taken); err != nil {
					t.Fatal(err)
				}
			}
			if tc.meHolds != "" {
				if err := pool.Claim("me", netip.MustParseAddr(tc.meHolds)); err != nil {
					t.Fatal(err)
				}
			}
			err := pool.Claim("me", netip.MustParseAddr(tc.addr))
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Claim(%s) = %v, want %v", tc.addr, err, tc.wantErr)
			}
			if err != nil && (contains(err, "neighbour") || !contains(err, tc.addr)) {
				t.Errorf("Claim(%s) = %q: want the address named and the other owner not", tc.addr, err)
			}
			if got, _ := pool.AddressOf("me"); err == nil && got != netip.MustParseAddr(tc.addr) {
				t.Errorf("me holds %s after claiming %s", got, tc.addr)
			}
		})
	}
}
