package assign

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"

	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// Record is what an allocation's memifs were given when first wired.
type Record struct {
	// Pod is "namespace/name", for the pods a network change names.
	Pod string `json:"pod"`
	// Specs are the memifs' specs by memif ID; an empty Network is a
	// memif in no network (memifwiring.conf's legacy keys wire it).
	Specs []memifspec.Spec `json:"specs"`
	// Refused, when set, is why none of the memifs is wired.
	Refused *Refusal `json:"refused,omitempty"`
	// Origins are where each memif's network came from, by memif ID
	// (see Origin); records of before they were kept have none. They are
	// kept in the origins file, not in the state file, whose format
	// agents of before read strictly.
	Origins []Origin `json:"-"`
}

// Origin is where a memif's network came from.
type Origin string

// The origins of a memif's network.
const (
	// OriginNamed: the pod's annotation or claim named the network. The
	// memif keeps it.
	OriginNamed Origin = "named"
	// OriginDefaultNetwork: the pod named none, and networks.conf's
	// default-network was in force. The memif keeps it.
	OriginDefaultNetwork Origin = "default-network"
	// OriginWiring: the pod named none, and memifwiring.conf said where
	// such memifs go: its bridge-domain (the default l2 network) or, with
	// no default network, no network at all. The memif follows what
	// memifwiring.conf says at each agent start (FollowWiring).
	OriginWiring Origin = "memifwiring"
)

// origin returns where memif memifID's network came from. A record of
// before origins were kept (or one the origins file does not know: it was
// lost, or an agent of before wrote the record) has a memif in no network
// only by default, from memifwiring.conf; one in a network keeps it, as
// it did then.
func (r Record) origin(memifID int) Origin {
	if memifID < len(r.Origins) {
		return r.Origins[memifID]
	}
	if r.Specs[memifID].Network == "" {
		return OriginWiring
	}
	return OriginNamed
}

// Refusal is why a memif is not wired.
type Refusal struct {
	Reason  memifspec.Reason `json:"reason"`
	Message string           `json:"message"`
}

// Error implements error.
func (r *Refusal) Error() string { return r.Message }

// refusalOf words err as a refusal.
func refusalOf(err error) *Refusal {
	return &Refusal{Reason: memifspec.ReasonOf(err), Message: err.Error()}
}

// Assignment is what one memif gets.
type Assignment struct {
	MemifID uint32
	// Memif is the resolved spec; its Network.Name is empty for a memif in
	// no network.
	Memif memifspec.Memif
	// Address is the pod side's address with the subnet's length, and
	// Gateway the node's, for a memif of an l3 network.
	Address netip.Prefix
	Gateway netip.Addr
	// Refused, when set, is why the memif is not wired; the rest is then
	// empty.
	Refused *Refusal
}

// InNetwork tells whether the memif is in a network.
func (a Assignment) InNetwork() bool { return a.Memif.Network.Name != "" }

// Assigner holds the networks applied, the records and the addresses.
type Assigner struct {
	file    *stateFile
	applied netconf.Config
	records map[string]Record
	ipam    *ipam.IPAM
	dirty   bool
	// spanning: the l3 networks span nodes, and each hands out the
	// node's share of its subnet (shares, by network name).
	spanning bool
	shares   map[string]netip.Prefix
	// wiringBridgeDomain is memifwiring.conf's bridge-domain at this
	// start; empty: none.
	wiringBridgeDomain string
}

// Open returns the assigner persisted at path (a missing file is an empty
// one); an empty path keeps nothing on disk.
func Open(path string) (*Assigner, error) {
	a := &Assigner{records: map[string]Record{}, ipam: ipam.New()}
	if path == "" {
		return a, nil
	}
	a.file = &stateFile{path: path}
	state, err := a.file.read()
	if err != nil {
		return nil, err
	}
	if err := a.restore(state); err != nil {
		return nil, fmt.Errorf("%s: %w; move it away to start without the networks' records (pods keep their memifs, but l3 addresses may be handed out again)", path, err)
	}
	return a, nil
}

// RemoveTemps removes the temporary files of the state files that a crash
// during a save left, and returns their paths; call it before the first
// save.
func (a *Assigner) RemoveTemps() ([]string, error) {
	if a.file == nil {
		return nil, nil
	}
	return a.file.removeTemps()
}

