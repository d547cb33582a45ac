package descriptor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// RxModeDescriptorName names the rx mode descriptor.
const RxModeDescriptorName = "vpp-interface-rx-mode"

// linkIsUp is the rx modes' dependency on their memif's link.
const linkIsUp = "interface-link-is-up"

// RxModes is the descriptor of a memif's rx modes: a value derived from
// the interface model (vpp_interfaces.RxModesKey, the model as its value)
// that waits for the memif's link to be up, since VPP has a memif
// master's queues only while its pod side is connected and makes them
// anew, in its default mode, at each connection. So the KV scheduler
// writes the modes when a link comes up (the link watcher's LinkStates),
// and a resync that reads them back as the model writes nothing.
type RxModes struct {
	conn  ConnFunc
	index InterfaceIndex
}

// NewRxModes returns the descriptor; index finds the memifs.
func NewRxModes(conn ConnFunc, index InterfaceIndex) *RxModes {
	return &RxModes{conn: conn, index: index}
}

// Descriptor returns the KV scheduler descriptor.
func (d *RxModes) Descriptor() *kvs.KVDescriptor {
	return typed[*vpp_interfaces.Interface, kvs.Metadata]{
		Name:          RxModeDescriptorName,
		ValueTypeName: proto.MessageName(&vpp_interfaces.Interface{}),
		KeySelector: func(key string) bool {
			_, ok := vpp_interfaces.ParseRxModesKey(key)
			return ok
		},
		ValueComparator: func(_ string, old, new *vpp_interfaces.Interface) bool {
			return sameRxModes(old.RxModes, new.RxModes)
		},
		Create: func(_ string, iface *vpp_interfaces.Interface) (kvs.Metadata, error) {
			return nil, d.set(iface, iface.RxModes)
		},
		Update: func(_ string, _, iface *vpp_interfaces.Interface, _ kvs.Metadata) (kvs.Metadata, error) {
			return nil, d.set(iface, iface.RxModes)
		},
		Delete: d.delete,
		Dependencies: func(_ string, iface *vpp_interfaces.Interface) []kvs.Dependency {
			return []kvs.Dependency{{Label: linkIsUp, Key: vpp_interfaces.LinkStateKey(iface.Name, true)}}
		},
	}.descriptor()
}

// rxModesOf is the derived rx modes value of a memif with rx modes.
func rxModesOf(iface *vpp_interfaces.Interface) []kvs.KeyValuePair {
	if iface.Type != vpp_interfaces.Interface_MEMIF || len(iface.RxModes) == 0 {
		return nil
	}
	return []kvs.KeyValuePair{{Key: vpp_interfaces.RxModesKey(iface.Name), Value: iface}}
}

// sameRxModes: both give every queue the same mode.
func sameRxModes(a, b []*vpp_interfaces.Interface_RxMode) bool {
	queues := func(modes []*vpp_interfaces.Interface_RxMode) []uint32 {
		var q []uint32
		for _, m := range modes {
			if !m.DefaultMode {
				q = append(q, m.Queue)
			}
		}
		return q
	}
	if rxModeOf(a, ^uint32(0)) != rxModeOf(b, ^uint32(0)) {
		return false
	}
	for _, queue := range slices.Concat(queues(a), queues(b)) {
		if rxModeOf(a, queue) != rxModeOf(b, queue) {
			return false
		}
	}
	return true
}

func (d *RxModes) set(iface *vpp_interfaces.Interface, modes []*vpp_interfaces.Interface_RxMode) error {
	conn, err := d.conn()
	if err == nil {
		var meta *InterfaceMetadata
		if meta, err = d.index.lookup(conn, iface.Name); err == nil {
			err = SetRxModes(context.Background(), conn, meta.Index, modes)
		}
	}
	if err != nil {
		return fmt.Errorf("rx modes of interface %s: %w", iface.Name, err)
	}
	return nil
}

// delete puts the queues back in VPP's default mode. A link gone down
// has no queues left, which VPP refuses: then there is nothing to undo.
func (d *RxModes) delete(_ string, iface *vpp_interfaces.Interface, _ kvs.Metadata) error {
	err := d.set(iface, []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: vpp_interfaces.Interface_RxMode_DEFAULT}})
	var refused *vppapi.VPPError
	if errors.As(err, &refused) || errors.Is(err, errStaleIndex) {
		return nil
	}
	return err
}

// SetRxModes applies a model's rx modes to a connected memif's queues: a
// default mode to all of them (queue_id_valid false), then each queue's
// own.
func SetRxModes(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, modes []*vpp_interfaces.Interface_RxMode) error {
	for _, mode := range modes {
		req := &vppmsg.SwInterfaceSetRxMode{SwIfIndex: index, Mode: vppmsg.RxMode(mode.Mode)}
		if !mode.DefaultMode {
			req.QueueIDValid, req.QueueID = true, mode.Queue
		}
		if err := request(ctx, conn, req, &vppmsg.SwInterfaceSetRxModeReply{}); err != nil {
			return fmt.Errorf("set rx mode %s: %w", mode.Mode, err)
		}
	}
	return nil
}
