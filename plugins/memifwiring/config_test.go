package memifwiring

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestExampleConfigIsValid(t *testing.T) {
	cfg, err := loadConfig("memifwiring.conf")
	if err != nil {
		t.Fatalf("memifwiring.conf: %v", err)
	}
	if cfg.MTU != 9000 || cfg.RxMode != "polling" || len(cfg.IPAddresses) != 1 {
		t.Errorf("memifwiring.conf = %+v, want MTU 9000, polling and one address entry", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, wantErr string
	}{
		{"empty file", "", ""},
		{"misspelt key", "mtuu: 9000\n", `unknown field "mtuu"`},
		{"bad rx mode", "rx-mode: fast\n", `invalid rx-mode "fast"`},
		{"not YAML", "mtu: [\n", "parse YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tc.content))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("parseConfig(%q) = %v, want error containing %q", tc.content, err, tc.wantErr)
			}
		})
	}
}

func TestMissingConfigFileIsAnError(t *testing.T) {
	if _, err := loadConfig(t.TempDir() + "/none.conf"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loadConfig of a missing file = %v, want a not-exist error", err)
	}
}
