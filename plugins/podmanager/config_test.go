package podmanager

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestShippedConfigIsTheDefault(t *testing.T) {
	data, err := os.ReadFile(PluginName + ".conf")
	if err != nil {
		t.Fatalf("read shipped config: %v", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		t.Fatalf("parse shipped config: %v", err)
	}
	if cfg != DefaultConfig() {
		t.Errorf("shipped config %+v differs from the defaults %+v", cfg, DefaultConfig())
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(Config) bool
		wantErr string
	}{
		{name: "empty file gives defaults", yaml: "", check: func(c Config) bool { return c == DefaultConfig() }},
		{
			name:  "reconcile period",
			yaml:  "reconcile-period: 5s",
			check: func(c Config) bool { return c.ReconcilePeriod.Duration() == 5*time.Second },
		},
		{
			name:  "empty socket disables pod-resources",
			yaml:  `pod-resources-socket: ""`,
			check: func(c Config) bool { return c.PodResourcesSocket == "" },
		},
		{
			name:  "tcp docker endpoint",
			yaml:  "docker-endpoint: tcp://127.0.0.1:2375",
			check: func(c Config) bool { return c.DockerEndpoint == "tcp://127.0.0.1:2375" },
		},
		{name: "unknown key", yaml: "reconcile-periode: 5s", wantErr: `config key "reconcile-periode": unknown key`},
		{
			name:    "not a duration",
			yaml:    "reconcile-period: often",
			wantErr: `config key "reconcile-period": want a duration such as "30s", got "often"`,
		},
		{name: "zero period", yaml: "reconcile-period: 0s", wantErr: `config key "reconcile-period": must`},
		{name: "relative socket", yaml: "pod-resources-socket: kubelet.sock", wantErr: `config key "pod-resources-socket": must`},
		{name: "bad endpoint", yaml: "docker-endpoint: /var/run/docker.sock", wantErr: `config key "docker-endpoint": must`},
		{
			name:    "max backoff below min",
			yaml:    "docker-reconnect-min-backoff: 2s\ndocker-reconnect-max-backoff: 1s",
			wantErr: `config key "docker-reconnect-max-backoff": must`,
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(test.yaml))
			if test.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), test.wantErr) {
					t.Fatalf("ParseConfig(%q) error = %v, want one naming %q", test.yaml, err, test.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig(%q): %v", test.yaml, err)
			}
			if !test.check(cfg) {
				t.Errorf("ParseConfig(%q) = %+v", test.yaml, cfg)
			}
		})
	}
}
