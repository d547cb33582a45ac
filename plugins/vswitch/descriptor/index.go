package descriptor

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ligato/cn-infra/idxmap"
	"github.com/ligato/cn-infra/idxmap/mem"
	"github.com/ligato/cn-infra/logging"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// InterfaceMetadata is what the KV scheduler keeps of each interface the
// Interfaces descriptor made or found, by interface name: its create and
// Retrieve return it, and the other descriptors look interfaces up in it
// instead of dumping VPP's interfaces at every operation.
type InterfaceMetadata struct {
	// Index is VPP's sw_if_index.
	Index vppmsg.InterfaceIndex
	// SocketID is a memif's socket filename ID in VPP; 0 for a loopback.
	SocketID uint32

	// socket is a memif's socket filename.
	socket string
	// connection is the Generation of the connection over which VPP
	// reported Index: after a reconnection VPP may have restarted and
	// given it to another interface.
	connection uint64
}

// errStaleIndex: the scheduler's index predates the current connection.
var errStaleIndex = errors.New("VPP reconnected since it reported the interface; the resync after reconnection makes it again")

// Secondary keys of the interface metadata map.
const (
	indexField  = "sw-if-index"
	socketField = "memif-socket"
)

func newInterfaceMap() idxmap.NamedMappingRW {
	return mem.NewNamedMapping(logging.DefaultLogger, InterfaceDescriptorName, func(item interface{}) map[string][]string {
		meta := item.(*InterfaceMetadata)
		fields := map[string][]string{indexField: {strconv.FormatUint(uint64(meta.Index), 10)}}
		if meta.socket != "" {
			fields[socketField] = []string{meta.socket}
		}
		return fields
	})
}

// InterfaceIndex reads the interface metadata the KV scheduler holds. It
// is safe from any goroutine; it sees each create at once, so a value that
// depends on an interface finds it in the same transaction.
type InterfaceIndex struct {
	names idxmap.NamedMapping
}

// Lookup returns the metadata of the interface name.
func (x InterfaceIndex) Lookup(name string) (*InterfaceMetadata, bool) {
	value, found := x.names.GetValue(name)
	if !found {
		return nil, false
	}
	meta, ok := value.(*InterfaceMetadata)
	return meta, ok
}

// Name returns the name of the interface VPP knows as index.
func (x InterfaceIndex) Name(index vppmsg.InterfaceIndex) (string, bool) {
	names := x.names.ListNames(indexField, strconv.FormatUint(uint64(index), 10))
	if len(names) != 1 {
		return "", false
	}
	return names[0], true
}

// lookup returns the metadata of the interface name, which must exist
// and have been reported over conn.
func (x InterfaceIndex) lookup(conn *vppapi.Conn, name string) (*InterfaceMetadata, error) {
	meta, found := x.Lookup(name)
	switch {
	case !found:
		return nil, fmt.Errorf("the KV scheduler holds no interface %s", name)
	case meta.connection != conn.Generation():
		return nil, fmt.Errorf("interface %s: %w", name, errStaleIndex)
	}
	return meta, nil
}

// socketUsers returns the names of the memifs on socket filename.
func (x InterfaceIndex) socketUsers(filename string) []string {
	return x.names.ListNames(socketField, filename)
}
