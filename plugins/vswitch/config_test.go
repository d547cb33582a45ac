package vswitch

import (
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
)

func TestExampleConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := configfile.Load("vswitch.conf", &cfg); err != nil {
		t.Fatalf("vswitch.conf: %v", err)
	}
	if cfg.VPPAPISocket != "/run/vpp/api.sock" || cfg.RequestTimeout.Duration() != 5*time.Second {
		t.Errorf("vswitch.conf = %+v, want VPP's default API socket and a 5s timeout", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, wantErr string
	}{
		{"empty file: no VPP", "", ""},
		{"misspelt key", "vpp-socket: /run/vpp/api.sock\n", `config key "vpp-socket": unknown key`},
		{"relative socket", "vpp-api-socket: api.sock\n", `config key "vpp-api-socket": must be an absolute path, got "api.sock"`},
		{"zero timeout", "request-timeout: 0s\n", `config key "request-timeout": must be a positive duration`},
		{"negative link period", "link-check-period: -1s\n", `config key "link-check-period": must be a positive duration`},
		{"health check period", "health-check-period: 250ms\n", ""},
		{"zero health check period", "health-check-period: 0s\n", `config key "health-check-period": must be a positive duration`},
		{"link down grace", "link-down-grace: 2m\n", ""},
		{"zero link down grace", "link-down-grace: 0s\n", `config key "link-down-grace": must be a positive duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			err := configfile.Decode([]byte(tc.content), &cfg)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Decode(%q) = %v, want error containing %q", tc.content, err, tc.wantErr)
			}
		})
	}
}
