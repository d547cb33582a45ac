package allfields

import (
	"slices"
	"testing"
	"time"
)

type inner struct{ Name string }

type record struct {
	ID      string
	IDs     []string
	At      time.Time
	Inner   inner
	Count   int
	Flag    bool
	skipped string
}

func TestFillLeavesNoFieldZero(t *testing.T) {
	var r record
	Fill(&r)
	if zero := Zero(r); len(zero) != 0 {
		t.Errorf("after Fill, fields %v are zero", zero)
	}
	if r.skipped != "" {
		t.Errorf("Fill set an unexported field")
	}
	if r.ID == r.Inner.Name {
		t.Errorf("two fields got the same value %q", r.ID)
	}
}

func TestZeroNamesTheZeroFields(t *testing.T) {
	r := record{ID: "x", Count: 1}
	if zero := Zero(&r); !slices.Equal(zero, []string{"IDs", "At", "Inner", "Flag"}) {
		t.Errorf("Zero = %v", zero)
	}
}
