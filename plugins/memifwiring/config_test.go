package memifwiring

import (
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
)

func TestExampleConfigIsValid(t *testing.T) {
	var cfg wiring.Config
	if err := configfile.Load("memifwiring.conf", &cfg); err != nil {
		t.Fatalf("memifwiring.conf: %v", err)
	}
	if cfg.MTU != 9000 || cfg.RxMode != "polling" || len(cfg.IPAddresses) != 1 {
		t.Errorf("memifwiring.conf = %+v, want MTU 9000, polling and one address entry", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, wantErr string
	}{
		{"empty file", "", ""},
		{"misspelt key", "mtuu: 9000\n", `config key "mtuu": unknown key`},
		{"negative MTU", "mtu: -1\n", `config key "mtu": want a whole number from 0 to 4294967295, got -1`},
		{"addresses not a list", "ip-addresses: {a/b/c: 10.0.0.1/24}\n", `config key "ip-addresses": want a list`},
		{"bad rx mode", "rx-mode: fast\n", `invalid rx-mode "fast"`},
		{"not YAML", "mtu: [\n", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg wiring.Config
			err := configfile.Decode([]byte(tc.content), &cfg)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Decode(%q) = %v, want error containing %q", tc.content, err, tc.wantErr)
			}
		})
	}
}
