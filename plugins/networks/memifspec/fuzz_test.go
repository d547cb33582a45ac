package memifspec

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// maxErrorLength bounds a refusal's message whatever the input.
const maxErrorLength = 600

// checkRefusal fails t unless err is a typed refusal of bounded length.
func checkRefusal(t *testing.T, input []byte, err error) {
	t.Helper()
	var specErr *Error
	if !errors.As(err, &specErr) || ReasonOf(err) == ReasonOther {
		t.Fatalf("refusal of %q is not a typed *Error: %v", input, err)
	}
	if len(err.Error()) > maxErrorLength {
		t.Fatalf("refusal of %d input bytes is %d bytes long: %.200s", len(input), len(err.Error()), err)
	}
}

// checkResolves fails t if resolving spec panics or refuses it untyped.
func checkResolves(t *testing.T, spec Spec) {
	t.Helper()
	if _, err := spec.Resolve(networks); err != nil {
		checkRefusal(t, nil, err)
	}
}

// FuzzDecodeAnnotation checks that no annotation value panics the decoder,
// that every refusal is typed and bounded, and that what it accepts is
// checked and written back out decodes to the same specs.
func FuzzDecodeAnnotation(f *testing.F) {
	f.Add("[" + fullSpec + "]")
	f.Add(`[{"network": "lab", "mode": "ethernet", "mac": "02:fe:00:00:00:01", "container": "app", "memif-id": 1}]`)
	f.Fuzz(func(t *testing.T, value string) {
		specs, err := DecodeAnnotation(value)
		if err != nil {
			checkRefusal(t, []byte(value), err)
			return
		}
		written, err := json.Marshal(append([]Spec{}, specs...))
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeAnnotation(string(written))
		if err != nil || !reflect.DeepEqual(again, specs) {
			t.Fatalf("DecodeAnnotation(%q) = %+v; its written form %s decodes to %+v, %v", value, specs, written, again, err)
		}
		for _, spec := range specs {
			if err := spec.Check(); err != nil {
				t.Fatalf("DecodeAnnotation(%q) accepted %+v, which Check refuses: %v", value, spec, err)
			}
			checkResolves(t, spec)
		}
	})
}

// FuzzDecodeConfig does the same for a DRA claim's opaque config.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", ` + fullSpec[1:]))
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, err := DecodeConfig(raw)
		if err != nil {
			checkRefusal(t, raw, err)
			return
		}
		written, err := json.Marshal(MemifConfig{APIVersion: APIVersion, Kind: Kind, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeConfig(written)
		if err != nil || !reflect.DeepEqual(again, spec) {
			t.Fatalf("DecodeConfig(%q) = %+v; its written form %s decodes to %+v, %v", raw, spec, written, again, err)
		}
		checkResolves(t, spec)
	})
}
