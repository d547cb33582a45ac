package agentwiring

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ligato/cn-infra/config"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// DirConfigs configures each plugin from <name>.conf in dir, its defaults
// when the file is missing, and declares no flag: the configuration of an
// agent that does not own its process's command line.
func DirConfigs(dir string) Configs {
	return func(name string, _ ...config.Option) config.PluginConfig {
		return FileConfig(filepath.Join(dir, name+".conf"))
	}
}

// FileConfig is a plugin's configuration read from one file, decoded
// strictly (configfile); a missing file means the plugin's defaults.
type FileConfig string

var _ config.PluginConfig = FileConfig("")

// GetConfigName implements config.PluginConfig: the file, or "" when it
// does not exist.
func (f FileConfig) GetConfigName() string {
	if _, err := os.Stat(string(f)); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return string(f)
}

// LoadValue implements config.PluginConfig: it decodes the file over the
// defaults value already holds.
func (f FileConfig) LoadValue(value any) (found bool, err error) {
	path := f.GetConfigName()
	if path == "" {
		return false, nil
	}
	if err := configfile.Load(path, value); err != nil {
		return false, err
	}
	return true, nil
}
