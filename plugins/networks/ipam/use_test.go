package ipam

import (
	"math"
	"testing"
)

func TestUse(t *testing.T) {
	m := New()
	for _, n := range []struct{ name, subnet, share string }{
		{"red", "10.70.0.0/24", "10.70.0.0/24"},  // 256 - network, gateway, broadcast
		{"tiny", "10.99.0.0/30", "10.99.0.0/30"}, // one pod address
		{"part", "10.80.0.0/16", "10.80.1.0/24"}, // a share inside the subnet: 256 - gateway
		{"v6", "fd00:70::/64", "fd00:70::/64"},   // saturated
	} {
		if err := m.SetNetwork(n.name, prefix(n.subnet), prefix(n.share)); err != nil {
			t.Fatal(err)
		}
	}
	red, _ := m.Pool("red")
	for _, owner := range []string{"a/0", "b/0", "c/0"} {
		if _, err := red.Allocate(owner); err != nil {
			t.Fatal(err)
		}
	}
	red.Release("b/0")
	want := map[string]Use{
		"red":  {InUse: 2, Capacity: 253},
		"tiny": {InUse: 0, Capacity: 1},
		"part": {InUse: 0, Capacity: 255},
		"v6":   {InUse: 0, Capacity: math.MaxUint64},
	}
	got := m.Use()
	if len(got) != len(want) {
		t.Fatalf("Use = %+v, want %+v", got, want)
	}
	for network, w := range want {
		if got[network] != w {
			t.Errorf("Use()[%s] = %+v, want %+v", network, got[network], w)
		}
	}
}
