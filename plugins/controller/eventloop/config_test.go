package eventloop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantKey string // "" for valid
	}{
		{name: "defaults are valid", change: func(*Config) {}},
		{name: "queue size zero", change: func(c *Config) { c.QueueSize = 0 }, wantKey: "event-queue-size"},
		{name: "admission queue size zero", change: func(c *Config) { c.AdmissionQueueSize = 0 }, wantKey: "admission-queue-size"},
		{name: "admission queue size beyond memory", change: func(c *Config) { c.AdmissionQueueSize = MaxQueueSize + 1 }, wantKey: "admission-queue-size"},
		{name: "history size negative", change: func(c *Config) { c.HistorySize = -1 }, wantKey: "event-history-size"},
		{name: "queue size beyond memory", change: func(c *Config) { c.QueueSize = 1e12 }, wantKey: "event-queue-size"},
		{name: "history size beyond memory", change: func(c *Config) { c.HistorySize = MaxHistorySize + 1 }, wantKey: "event-history-size"},
		{name: "healing delay zero", change: func(c *Config) { c.HealingDelay = 0 }, wantKey: "healing-delay"},
		{name: "max delay below delay", change: func(c *Config) { c.HealingMaxDelay = configfile.Duration(time.Millisecond) },
			wantKey: "healing-max-delay"},
		{name: "commit timeout zero", change: func(c *Config) { c.CommitTimeout = 0 }, wantKey: "commit-timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.change(&cfg)
			err := cfg.Validate()
			switch {
			case tc.wantKey == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantKey != "" && !strings.Contains(fmt.Sprint(err), fmt.Sprintf("config key %q: must", tc.wantKey)):
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.wantKey)
			}
		})
	}
}

func TestConfigValidateReportsEveryKey(t *testing.T) {
	cfg := DefaultConfig()
	cfg.QueueSize = 0
	cfg.CommitTimeout = 0
	err := cfg.Validate()
	for _, key := range []string{"event-queue-size", "commit-timeout"} {
		if !strings.Contains(fmt.Sprint(err), fmt.Sprintf("config key %q", key)) {
			t.Errorf("Validate() = %v, want it to name %s", err, key)
		}
	}
}

func TestConfigDurationsAreStrings(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    time.Duration
		wantErr bool
	}{
		{name: "seconds", json: `{"healing-delay": "2s"}`, want: 2 * time.Second},
		{name: "milliseconds", json: `{"healing-delay": "250ms"}`, want: 250 * time.Millisecond},
		{name: "bare number refused", json: `{"healing-delay": 5}`, wantErr: true},
		{name: "garbage refused", json: `{"healing-delay": "soon"}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			err := json.Unmarshal([]byte(tc.json), &cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("unmarshal %s: %v, want error %v", tc.json, err, tc.wantErr)
			}
			if !tc.wantErr && time.Duration(cfg.HealingDelay) != tc.want {
				t.Errorf("healing-delay = %s, want %s", cfg.HealingDelay, tc.want)
			}
		})
	}
}
