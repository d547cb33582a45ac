package descriptor

import (
	"errors"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
)

// TestValidateWithoutAValue: the KV scheduler may validate a key whose
// value another transaction removed (nil) as it re-applies that value's
// dependents. Each descriptor refuses it with errNoValue; before, a route's
// Validate panicked on it and took the agent down at a restart.
func TestValidateWithoutAValue(t *testing.T) {
	noConn := func() (*vppapi.Conn, error) { return nil, vppapi.ErrNotConnected }
	interfaces := NewInterfaces(noConn)
	for _, tc := range []struct {
		descriptor *kvs.KVDescriptor
		typedNil   proto.Message
	}{
		{interfaces.Descriptor(), (*vpp_interfaces.Interface)(nil)},
		{NewBridgeDomains(noConn, interfaces.Index()).Descriptor(), (*vpp_l2.BridgeDomain)(nil)},
		{NewXConnects(noConn, interfaces.Index()).Descriptor(), (*vpp_l2.XConnectPair)(nil)},
		{NewVrfTables(noConn).Descriptor(), (*vpp_l3.VrfTable)(nil)},
		{NewRoutes(noConn, interfaces.Index()).Descriptor(), (*vpp_l3.Route)(nil)},
	} {
		t.Run(tc.descriptor.Name, func(t *testing.T) {
			for _, value := range []proto.Message{nil, tc.typedNil} {
				if err := tc.descriptor.Validate(tc.descriptor.NBKeyPrefix+"x", value); !errors.Is(err, errNoValue) {
					t.Errorf("Validate(%#v) = %v, want errNoValue", value, err)
				}
			}
		})
	}
}
