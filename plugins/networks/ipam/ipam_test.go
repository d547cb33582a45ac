package ipam

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestIPAMNetworks(t *testing.T) {
	m := New()
	if err := m.SetNetwork("red", prefix("10.70.0.0/24"), prefix("10.70.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetNetwork("v6", prefix("fd00:70::/64"), prefix("fd00:70::/64")); err != nil {
		t.Fatal(err)
	}
	red, err := m.Pool("red")
	if err != nil {
		t.Fatal(err)
	}
	held, _ := red.Allocate("alloc-1/0")
	v6, _ := m.Pool("v6")
	v6.Allocate("alloc-1/0")

	for _, tc := range []struct {
		name    string
		do      func() error
		wantErr error
	}{
		{"same pool again keeps its leases", func() error {
			return m.SetNetwork("red", prefix("10.70.0.0/24"), prefix("10.70.0.0/24"))
		}, nil},
		{"a moved subnet while in use", func() error {
			return m.SetNetwork("red", prefix("10.71.0.0/24"), prefix("10.71.0.0/24"))
		}, ErrInUse},
		{"a smaller share while in use", func() error {
			return m.SetNetwork("red", prefix("10.70.0.0/24"), prefix("10.70.0.128/25"))
		}, ErrInUse},
		{"removal while in use", func() error { return m.RemoveNetwork("red") }, ErrInUse},
		{"an unknown pool", func() error { _, err := m.Pool("blue"); return err }, ErrUnknownPool},
		{"removal of an unknown network", func() error { return m.RemoveNetwork("blue") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
	if pool, _ := m.Pool("red"); pool != red {
		t.Fatal("setting the same pool again replaced it")
	}
	if got, _ := red.AddressOf("alloc-1/0"); got != held {
		t.Fatalf("alloc-1/0 holds %s in red, want %s", got, held)
	}

	m.Release("alloc-1/0")
	if red.Len() != 0 || v6.Len() != 0 {
		t.Fatalf("after Release red holds %d, v6 %d addresses", red.Len(), v6.Len())
	}
	if err := m.SetNetwork("red", prefix("10.71.0.0/24"), prefix("10.71.0.0/24")); err != nil {
		t.Fatalf("moving an unused network: %v", err)
	}
	if err := m.RemoveNetwork("v6"); err != nil {
		t.Fatalf("removing an unused network: %v", err)
	}
	if got := m.Networks(); !reflect.DeepEqual(got, []string{"red"}) {
		t.Fatalf("Networks = %v", got)
	}
}

// TestSnapshotRestore: a checkpoint round trip through JSON keeps every
// lease, and the restored pools go on never handing an address twice.
func TestSnapshotRestore(t *testing.T) {
	m := New()
	m.SetNetwork("red", prefix("10.70.0.0/24"), prefix("10.70.0.0/24"))
	m.SetNetwork("v6", prefix("fd00:70::/64"), prefix("fd00:70::/64"))
	m.SetNetwork("empty", prefix("10.80.0.0/24"), prefix("10.80.0.128/25"))
	red, _ := m.Pool("red")
	v6, _ := m.Pool("v6")
	for i := range 5 {
		red.Allocate(fmt.Sprint("a/", i))
		v6.Allocate(fmt.Sprint("a/", i))
	}
	red.Claim("requested/0", netip.MustParseAddr("10.70.0.200"))

	encoded, err := json.Marshal(m.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var state State
	if err := json.Unmarshal(encoded, &state); err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(state)
	if err != nil {
		t.Fatalf("Restore(%s): %v", encoded, err)
	}
	if !reflect.DeepEqual(restored.Snapshot(), m.Snapshot()) {
		t.Fatalf("restored %+v, want %+v", restored.Snapshot(), m.Snapshot())
	}
	restoredRed, _ := restored.Pool("red")
	for i := range 10 {
		addr, err := restoredRed.Allocate(fmt.Sprint("b/", i))
		if err != nil {
			t.Fatal(err)
		}
		if owner := red.ownerOf[addr]; owner != "" {
			t.Fatalf("the restored pool handed out %s, which %s holds", addr, owner)
		}
	}
	if !strings.Contains(string(encoded), `{"address":"10.70.0.200","owner":"requested/0"}`) {
		t.Errorf("snapshot %s does not hold the claimed lease as written", encoded)
	}
}

func TestRestoreRefuses(t *testing.T) {
	red := func(leases ...Lease) NetworkState {
		return NetworkState{Network: "red", Subnet: "10.70.0.0/24", Share: "10.70.0.0/24", Leases: leases}
	}
	for _, tc := range []struct {
		name    string
		state   State
		wantErr string
	}{
		{"network twice", State{Networks: []NetworkState{red(), red()}}, `network "red" is listed twice`},
		{"address twice", State{Networks: []NetworkState{red(Lease{"10.70.0.2", "a/0"}, Lease{"10.70.0.2", "b/0"})}}, `10.70.0.2 is leased to both "a/0" and "b/0"`},
		{"address twice spelt apart", State{Networks: []NetworkState{{Network: "v6", Subnet: "fd00::/64", Share: "fd00::/64",
			Leases: []Lease{{"fd00::2", "a/0"}, {"fd00:0:0:0::2", "b/0"}}}}}, `fd00::2 is leased to both`},
		{"owner twice", State{Networks: []NetworkState{red(Lease{"10.70.0.2", "a/0"}, Lease{"10.70.0.3", "a/0"})}}, "owner already holds another address"},
		{"the gateway", State{Networks: []NetworkState{red(Lease{"10.70.0.1", "a/0"})}}, "is the gateway"},
		{"outside the subnet", State{Networks: []NetworkState{red(Lease{"10.71.0.2", "a/0"})}}, "address outside the subnet"},
		{"not an address", State{Networks: []NetworkState{red(Lease{"10.70.0.300", "a/0"})}}, `lease of "a/0"`},
		{"bad subnet", State{Networks: []NetworkState{{Network: "red", Subnet: "10.70.0.0", Share: "10.70.0.0/24"}}}, "subnet:"},
		{"share outside", State{Networks: []NetworkState{{Network: "red", Subnet: "10.70.0.0/24", Share: "10.71.0.0/24"}}}, "is not within subnet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Restore(tc.state); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Restore = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// BenchmarkAllocateRelease measures one Allocate and one Release in a /16
// holding 1000 leases, against a baseline in the same run: one insert
// and one delete of the same keys in a Go map (what any bookkeeping of
// leases costs at least). Reported: each one's operations per second and
// the ratio pool/map of their times.
func BenchmarkAllocateRelease(b *testing.B) {
	const held, batch = 1000, 256
	pool, err := NewPool(prefix("10.64.0.0/16"), prefix("10.64.0.0/16"))
	if err != nil {
		b.Fatal(err)
	}
	owners := make([]string, held+batch)
	for i := range owners {
		owners[i] = fmt.Sprintf("memif-%06d/0", i)
	}
	baseline := map[string]netip.Addr{}
	for _, owner := range owners[:held] {
		addr, _ := pool.Allocate(owner)
		baseline[owner] = addr
	}
	addr := netip.MustParseAddr("10.64.0.1")
	var poolTime, mapTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		start := time.Now()
		for _, owner := range owners[held : held+n] {
			if _, err := pool.Allocate(owner); err != nil {
				b.Fatal(err)
			}
			pool.Release(owner)
		}
		poolTime += time.Since(start)
		start = time.Now()
		for _, owner := range owners[held : held+n] {
			baseline[owner] = addr
			delete(baseline, owner)
		}
		mapTime += time.Since(start)
	}
	b.ReportMetric(float64(b.N)/poolTime.Seconds(), "pool-alloc+release/s")
	b.ReportMetric(float64(b.N)/mapTime.Seconds(), "map-insert+delete/s")
	b.ReportMetric(float64(poolTime)/float64(mapTime), "pool/map")
}
