package descriptor

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/gogo/protobuf/proto"

	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// ConnFunc returns the current connection to VPP, or vppapi.ErrNotConnected.
type ConnFunc func() (*vppapi.Conn, error)

// model is what a descriptor takes from a registered vpp-agent model.
type model interface {
	KeyPrefix() string
	ProtoName() string
	IsKeyValid(key string) bool
	StripKeyPrefix(key string) string
}

// withModel fills in the fields by which the KV scheduler matches the
// model's keys and values, the same for every model descriptor, and keeps
// a value that is not there from the descriptor's Validate.
func withModel(m model, descriptor *kvs.KVDescriptor) *kvs.KVDescriptor {
	descriptor.NBKeyPrefix = m.KeyPrefix()
	descriptor.ValueTypeName = m.ProtoName()
	descriptor.KeySelector = m.IsKeyValid
	descriptor.KeyLabel = m.StripKeyPrefix
	if validate := descriptor.Validate; validate != nil {
		descriptor.Validate = func(key string, value proto.Message) error {
			if value == nil || reflect.ValueOf(value).IsNil() {
				return fmt.Errorf("%s: %w", key, errNoValue)
			}
			return validate(key, value)
		}
	}
	return descriptor
}

// errNoValue: the KV scheduler asked to validate a key without its value,
// as it does when it re-applies the dependents of a value another
// transaction removed; the descriptors' checks would panic on it, and the
// agent with them.
var errNoValue = errors.New("no value to validate")

// allInterfaces selects every interface in sw_interface_dump.
const allInterfaces = ^vppmsg.InterfaceIndex(0)

// vppState is VPP's memif view: its socket filenames, its memifs and its
// interfaces, each by index.
type vppState struct {
	sockets    map[uint32]string
	memifs     map[vppmsg.InterfaceIndex]*vppmsg.MemifDetails
	interfaces map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceDetails
}

func readState(ctx context.Context, conn *vppapi.Conn) (*vppState, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return nil, fmt.Errorf("dump VPP memif sockets: %w", err)
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, conn, &vppmsg.MemifDump{})
	if err != nil {
		return nil, fmt.Errorf("dump VPP memifs: %w", err)
	}
	interfaces, err := vppapi.Dump[vppmsg.SwInterfaceDetails](ctx, conn, &vppmsg.SwInterfaceDump{SwIfIndex: allInterfaces})
	if err != nil {
		return nil, fmt.Errorf("dump VPP interfaces: %w", err)
	}
	state := &vppState{sockets: map[uint32]string{}, memifs: map[vppmsg.InterfaceIndex]*vppmsg.MemifDetails{},
		interfaces: map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceDetails{}}
	for _, socket := range sockets {
		state.sockets[socket.SocketID] = socket.SocketFilename
	}
	for _, memif := range memifs {
		state.memifs[memif.SwIfIndex] = memif
	}
	for _, iface := range interfaces {
		state.interfaces[iface.SwIfIndex] = iface
	}
	return state, nil
}

// byName returns the index of the agent's interface name.
func (s *vppState) byName(name string) (vppmsg.InterfaceIndex, bool) {
	tag := owner.Tag(name)
	for index, iface := range s.interfaces {
		if iface.Tag == tag {
			return index, true
		}
	}
	return 0, false
}

// metadata is the scheduler's metadata of the interface at index.
func (s *vppState) metadata(conn *vppapi.Conn, index vppmsg.InterfaceIndex) *InterfaceMetadata {
	meta := &InterfaceMetadata{Index: index, connection: conn.Generation()}
	if memif := s.memifs[index]; memif != nil {
		meta.SocketID, meta.socket = memif.SocketID, s.sockets[memif.SocketID]
	}
	return meta
}

func request(ctx context.Context, conn *vppapi.Conn, req vppmsg.Request, reply vppmsg.Reply) error {
	if err := conn.Request(ctx, req, reply); err != nil {
		return fmt.Errorf("VPP %s: %w", req.MessageName(), err)
	}
	return nil
}
