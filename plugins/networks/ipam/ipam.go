package ipam

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// IPAM holds the address pools of the node's l3 networks, by network name.
type IPAM struct {
	pools map[string]*Pool
}

// New returns an IPAM without pools.
func New() *IPAM { return &IPAM{pools: map[string]*Pool{}} }

// SetNetwork makes network hand out share of subnet. A network that has
// the same pool keeps it and its leases; one whose subnet or share
// changes gets a new pool, which is refused (ErrInUse) while it hands out
// addresses.
func (m *IPAM) SetNetwork(network string, subnet, share netip.Prefix) error {
	if pool, ok := m.pools[network]; ok {
		if pool.subnet == subnet && pool.share == share {
			return nil
		}
		if pool.Len() > 0 {
			return fmt.Errorf("%w: network %s cannot move from share %s of %s to share %s of %s while %d addresses are handed out", ErrInUse, network, pool.share, pool.subnet, share, subnet, pool.Len())
		}
	}
	pool, err := NewPool(subnet, share)
	if err != nil {
		return fmt.Errorf("network %s: %w", network, err)
	}
	m.pools[network] = pool
	return nil
}

// RemoveNetwork drops network's pool; it is refused (ErrInUse) while the
// pool hands out addresses. A network without a pool is not an error.
func (m *IPAM) RemoveNetwork(network string) error {
	if pool, ok := m.pools[network]; ok && pool.Len() > 0 {
		return fmt.Errorf("%w: network %s hands out %d addresses", ErrInUse, network, pool.Len())
	}
	delete(m.pools, network)
	return nil
}

// Pool returns network's pool.
func (m *IPAM) Pool(network string) (*Pool, error) {
	pool, ok := m.pools[network]
	if !ok {
		return nil, fmt.Errorf("%w for network %s", ErrUnknownPool, network)
	}
	return pool, nil
}

// Networks lists the networks that have a pool, sorted.
func (m *IPAM) Networks() []string { return slices.Sorted(maps.Keys(m.pools)) }

// Use is how much of one network's pool is handed out.
type Use struct {
	// InUse is how many addresses are handed out; Capacity how many pods
	// can get in all (the node's share without the gateway, and without
	// the subnet's network and broadcast addresses when it holds them).
	InUse, Capacity uint64
}

// Use returns each pool's use, by network name.
func (m *IPAM) Use() map[string]Use {
	use := make(map[string]Use, len(m.pools))
	for network, pool := range m.pools {
		use[network] = Use{InUse: uint64(pool.Len()), Capacity: pool.capacity}
	}
	return use
}

// Release returns every address owner holds, in every pool.
func (m *IPAM) Release(owner string) {
	for _, pool := range m.pools {
		pool.Release(owner)
	}
}

// State is what IPAM holds, for a checkpoint.
type State struct {
	Networks []NetworkState `json:"networks"`
}

// NetworkState is one network's pool.
type NetworkState struct {
	Network string  `json:"network"`
	Subnet  string  `json:"subnet"`
	Share   string  `json:"share"`
	Leases  []Lease `json:"leases,omitempty"`
}

// Lease is one address handed out.
type Lease struct {
	Address string `json:"address"`
	Owner   string `json:"owner"`
}

// Snapshot returns the pools and their leases, in a stable order.
func (m *IPAM) Snapshot() State {
	state := State{Networks: []NetworkState{}}
	for _, network := range m.Networks() {
		pool := m.pools[network]
		ns := NetworkState{Network: network, Subnet: pool.subnet.String(), Share: pool.share.String()}
		for _, addr := range slices.SortedFunc(maps.Keys(pool.ownerOf), netip.Addr.Compare) {
			ns.Leases = append(ns.Leases, Lease{Address: addr.String(), Owner: pool.ownerOf[addr]})
		}
		state.Networks = append(state.Networks, ns)
	}
	return state
}

// Restore returns the IPAM state describes. It refuses a network listed
// twice, an address leased twice, an owner with two addresses in one
// pool, and a lease of an address the pool cannot hand out.
func Restore(state State) (*IPAM, error) {
	m := New()
	for _, ns := range state.Networks {
		if _, dup := m.pools[ns.Network]; dup {
			return nil, fmt.Errorf("restore address pools: network %q is listed twice", ns.Network)
		}
		pool, err := restorePool(ns)
		if err != nil {
			return nil, fmt.Errorf("restore address pool of network %q: %w", ns.Network, err)
		}
		m.pools[ns.Network] = pool
	}
	return m, nil
}

func restorePool(ns NetworkState) (*Pool, error) {
	subnet, err := netip.ParsePrefix(ns.Subnet)
	if err != nil {
		return nil, fmt.Errorf("subnet: %w", err)
	}
	share, err := netip.ParsePrefix(ns.Share)
	if err != nil {
		return nil, fmt.Errorf("share: %w", err)
	}
	pool, err := NewPool(subnet, share)
	if err != nil {
		return nil, err
	}
	for _, lease := range ns.Leases {
		addr, err := netip.ParseAddr(lease.Address)
		if err != nil {
			return nil, fmt.Errorf("lease of %q: %w", lease.Owner, err)
		}
		if holder, taken := pool.ownerOf[addr]; taken {
			return nil, fmt.Errorf("%s is leased to both %q and %q", addr, holder, lease.Owner)
		}
		if err := pool.Claim(lease.Owner, addr); err != nil {
			return nil, fmt.Errorf("lease of %s to %q: %w", addr, lease.Owner, err)
		}
	}
	return pool, nil
}
