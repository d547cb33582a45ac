package nodeapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ligato/cn-infra/config"

	"github.com/contivpp/memif-agent/internal/testutil/devicemanagerstandin"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
)

// configFile is a config.PluginConfig reading one YAML file, the way
// cn-infra reads -nodeapi-config.
type configFile string

func (f configFile) LoadValue(value interface{}) (bool, error) {
	return true, config.ParseConfigFromYamlFile(string(f), value)
}

func (f configFile) GetConfigName() string { return string(f) }

func TestPluginServesOnConfiguredSocketUntilClose(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "api.sock")
	confPath := filepath.Join(dir, "nodeapi.conf")
	conf := "socket-path: " + socket + "\nsocket-mode: \"0660\"\n"
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Committer: vswitchStandInCommitter{}})
	if err != nil {
		t.Fatal(err)
	}
	plugin := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = configFile(confPath)
		deps.DeviceManager = devicemanagerstandin.New()
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
	if err := plugin.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v, want it removed", err)
	}
}

func TestPluginInitRefusesBadConfig(t *testing.T) {
	confPath := filepath.Join(t.TempDir(), "nodeapi.conf")
	if err := os.WriteFile(confPath, []byte("socket-mode: \"rw\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugin := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = configFile(confPath)
		deps.DeviceManager = devicemanagerstandin.New()
	}))
	err := plugin.Init()
	if err == nil || !strings.Contains(err.Error(), `config key "socket-mode"`) {
		t.Fatalf("Init = %v, want an error naming socket-mode", err)
	}
}
