package checkpoint

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode checks that no file content panics Decode, that every refusal
// is a *CorruptError, and that what Decode accepts survives a round trip.
func FuzzDecode(f *testing.F) {
	valid, err := Encode(sampleData())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Fuzz(func(t *testing.T, content []byte) {
		data, err := Decode("fuzz", content)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := Encode(data)
		if err != nil {
			t.Fatalf("Encode of decoded data: %v", err)
		}
		roundTrip, err := Decode("fuzz", again)
		if err != nil {
			t.Fatalf("Decode of re-encoded data: %v", err)
		}
		if len(data.Allocations) == 0 && len(roundTrip.Allocations) == 0 {
			return
		}
		if !reflect.DeepEqual(roundTrip, data) {
			t.Fatalf("round trip changed the data: %+v != %+v", roundTrip, data)
		}
	})
}
