package nodeapi

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	var cfg Config
	if err := configfile.Load("nodeapi.conf", &cfg); err != nil {
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

func TestConfigSocketMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yaml     string
		wantMode fs.FileMode
		wantErr  string // part of the error; "" for none
	}{
		{"unset", "", 0, ""},
		{"empty", `socket-mode: ""`, 0, ""},
		{"owner only", `socket-mode: "0600"`, 0o600, ""},
		{"group", `socket-mode: "660"`, 0o660, ""},
		{"not octal", `socket-mode: "0689"`, 0, `config key "socket-mode": want quoted octal permission bits`},
		{"too many bits", `socket-mode: "01777"`, 0, `config key "socket-mode"`},
		{"words", `socket-mode: "rw-------"`, 0, `config key "socket-mode"`},
		{"bare number", `socket-mode: 0600`, 0, `config key "socket-mode": want quoted octal`},
		{"misspelt key", `socket-mod: "0600"`, 0, `config key "socket-mod": unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			err := configfile.Decode([]byte(tc.yaml), &cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode(%q) = %v, want an error containing %q", tc.yaml, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q): %v", tc.yaml, err)
			}
			got, err := cfg.serverConfig()
			if err != nil || got.SocketMode != tc.wantMode {
				t.Errorf("serverConfig(%q) = mode %v, %v; want mode %v", tc.yaml, got.SocketMode, err, tc.wantMode)
			}
		})
	}
}

func TestConfigRefusesHostileValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantKey string
	}{
		{"world-connectable socket", Config{SocketMode: 0o666}, "socket-mode"},
		{"others may connect", Config{SocketMode: 0o602}, "socket-mode"},
		{"relative socket path", Config{SocketPath: "api.sock"}, "socket-path"},
		{"traversing relative socket path", Config{SocketPath: "../../tmp/api.sock"}, "socket-path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cfg.serverConfig(); err == nil || !strings.Contains(err.Error(), tc.wantKey) {
				t.Errorf("serverConfig(%+v) = %v, want an error naming %s", tc.cfg, err, tc.wantKey)
			}
		})
	}
}
