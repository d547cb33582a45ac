package agentwiring

import (
	"path/filepath"

	"github.com/ligato/cn-infra/config"

	"github.com/contivpp/memif-agent/internal/configfile"
)

var _ config.PluginConfig = configfile.File("")

// DirConfigs configures each plugin from <name>.conf in dir, its defaults
// when the file is missing, and declares no flag: the configuration of an
// agent that does not own its process's command line.
func DirConfigs(dir string) Configs {
	return func(name string, _ ...config.Option) config.PluginConfig {
		return configfile.File(filepath.Join(dir, name+".conf"))
	}
}
