package server

import (
	"slices"
	"testing"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kit/allfields"
)

// TestEveryFieldReachesTheAPI: a MemifInfo with every field set gives a
// protobuf allocation with every field set (the secret only when asked
// for). A field added to one shape and forgotten here fails.
func TestEveryFieldReachesTheAPI(t *testing.T) {
	var info dmapi.MemifInfo
	allfields.Fill(&info)
	if zero := allfields.Zero(toAllocation(info, true)); len(zero) != 0 {
		t.Errorf("toAllocation left %v unset", zero)
	}
	if zero := allfields.Zero(toAllocation(info, false)); !slices.Equal(zero, []string{"Secret"}) {
		t.Errorf("toAllocation without secrets left %v unset, want only the secret", zero)
	}
	if networks := toAllocation(info, false).Networks; len(networks) != 1 {
		t.Errorf("toAllocation gave %d networks, want the 1 of the info", len(networks))
	} else if zero := allfields.Zero(networks[0]); len(zero) != 0 {
		t.Errorf("toAllocation left %v of a memif's network unset", zero)
	}
}
