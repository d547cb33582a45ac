package memifspec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fullSpec is the example spec.
const fullSpec = `{"network": "red", "container": "app", "memif-id": 0, "mode": "ip", "queues": 2, "ring-size": 1024, "buffer-size": 2048, "rx-mode": "polling", "mtu": 9000, "ips": ["10.70.0.11/24"]}`

func TestDecodeAnnotation(t *testing.T) {
	full := Spec{Network: "red", Container: "app", Mode: ModeIP, Queues: 2, RingSize: 1024, BufferSize: 2048, RxMode: "polling", MTU: 9000, IPs: []string{"10.70.0.11/24"}}
	for _, tc := range []struct {
		name, value string
		want        []Spec
		wantReason  Reason
		wantMsg     string
	}{
		{name: "the issue's example", value: "[" + fullSpec + "]", want: []Spec{full}},
		{name: "network only", value: `[{"network": "lab"}]`, want: []Spec{{Network: "lab"}}},
		{name: "empty list", value: `[]`},
		{name: "two memifs of a container", value: `[{"network": "red"}, {"network": "lab", "memif-id": 1}]`,
			want: []Spec{{Network: "red"}, {Network: "lab", MemifID: 1}}},
		{name: "memif 0 of two containers", value: `[{"network": "red", "container": "a"}, {"network": "lab", "container": "b"}]`,
			want: []Spec{{Network: "red", Container: "a"}, {Network: "lab", Container: "b"}}},
		{name: "ethernet with a MAC", value: `[{"network": "lab", "mode": "ethernet", "mac": "02:fe:00:00:00:01"}]`,
			want: []Spec{{Network: "lab", Mode: ModeEthernet, MAC: "02:fe:00:00:00:01"}}},
		{name: "null is unset", value: `[{"network": "lab", "queues": null}]`, want: []Spec{{Network: "lab"}}},
		{name: "largest limits", value: `[{"network": "lab", "queues": 255, "ring-size": 16384, "buffer-size": 65535, "mtu": 9216}]`,
			want: []Spec{{Network: "lab", Queues: 255, RingSize: 16384, BufferSize: 65535, MTU: 9216}}},

		{name: "not JSON", value: `red`, wantReason: ReasonMalformed, wantMsg: "must be a JSON list"},
		{name: "a comma-separated list", value: `red,lab`, wantReason: ReasonMalformed, wantMsg: "must be a JSON list"},
		{name: "an object", value: `{"network": "red"}`, wantReason: ReasonMalformed, wantMsg: "it starts with {"},
		{name: "a list of strings", value: `["red"]`, wantReason: ReasonMalformed, wantMsg: "entry 1: want a JSON object"},
		{name: "cut short", value: `[{"network": "red"}`, wantReason: ReasonMalformed, wantMsg: "it ends too early"},
		{name: "trailing data", value: `[{"network": "red"}] x`, wantReason: ReasonMalformed, wantMsg: "data after the end"},
		{name: "two lists", value: `[] []`, wantReason: ReasonMalformed, wantMsg: "data after the end"},
		{name: "unknown field", value: `[{"network": "red", "vlan": 3}]`, wantReason: ReasonMalformed, wantMsg: `unknown field "vlan"; the fields are buffer-size, container, ips, mac`},
		{name: "field in another case", value: `[{"Network": "red"}]`, wantReason: ReasonMalformed, wantMsg: `unknown field "Network"`},
		{name: "field twice", value: `[{"network": "red", "network": "lab"}]`, wantReason: ReasonMalformed, wantMsg: `field "network": given twice`},
		{name: "no network", value: `[{"mode": "ip"}]`, wantReason: ReasonMalformed, wantMsg: `field "network": a network name is required`},
		{name: "bad network name", value: `[{"network": "Red"}]`, wantReason: ReasonMalformed, wantMsg: "lower-case letters"},
		{name: "bad container name", value: `[{"network": "red", "container": "../app"}]`, wantReason: ReasonMalformed, wantMsg: `want a container name`},
		{name: "negative queues", value: `[{"network": "red", "queues": -1}]`, wantReason: ReasonMalformed, wantMsg: `field "queues": want a whole number from 0 to 4294967295, got "-1"`},
		{name: "fractional mtu", value: `[{"network": "red", "mtu": 1500.5}]`, wantReason: ReasonMalformed, wantMsg: "want a whole number"},
		{name: "number as a string", value: `[{"network": "red", "queues": "2"}]`, wantReason: ReasonMalformed, wantMsg: "want a whole number"},
		{name: "ips not a list", value: `[{"network": "red", "ips": "10.70.0.11/24"}]`, wantReason: ReasonMalformed, wantMsg: "want a list of strings"},
		{name: "bad mode", value: `[{"network": "red", "mode": "punt"}]`, wantReason: ReasonMalformed, wantMsg: `want ip or ethernet, got "punt"`},
		{name: "bad rx mode", value: `[{"network": "red", "rx-mode": "fast"}]`, wantReason: ReasonMalformed, wantMsg: "want polling, interrupt or adaptive"},
		{name: "too many queues", value: `[{"network": "red", "queues": 256}]`, wantReason: ReasonTooManyQueues, wantMsg: "at most 255 queue pairs, got 256"},
		{name: "ring size not a power of two", value: `[{"network": "red", "ring-size": 1000}]`, wantReason: ReasonBadRingSize, wantMsg: "power of two from 1 to 16384"},
		{name: "ring size too large", value: `[{"network": "red", "ring-size": 32768}]`, wantReason: ReasonBadRingSize},
		{name: "buffer size too large", value: `[{"network": "red", "buffer-size": 65536}]`, wantReason: ReasonBadBufferSize},
		{name: "mtu too small", value: `[{"network": "red", "mtu": 100}]`, wantReason: ReasonBadMTU, wantMsg: "want from 576 to 9216"},
		{name: "mtu too large", value: `[{"network": "red", "mtu": 9217}]`, wantReason: ReasonBadMTU},
		{name: "bad MAC", value: `[{"network": "lab", "mac": "02:fe"}]`, wantReason: ReasonMalformed, wantMsg: "want a MAC address"},
		{name: "EUI-64 MAC", value: `[{"network": "lab", "mac": "02:00:00:00:00:00:00:01"}]`, wantReason: ReasonMalformed, wantMsg: "want a MAC address"},
		{name: "multicast MAC", value: `[{"network": "lab", "mac": "01:00:5e:00:00:01"}]`, wantReason: ReasonBadMAC, wantMsg: "multicast"},
		{name: "zero MAC", value: `[{"network": "lab", "mac": "00:00:00:00:00:00"}]`, wantReason: ReasonBadMAC, wantMsg: "all-zero"},
		{name: "address without length", value: `[{"network": "red", "ips": ["10.70.0.11"]}]`, wantReason: ReasonMalformed, wantMsg: "want an address with the subnet's prefix length"},
		{name: "two addresses", value: `[{"network": "red", "ips": ["10.70.0.11/24", "10.70.0.12/24"]}]`, wantReason: ReasonTooManyAddresses},
		{name: "one memif twice", value: `[{"network": "red"}, {"network": "lab"}]`, wantReason: ReasonDuplicateMemif, wantMsg: "entry 2, field \"memif-id\": memif 0 of every container in network lab is also entry 1's"},
		{name: "one container's memif twice", value: `[{"network": "red", "container": "app"}, {"network": "lab", "memif-id": 0}]`, wantReason: ReasonDuplicateMemif},
		{name: "too large", value: `[{"network": "red", "container": "` + strings.Repeat("a", MaxInputBytes) + `"}]`, wantReason: ReasonMalformed, wantMsg: "at most 16384"},
		{name: "too many", value: manySpecs(MaxSpecs + 1), wantReason: ReasonMalformed, wantMsg: "more than 64 memifs"},
		{name: "long value cut", value: `[{"network": "red", "mode": "` + strings.Repeat("x", 1000) + `"}]`, wantReason: ReasonMalformed, wantMsg: `... (1000 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeAnnotation(tc.value)
			if tc.wantReason == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("DecodeAnnotation(%s) = %+v, %v; want %+v", tc.value, got, err, tc.want)
				}
				return
			}
			var specErr *Error
			if !errors.As(err, &specErr) || specErr.Reason != tc.wantReason || ReasonOf(err) != tc.wantReason || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("DecodeAnnotation(%.80s) = %v, want reason %s and %q", tc.value, err, tc.wantReason, tc.wantMsg)
			}
			if len(err.Error()) > 400 {
				t.Errorf("the error repeats too much of the input: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestDecodeAnnotationTakesMaxSpecs(t *testing.T) {
	if specs, err := DecodeAnnotation(manySpecs(MaxSpecs)); err != nil || len(specs) != MaxSpecs {
		t.Fatalf("DecodeAnnotation of %d specs = %d specs, %v", MaxSpecs, len(specs), err)
	}
}

// manySpecs lists n specs of distinct memifs.
func manySpecs(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf(`{"network": "red", "memif-id": %d}`, i)
	}
	return "[" + strings.Join(specs, ",") + "]"
}

func TestDecodeConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         Spec
		wantReason   Reason
		wantMsg      string
	}{
		{name: "full", config: `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", ` + fullSpec[1:],
			want: Spec{Network: "red", Container: "app", Mode: ModeIP, Queues: 2, RingSize: 1024, BufferSize: 2048, RxMode: "polling", MTU: 9000, IPs: []string{"10.70.0.11/24"}}},
		{name: "network only", config: `{"kind": "MemifConfig", "network": "lab", "apiVersion": "memif.contivpp.io/v1alpha1"}`, want: Spec{Network: "lab"}},
		{name: "no type", config: `{"network": "lab"}`, wantReason: ReasonMalformed, wantMsg: `field "apiVersion": want memif.contivpp.io/v1alpha1, got ""`},
		{name: "another version", config: `{"apiVersion": "memif.contivpp.io/v1", "kind": "MemifConfig", "network": "lab"}`, wantReason: ReasonMalformed, wantMsg: "want memif.contivpp.io/v1alpha1"},
		{name: "another kind", config: `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "GpuConfig", "network": "lab"}`, wantReason: ReasonMalformed, wantMsg: `field "kind": want MemifConfig, got "GpuConfig"`},
		{name: "unknown field", config: `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", "network": "lab", "sharing": {}}`, wantReason: ReasonMalformed, wantMsg: `unknown field "sharing"; the fields are apiVersion, buffer-size`},
		{name: "a list", config: `[]`, wantReason: ReasonMalformed, wantMsg: "want a JSON object"},
		{name: "trailing", config: `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", "network": "lab"}{}`, wantReason: ReasonMalformed, wantMsg: "data after the end"},
		{name: "too many queues", config: `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", "network": "lab", "queues": 300}`, wantReason: ReasonTooManyQueues},
		{name: "too large", config: `{"apiVersion": "` + strings.Repeat("v", MaxInputBytes) + `"}`, wantReason: ReasonMalformed, wantMsg: "at most 16384"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeConfig([]byte(tc.config))
			if tc.wantReason == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("DecodeConfig(%s) = %+v, %v; want %+v", tc.config, got, err, tc.want)
				}
				return
			}
			if ReasonOf(err) != tc.wantReason || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("DecodeConfig(%.80s) = %v, want reason %s and %q", tc.config, err, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