func (a *Assigner) restore(state State) error {
	if len(state.Applied.Networks) > 0 || state.Applied.DefaultNetwork != "" {
		if err := state.Applied.Validate(); err != nil {
			return fmt.Errorf("the networks applied before: %w", err)
		}
	}
	addresses, err := ipam.Restore(state.Addresses)
	if err != nil {
		return err
	}
	a.applied, a.ipam = state.Applied, addresses
	if state.Allocations != nil {
		a.records = state.Allocations
	}
	return nil
}

// AddressUse returns how much of each l3 network's address pool is
// handed out, by network name.
func (a *Assigner) AddressUse() map[string]ipam.Use { return a.ipam.Use() }

// Applied returns the networks in force.
func (a *Assigner) Applied() netconf.Config { return a.applied }

// SetNetworks applies desired as netconf.Reconcile allows while pods use
// the networks, and returns the changes it refused. The address pools
// follow: an l3 network's pool is its whole subnet (the node's share of
// it on a single node).
func (a *Assigner) SetNetworks(desired netconf.Config) []netconf.Refusal {
	result, refusals := netconf.Reconcile(a.applied, desired, a.podsOf())
	for _, name := range a.ipam.Networks() {
		if n, ok := result.Network(name); !ok || n.Type != netconf.L3 {
			// Reconcile kept every network a record uses; a pool of a
			// network gone has no lease.
			_ = a.ipam.RemoveNetwork(name)
		}
	}
	for _, n := range result.Networks {
		if n.Type != netconf.L3 {
			continue
		}
		share, ok := a.shareOf(n)
		if !ok {
			continue
		}
		if err := a.ipam.SetNetwork(n.Name, n.Prefix(), share); err != nil {
			// Only a pool that hands out addresses refuses, and those
			// belong to records, whose network Reconcile kept as it was.
			refusals = append(refusals, netconf.Refusal{Network: n.Name, Change: netconf.ChangeSubnet, HeldBy: n.Name, Detail: err.Error()})
		}
	}
	if !equalConfigs(a.applied, result) {
		a.applied = result
		a.dirty = true
	}
	return refusals
}

// SetShares makes the l3 networks hand out the node's share of their
// subnets (shares, by network name) once spanning: the networks span
// nodes, and each node's share is claimed through the API server. A
// network whose share is not claimed yet keeps the pool it has (restored
// after a restart, and the claim gives the same share back) or has none,
// so that its memifs are refused until it is claimed and never get an
// address of another node's share. Not spanning, each hands out its whole
// subnet. The pools follow at the next SetNetworks.
func (a *Assigner) SetShares(spanning bool, shares map[string]netip.Prefix) {
	a.spanning, a.shares = spanning, maps.Clone(shares)
}

// shareOf is what network n hands out: its whole subnet, or spanning the
// node's share of it when one of n's share length is claimed.
func (a *Assigner) shareOf(n netconf.Network) (netip.Prefix, bool) {
	if !a.spanning {
		return n.Prefix(), true
	}
	share, ok := a.shares[n.Name]
	if ok && share.Bits() == n.NodePrefix() && n.Prefix().Contains(share.Addr()) {
		return share, true
	}
	if pool, err := a.ipam.Pool(n.Name); err == nil && pool.Subnet() != n.Prefix() {
		// A pool of the subnet before: gone once its addresses are.
		_ = a.ipam.RemoveNetwork(n.Name)
	}
	return netip.Prefix{}, false
}

func equalConfigs(x, y netconf.Config) bool {
	return x.DefaultNetwork == y.DefaultNetwork && slices.Equal(x.Networks, y.Networks)
}

// podsOf returns the pods whose memifs are in each network.
func (a *Assigner) podsOf() map[string][]string {
	pods := map[string][]string{}
	for _, record := range a.records {
		if record.Refused != nil {
			continue
		}
		for _, spec := range record.Specs {
			if spec.Network != "" && !slices.Contains(pods[spec.Network], record.Pod) {
				pods[spec.Network] = append(pods[spec.Network], record.Pod)
			}
		}
	}
	return pods
}

// Recorded tells whether allocationID's memifs have their specs.
func (a *Assigner) Recorded(allocationID string) bool {
	_, ok := a.records[allocationID]
	return ok
}

