package nodeapi

import (
	"io/fs"
	"testing"

	"github.com/ligato/cn-infra/config"

	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	var cfg Config
	if err := config.ParseConfigFromYamlFile("nodeapi.conf", &cfg); err != nil {
		t.Fatalf("parse nodeapi.conf: %v", err)
	}
	got, err := cfg.serverConfig()
	if err != nil {
		t.Fatalf("nodeapi.conf: %v", err)
	}
	want := server.Config{SocketPath: server.DefaultSocketPath, SocketMode: server.DefaultSocketMode}
	if got != want || cfg.WatchBuffer != server.DefaultWatchBuffer {
		t.Errorf("nodeapi.conf = %+v (watch buffer %d), want the defaults %+v", got, cfg.WatchBuffer, want)
	}
}

func TestConfigSocketGroup(t *testing.T) {
	for _, tc := range []struct {
		group   string
		wantErr bool
	}{
		{"", false},
		{"nogroup", false},
		{"65534", false},
		{"no-such-group-here", true},
	} {
		t.Run(tc.group, func(t *testing.T) {
			_, err := Config{SocketGroup: tc.group}.serverConfig()
			if (err != nil) != tc.wantErr {
				t.Errorf("serverConfig(socket-group %q) = %v, want error: %v", tc.group, err, tc.wantErr)
			}
		})
	}
}

func TestConfigSocketMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     string
		wantMode fs.FileMode
		wantErr  bool
	}{
		{"unset", "", 0, false},
		{"owner only", "0600", 0o600, false},
		{"group", "660", 0o660, false},
		{"not octal", "0689", 0, true},
		{"too many bits", "01777", 0, true},
		{"words", "rw-------", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Config{SocketMode: tc.mode}.serverConfig()
			if (err != nil) != tc.wantErr {
				t.Fatalf("serverConfig(%q) error = %v, want error: %v", tc.mode, err, tc.wantErr)
			}
			if got.SocketMode != tc.wantMode {
				t.Errorf("mode = %v, want %v", got.SocketMode, tc.wantMode)
			}
		})
	}
}
