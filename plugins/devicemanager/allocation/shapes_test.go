package allocation

import (
	"reflect"
	"slices"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/allfields"
)

// TestEveryFieldCrossesEveryShape: an allocation with every field set
// keeps them all through its checkpoint form and back, and shows them all
// in its API form. A field added to one shape and forgotten in a
// conversion fails here.
func TestEveryFieldCrossesEveryShape(t *testing.T) {
	var a Allocation
	allfields.Fill(&a)
	persisted := ToCheckpoint([]Allocation{a})
	if zero := allfields.Zero(persisted.Allocations[0]); len(zero) != 0 {
		t.Errorf("ToCheckpoint left %v unset", zero)
	}
	if back := FromCheckpoint(persisted); !reflect.DeepEqual(back, []Allocation{a}) {
		t.Errorf("FromCheckpoint(ToCheckpoint(a)) = %+v, want %+v", back, a)
	}
	// Networks are the memif wiring's, which the device manager adds to
	// the info; an allocation does not hold them.
	if zero := allfields.Zero(a.Info()); !slices.Equal(zero, []string{"Networks"}) {
		t.Errorf("Info left %v unset, want only the networks", zero)
	}
}
