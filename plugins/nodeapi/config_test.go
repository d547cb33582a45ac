package nodeapi

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

func TestExampleConfigIsTheDefaults(t *testing.T) {
	cfg := DefaultConfig()
	if err := configfile.Load("nodeapi.conf", &cfg); err != nil {
		t.Fatalf("parse nodeapi.conf: %v", err)
	}
	if cfg != DefaultConfig() {
		t.Errorf("nodeapi.conf = %+v, want the defaults %+v", cfg, DefaultConfig())
	}
	want := server.Config{SocketPath: memifv1.DefaultSocketPath, SocketMode: server.DefaultSocketMode}
	if got := cfg.serverConfig(); got != want {
		t.Errorf("server config of nodeapi.conf = %+v, want %+v", got, want)
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
			if got := cfg.serverConfig(); got.SocketMode != tc.wantMode {
				t.Errorf("serverConfig(%q) = mode %v, want mode %v", tc.yaml, got.SocketMode, tc.wantMode)
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
		{"negative watch buffer", Config{WatchBuffer: -1}, "watch-buffer"},
		{"negative max watchers", Config{MaxWatchers: -1}, "max-watchers"},
		{"negative max watchers per user", Config{MaxWatchersPerUser: -1}, "max-watchers-per-user"},
		{"group with a colon", Config{SocketGroup: "a:b"}, "socket-group"},
		{"negative group ID", Config{SocketGroup: "-5"}, "socket-group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) || keyErr.Key != tc.wantKey {
				t.Errorf("Validate(%+v) = %v, want a *configfile.KeyError naming %s", tc.cfg, err, tc.wantKey)
			}
		})
	}
}

// TestConfigSocketGroup: socket-group takes what dir-group takes, a name
// or a numeric ID, quoted or not.
func TestConfigSocketGroup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		yaml      string
		wantGroup string
		wantErr   string // part of the error; "" for none
	}{
		{"unset", "", "", ""},
		{"name", "socket-group: memif", "memif", ""},
		{"quoted ID", `socket-group: "1234"`, "1234", ""},
		{"bare ID", "socket-group: 1234", "1234", ""},
		{"negative ID", `socket-group: "-5"`, "", `config key "socket-group": must be a group name or a non-negative ID`},
		{"a list", "socket-group: [a]", "", `config key "socket-group": must be a group name or a numeric ID`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			err := configfile.Decode([]byte(tc.yaml), &cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode(%q) = %v, want an error containing %q", tc.yaml, err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.serverConfig().SocketGroup != tc.wantGroup {
				t.Errorf("Decode(%q) = group %q, %v; want %q", tc.yaml, cfg.serverConfig().SocketGroup, err, tc.wantGroup)
			}
		})
	}
}