// Record gives the memifs of a device plugin allocation (memifs of them,
// held by container of pod) their specs from the pod's annotation value
// (empty: none). A refused annotation refuses every memif.
func (a *Assigner) Record(allocationID, pod, container string, memifs int, annotation string) {
	record := Record{Pod: pod}
	var specs []memifspec.Spec
	if annotation != "" {
		var err error
		if specs, err = memifspec.DecodeAnnotation(annotation); err != nil {
			record.Refused = refusalOf(fmt.Errorf("annotation %s: %w", memifspec.AnnotationKey, err))
		}
	}
	for id := range memifs {
		spec, origin := memifspec.Spec{Network: a.applied.DefaultNetwork}, a.defaultOrigin()
		for _, s := range specs {
			if s.MemifID == uint32(id) && (s.Container == "" || s.Container == container) {
				spec, origin = s, OriginNamed
			}
		}
		record.Specs = append(record.Specs, spec)
		record.Origins = append(record.Origins, origin)
	}
	a.records[allocationID] = record
	a.dirty = true
}

// RecordClaim gives the memifs of a claim's allocation their spec: the
// claim's MemifConfig for every memif (nil: the default network).
func (a *Assigner) RecordClaim(allocationID, pod string, memifs int, spec *memifspec.Spec) {
	record := Record{Pod: pod}
	for range memifs {
		s, origin := memifspec.Spec{Network: a.applied.DefaultNetwork}, a.defaultOrigin()
		if spec != nil {
			s, origin = *spec, OriginNamed
		}
		record.Specs = append(record.Specs, s)
		record.Origins = append(record.Origins, origin)
	}
	a.records[allocationID] = record
	a.dirty = true
}

// defaultOrigin is the origin of a memif whose pod names no network:
// memifwiring.conf's when the default network is its bridge-domain or
// there is none, networks.conf's default-network otherwise.
func (a *Assigner) defaultOrigin() Origin {
	if a.applied.DefaultNetwork == "" || a.applied.DefaultNetwork == a.wiringBridgeDomain {
		return OriginWiring
	}
	return OriginDefaultNetwork
}

// SetWiringBridgeDomain tells the assigner memifwiring.conf's
// bridge-domain (empty: none), which netconf.WithLegacy makes the default
// l2 network. Call it once the assigner is open, before anything is
// recorded: memifs whose pod names no network and that get that bridge
// domain, or no network, follow memifwiring.conf (FollowWiring).
func (a *Assigner) SetWiringBridgeDomain(name string) { a.wiringBridgeDomain = name }

// Moved is a memif FollowWiring moved.
type Moved struct {
	Pod     string
	MemifID int
	// From and To are the networks; empty: no network.
	From, To string
}

// FollowWiring moves the memifs whose network came from memifwiring.conf
// (OriginWiring) to where it sends them now, and returns them; call it
// once at the agent's start, before the first SetNetworks, with the
// default network about to be applied (networks.conf's default-network,
// or memifwiring.conf's bridge-domain). memifwiring.conf is read only at
// the start, so an agent restarted with it changed between bridge-domain
// and l2-xconnect (or neither) moves the running pods' memifs between the
// bridge domain and no network, where its other keys wire them; both are
// ethernet memifs, so the pods' side is unchanged. A memif whose pod
// named its network, or that got networks.conf's default-network, keeps
// it (see followedNetwork).
func (a *Assigner) FollowWiring(defaultNetwork string) []Moved {
	var moved []Moved
	for _, id := range slices.Sorted(maps.Keys(a.records)) {
		record := a.records[id]
		if record.Refused != nil {
			continue
		}
		// A copy: a Snapshot shares the records' specs.
		specs, changed := slices.Clone(record.Specs), false
		origins := make([]Origin, len(specs))
		for memifID, spec := range specs {
			origins[memifID] = record.origin(memifID)
			to := followedNetwork(spec.Network, origins[memifID], a.wiringBridgeDomain, defaultNetwork)
			if to == spec.Network {
				continue
			}
			moved = append(moved, Moved{Pod: record.Pod, MemifID: memifID, From: spec.Network, To: to})
			// A memif that took the default has no other field set.
			specs[memifID], changed = memifspec.Spec{Network: to}, true
		}
		if changed {
			// A record of before keeps from now on the origins the rule
			// for such records gave it: moved into a network, its memif
			// would otherwise be taken at the next start for one its pod
			// named, and stay there.
			record.Specs, record.Origins = specs, origins
			a.records[id] = record
			a.dirty = true
		}
	}
	return moved
}

