package configfile

import (
	"encoding/json"
	"fmt"
	"testing"
)

// FuzzDecode checks that no config file content panics Decode and that what
// Decode accepts, written back out, decodes to the same config.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("count: 4\nperiod: 30s\nmode: \"0640\"\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		cfg := defaultExample()
		if err := Decode(content, &cfg); err != nil {
			return
		}
		written, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("write back %+v: %v", cfg, err)
		}
		again := defaultExample()
		if err := Decode(written, &again); err != nil {
			t.Fatalf("Decode(%q) accepted, its written form %s refused: %v", content, written, err)
		}
		if fmt.Sprint(again) != fmt.Sprint(cfg) {
			t.Fatalf("Decode(%q) = %+v, its written form %s decodes to %+v", content, cfg, written, again)
		}
	})
}
