package netconf

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDecode checks that no networks.conf content panics Decode, that what
// it accepts is valid, written back out decodes to the same networks, and
// that Reconcile keeps it valid against the example.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(issueExample))
	f.Add([]byte("networks: [{name: a, type: l3, subnet: 10.0.0.0/30, id: 9, mtu: 1500}]\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		cfg, err := Decode(content)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Decode(%q) accepted an invalid config: %v", content, err)
		}
		written, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(written)
		if err != nil || again.DefaultNetwork != cfg.DefaultNetwork || !slices.Equal(again.Networks, cfg.Networks) {
			t.Fatalf("Decode(%q) = %+v; its written form %s decodes to %+v, %v", content, cfg, written, again, err)
		}
		example, _ := Decode([]byte(issueExample))
		inUse := map[string][]string{"red": {"default/a"}, "lab": {"default/b"}}
		for _, pair := range [][2]Config{{example, cfg}, {cfg, example}} {
			if result, _ := Reconcile(pair[0], pair[1], inUse); result.Validate() != nil {
				t.Fatalf("Reconcile(%+v, %+v) = %+v, invalid: %v", pair[0], pair[1], result, result.Validate())
			}
		}
	})
}