// followedNetwork returns the network a memif recorded in network
// recorded, from origin, is in at an agent start whose memifwiring.conf
// names bridgeDomain and whose default network is defaultNetwork. A
// memif from memifwiring.conf goes where memifwiring.conf sends memifs
// now: into its bridge domain, or into no network when no default
// network is set; when networks.conf's own default-network has taken
// over, it keeps its network, as every memif does when the default
// network changes. Every other memif keeps its network.
func followedNetwork(recorded string, origin Origin, bridgeDomain, defaultNetwork string) string {
	if origin != OriginWiring || defaultNetwork != "" && defaultNetwork != bridgeDomain {
		return recorded
	}
	return defaultNetwork
}

// Resolve returns what each memif of allocationID gets under the applied
// networks, handing out the addresses of l3 memifs; nil for an
// allocation without a record.
func (a *Assigner) Resolve(allocationID string) []Assignment {
	record, ok := a.records[allocationID]
	if !ok {
		return nil
	}
	assignments := make([]Assignment, len(record.Specs))
	for id, spec := range record.Specs {
		assignment := Assignment{MemifID: uint32(id), Refused: record.Refused}
		if record.Refused == nil && spec.Network != "" {
			var err error
			assignment, err = a.resolve(owner(allocationID, id), spec)
			assignment.MemifID = uint32(id)
			if err != nil {
				a.ipam.Release(owner(allocationID, id))
				a.dirty = true
				assignment = Assignment{MemifID: uint32(id), Refused: refusalOf(err)}
			}
		}
		assignments[id] = assignment
	}
	return assignments
}

func (a *Assigner) resolve(owner string, spec memifspec.Spec) (Assignment, error) {
	memif, err := spec.Resolve(a.applied)
	if err != nil {
		return Assignment{}, err
	}
	assignment := Assignment{Memif: memif}
	if memif.Network.Type != netconf.L3 {
		return assignment, nil
	}
	pool, err := a.ipam.Pool(memif.Network.Name)
	if err != nil && a.spanning {
		return Assignment{}, fmt.Errorf("network %q: this node's share of subnet %s is not claimed yet (through the API server); the memif is wired once it is: %w", memif.Network.Name, memif.Network.Subnet, err)
	}
	if err != nil {
		return Assignment{}, err
	}
	held, holds := pool.AddressOf(owner)
	var addr netip.Addr
	switch {
	case len(memif.IPs) > 0 && holds && held != memif.IPs[0].Addr():
		return Assignment{}, fmt.Errorf("%w: the memif holds %s, not %s", ipam.ErrOwnerHolds, held, memif.IPs[0].Addr())
	case len(memif.IPs) > 0:
		addr = memif.IPs[0].Addr()
		err = pool.Claim(owner, addr)
	default:
		addr, err = pool.Allocate(owner)
	}
	if err != nil {
		return Assignment{}, fmt.Errorf("network %q: %w", memif.Network.Name, err)
	}
	if !holds {
		a.dirty = true
	}
	assignment.Address = netip.PrefixFrom(addr, pool.Subnet().Bits())
	assignment.Gateway = pool.Gateway()
	return assignment, nil
}

// owner names one memif as the IPAM's lease owner.
func owner(allocationID string, memifID int) string {
	return allocationID + "/" + strconv.Itoa(memifID)
}

// Release forgets allocationID and returns its addresses.
func (a *Assigner) Release(allocationID string) {
	record, ok := a.records[allocationID]
	if !ok {
		return
	}
	for id := range record.Specs {
		a.ipam.Release(owner(allocationID, id))
	}
	delete(a.records, allocationID)
	a.dirty = true
}

// Retain releases every allocation not in live.
func (a *Assigner) Retain(live map[string]bool) {
	for _, id := range slices.Sorted(maps.Keys(a.records)) {
		if !live[id] {
			a.Release(id)
		}
	}
}

// Snapshot returns what Save writes, for a test or a rollback.
func (a *Assigner) Snapshot() State {
	return State{Version: stateVersion, Applied: a.applied, Allocations: maps.Clone(a.records), Addresses: a.ipam.Snapshot()}
}

// Rollback puts back what Snapshot returned.
func (a *Assigner) Rollback(state State) error {
	if err := a.restore(state); err != nil {
		return err
	}
	a.records = maps.Clone(state.Allocations)
	if a.records == nil {
		a.records = map[string]Record{}
	}
	a.dirty = true
	return nil
}

// Save writes the state when it changed since the last Save.
func (a *Assigner) Save() error {
	if !a.dirty || a.file == nil {
		a.dirty = false
		return nil
	}
	if err := a.file.write(a.Snapshot()); err != nil {
		return err
	}
	a.dirty = false
	return nil
}
