package nodeapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/needs"
)

func TestPluginServesOnConfiguredSocketUntilClose(t *testing.T) {
	loop, devices := startController(t)
	socket := filepath.Join(t.TempDir(), "run", "api.sock")
	plugin := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, "socket-path: "+socket+"\nsocket-mode: \"0660\"\n")
		deps.DeviceManager = devices
		deps.Controller = loop
	}))
	if err := plugin.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if err := plugin.AfterInit(); err != nil {
		t.Fatalf("AfterInit: %v", err)
	}
	info, err := os.Stat(socket)
	if err != nil {
		t.Fatalf("socket after AfterInit: %v", err)
	}
	if info.Mode().Perm() != 0o660 {
		t.Errorf("socket mode = %v, want 0660 from the config", info.Mode().Perm())
	}
	if _, err := dial(t, socket).ListAllocations(t.Context(), &memifv1.ListAllocationsRequest{}); err != nil {
		t.Errorf("ListAllocations on the configured socket: %v", err)
	}
	if err := plugin.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v, want it removed", err)
	}
}

func writeConfig(t *testing.T, conf string) configfile.File {
	t.Helper()
	confPath := filepath.Join(t.TempDir(), "nodeapi.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return configfile.File(confPath)
}

func TestPluginInitRefusesBadConfig(t *testing.T) {
	plugin := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, "socket-mode: \"rw\"\n")
		deps.DeviceManager = devicemanagertest.New(t, nil)
	}))
	err := plugin.Init()
	if err == nil || !strings.Contains(err.Error(), `config key "socket-mode"`) {
		t.Fatalf("Init = %v, want an error naming socket-mode", err)
	}
}

func TestPluginSocketGroup(t *testing.T) {
	for _, tc := range []struct {
		name, group string
		wantErr     string // part of AfterInit's error; "" for none
	}{
		{"none", "", ""},
		{"by name", "nogroup", ""},
		{"by number", "65534", ""},
		{"unknown", "no-such-group-here", `API socket group "no-such-group-here" not found on this host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.group != "" && tc.wantErr == "" {
				needs.Root(t, "giving a socket to another group")
			}
			socket := filepath.Join(t.TempDir(), "api.sock")
			plugin := NewPlugin(UseDeps(func(deps *Deps) {
				deps.Cfg = writeConfig(t, "socket-path: "+socket+"\nsocket-mode: \"0660\"\nsocket-group: \""+tc.group+"\"\n")
				deps.DeviceManager = devicemanagertest.New(t, nil)
			}))
			if err := plugin.Init(); err != nil {
				t.Fatalf("Init: %v", err)
			}
			err := plugin.AfterInit()
			t.Cleanup(func() { plugin.Close() })
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("AfterInit with socket-group %q = %v, want error %q", tc.group, err, tc.wantErr)
			}
		})
	}
}
