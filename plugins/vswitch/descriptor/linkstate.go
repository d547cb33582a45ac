package descriptor

import (
	"fmt"
	"sync"

	"github.com/gogo/protobuf/proto"
	prototypes "github.com/gogo/protobuf/types"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// LinkStateDescriptorName names the link state descriptor.
const LinkStateDescriptorName = "vpp-interface-link-state"

// LinkStates are the link states of the agent's interfaces as values of
// the KV scheduler's own (vpp_interfaces.LinkStateKey, pushed from VPP's
// side, never made by the agent), which values that need a link up (the
// rx modes of a memif) depend on. The link watcher reports each change
// (Set, Forget); Retrieve reports what the interface descriptor's
// Retrieve read, so that a resync reads VPP's interfaces once.
type LinkStates struct {
	push func(...kvs.KVWithMetadata) error

	mu sync.Mutex
	// up is the link state last pushed or retrieved, by interface name.
	up map[string]bool
	// awaitingRetrieve: VPP (re)connected and the resync that follows has
	// not read the link states yet; it will, so nothing is pushed.
	awaitingRetrieve bool
	// retrieved is what the interface descriptor's last Retrieve read.
	retrieved map[string]bool
	// onRetrieve is handed the memifs' links each Retrieve reads.
	onRetrieve func(map[string]Link)
}

// NewLinkStates returns the descriptor; push is the KV scheduler's
// PushSBNotification.
func NewLinkStates(push func(...kvs.KVWithMetadata) error) *LinkStates {
	return &LinkStates{push: push, up: map[string]bool{}, retrieved: map[string]bool{}}
}

// Descriptor returns the KV scheduler descriptor.
func (d *LinkStates) Descriptor() *kvs.KVDescriptor {
	return &kvs.KVDescriptor{
		Name:          LinkStateDescriptorName,
		ValueTypeName: proto.MessageName(&prototypes.Empty{}),
		KeySelector: func(key string) bool {
			_, _, ok := vpp_interfaces.ParseLinkStateKey(key)
			return ok
		},
		Retrieve:             d.retrieve,
		RetrieveDependencies: []string{InterfaceDescriptorName},
	}
}

func (d *LinkStates) retrieve([]kvs.KVWithMetadata) ([]kvs.KVWithMetadata, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.up, d.awaitingRetrieve = d.retrieved, false
	values := make([]kvs.KVWithMetadata, 0, len(d.up))
	for name, up := range d.up {
		values = append(values, linkStateValue(name, up))
	}
	return values, nil
}

// OnRetrieve hands f the links of the agent's memifs that each Retrieve of
// the interfaces reads, so that the link watcher need not read them again
// after a (re)connection.
func (d *LinkStates) OnRetrieve(f func(map[string]Link)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onRetrieve = f
}

// observe keeps the link states of the agent's interfaces in state, for
// the next Retrieve, and hands OnRetrieve the memifs' links.
func (d *LinkStates) observe(state *vppState) {
	retrieved := map[string]bool{}
	for _, iface := range state.interfaces {
		if name, ours := owner.Name(iface.Tag); ours {
			retrieved[name] = iface.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0
		}
	}
	d.mu.Lock()
	d.retrieved = retrieved
	onRetrieve := d.onRetrieve
	d.mu.Unlock()
	if onRetrieve != nil {
		onRetrieve(state.links())
	}
}

// Reconnected notes that VPP (re)connected: until the resync that
// follows reads the link states back, Set and Forget tell the scheduler
// nothing, so that a resync that finds VPP as it was records no change.
func (d *LinkStates) Reconnected() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.awaitingRetrieve = true
}

// Set tells the KV scheduler that interface name's link is up or down,
// when that changed.
func (d *LinkStates) Set(name string, up bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	was, known := d.up[name]
	if known && was == up {
		return nil
	}
	changes := []kvs.KVWithMetadata{linkStateValue(name, up)}
	if known {
		changes = append(changes, kvs.KVWithMetadata{Key: vpp_interfaces.LinkStateKey(name, was)})
	}
	d.up[name] = up
	if d.awaitingRetrieve {
		return nil
	}
	return d.pushed(name, changes)
}

// Forget tells the KV scheduler that interface name is gone.
func (d *LinkStates) Forget(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	was, known := d.up[name]
	if !known {
		return nil
	}
	delete(d.up, name)
	if d.awaitingRetrieve {
		return nil
	}
	return d.pushed(name, []kvs.KVWithMetadata{{Key: vpp_interfaces.LinkStateKey(name, was)}})
}

func (d *LinkStates) pushed(name string, changes []kvs.KVWithMetadata) error {
	if err := d.push(changes...); err != nil {
		return fmt.Errorf("tell the KV scheduler the link state of %s: %w", name, err)
	}
	return nil
}

func linkStateValue(name string, up bool) kvs.KVWithMetadata {
	return kvs.KVWithMetadata{Key: vpp_interfaces.LinkStateKey(name, up), Value: &prototypes.Empty{}, Origin: kvs.FromSB}
}
