package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	cfg := eventloop.DefaultConfig()
	if err := configfile.Load("controller.conf", &cfg); err != nil {
		t.Fatalf("load the example config: %v", err)
	}
	if cfg != eventloop.DefaultConfig() {
		t.Errorf("example config = %+v, want the defaults %+v", cfg, eventloop.DefaultConfig())
	}
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantErr   string // part of the error; "" for none
		wantQueue int
		wantDelay time.Duration
	}{
		{name: "empty file gives defaults", yaml: "", wantQueue: 100, wantDelay: time.Second},
		{name: "keys override defaults", yaml: "event-queue-size: 7\nhealing-delay: 250ms\n", wantQueue: 7,
			wantDelay: 250 * time.Millisecond},
		{name: "misspelt key", yaml: "event-queue-sise: 7\n", wantErr: `config key "event-queue-sise": unknown key`},
		{name: "invalid value names the key", yaml: "event-queue-size: 0\n", wantErr: "event-queue-size"},
		{name: "bad duration", yaml: "healing-delay: soon\n",
			wantErr: `config key "healing-delay": want a duration such as "30s", got "soon"`},
		{name: "not YAML", yaml: "event-queue-size: [\n", wantErr: "YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "controller.conf")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := eventloop.DefaultConfig()
			err := configfile.Load(path, &cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Errorf("Load = %v, want an error naming %q and the file", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.QueueSize != tc.wantQueue || time.Duration(cfg.HealingDelay) != tc.wantDelay {
				t.Errorf("config = %+v, want queue %d, healing delay %s", cfg, tc.wantQueue, tc.wantDelay)
			}
		})
	}
}
