package memifwiring_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
)

var errVswitchRefused = errors.New("vswitch stand-in refuses to create interfaces")

// vswitchStandIn stands in for VPP's interface descriptor in the tests of
// the wiring's own logic (revert, healing, naming), which need a vswitch
// that can be told to refuse; vpp_test.go runs the same flows against a
// real VPP. Registered with the real KV scheduler, it is told what VPP
// would be told, and keeps the interfaces it was told to create.
type vswitchStandIn struct {
	mu         sync.Mutex
	interfaces map[string]*vpp_interfaces.Interface
	refusing   bool
	deletes    []deletion
}

// deletion is one interface the vswitch was told to delete, and whether its
// socket directory was still there: VPP listens on the socket, so the
// directory must outlive the interface.
type deletion struct {
	name             string
	socketDirPresent bool
}

func newVswitchStandIn() *vswitchStandIn {
	return &vswitchStandIn{interfaces: map[string]*vpp_interfaces.Interface{}}
}

func (v *vswitchStandIn) descriptor() *kvs.KVDescriptor {
	return fakevswitch.InterfaceDescriptor(kvs.KVDescriptor{
		Name:     "vswitchStandIn-vpp-interface",
		Create:   v.create,
		Delete:   v.delete,
		Retrieve: v.retrieve,
	})
}

// refuse makes every later Create fail until refuse(false).
func (v *vswitchStandIn) refuse(refusing bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.refusing = refusing
}

// names returns the names of the interfaces the vswitch holds, sorted.
func (v *vswitchStandIn) names() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var names []string
	for name := range v.interfaces {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (v *vswitchStandIn) get(name string) *vpp_interfaces.Interface {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.interfaces[name]
}

func (v *vswitchStandIn) create(_ string, value proto.Message) (kvs.Metadata, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.refusing {
		return nil, errVswitchRefused
	}
	iface := value.(*vpp_interfaces.Interface)
	v.interfaces[iface.Name] = proto.Clone(iface).(*vpp_interfaces.Interface)
	return nil, nil
}

func (v *vswitchStandIn) delete(_ string, value proto.Message, _ kvs.Metadata) error {
	iface := value.(*vpp_interfaces.Interface)
	_, statErr := os.Stat(filepath.Dir(iface.GetMemif().GetSocketFilename()))
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.interfaces, iface.Name)
	v.deletes = append(v.deletes, deletion{name: iface.Name, socketDirPresent: statErr == nil})
	return nil
}

// deletions returns the deletions the vswitch was told of, in order.
func (v *vswitchStandIn) deletions() []deletion {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.deletes)
}

func (v *vswitchStandIn) retrieve([]kvs.KVWithMetadata) ([]kvs.KVWithMetadata, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var values []kvs.KVWithMetadata
	for _, iface := range v.interfaces {
		values = append(values, kvs.KVWithMetadata{
			Key:    vpp_interfaces.InterfaceKey(iface.Name),
			Value:  proto.Clone(iface),
			Origin: kvs.FromNB,
		})
	}
	return values, nil
}
