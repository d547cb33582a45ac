package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ligato/cn-infra/config"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	"github.com/contivpp/memif-agent/internal/configfile"
)

// pluginConfig is the config.PluginConfig every plugin of the agent gets,
// its own and the framework's (http, logs, kvscheduler), in place of
// cn-infra's, for two reasons:
//
//   - The file is found by one rule: -<plugin>-config (default
//     <plugin>.conf), when a bare file name, is in -config-dir and nowhere
//     else (with no -config-dir, the default file is not read at all); a
//     path with a directory part is taken as it is. cn-infra looked
//     a bare name up in the working directory first, so a stray file there
//     silently won over -config-dir.
//   - LoadValue decodes strictly (configfile): an unknown key or a value of
//     the wrong type stops the agent with an error naming the file and the
//     key. cn-infra's reader ignored unknown keys.
type pluginConfig struct {
	// flagName is -<plugin>-config; defaultFile its default, <plugin>.conf.
	flagName    string
	defaultFile string
}

var (
	_ config.PluginConfig = pluginConfig{}
	_ configfile.Locator  = pluginConfig{}
)

// forPlugin declares the flags of the plugin called name (its -config flag
// and the extra flags opts add, as config.ForPlugin does) on the command
// line at once, so that main parses them before the agent is made, and
// returns the plugin's configuration.
func forPlugin(name string, opts ...config.Option) config.PluginConfig {
	config.ForPlugin(name, opts...)
	config.DefineFlagsFor(name)
	return pluginConfig{flagName: config.FlagName(name), defaultFile: config.Filename(name)}
}

// GetConfigName implements config.PluginConfig: the path of the plugin's
// config file, or "" when it has none and its defaults apply.
func (c pluginConfig) GetConfigName() string {
	file := agentwiring.FlagValue(c.flagName)
	if file == "" {
		return ""
	}
	return configPath(file, agentwiring.FlagValue(config.DirFlag), file != c.defaultFile)
}

// ConfigPath implements configfile.Locator: the path the plugin's config
// file is read from when it is there, "" when none would be (the default
// file with no -config-dir).
func (c pluginConfig) ConfigPath() string {
	file := agentwiring.FlagValue(c.flagName)
	if file == "" {
		return ""
	}
	return placeConfig(file, agentwiring.FlagValue(config.DirFlag), file != c.defaultFile)
}

// LoadValue implements config.PluginConfig: it decodes the plugin's config
// file strictly over the defaults value already holds.
func (c pluginConfig) LoadValue(value interface{}) (found bool, err error) {
	path := c.GetConfigName()
	if path == "" {
		return false, nil
	}
	if err := configfile.Load(path, value); err != nil {
		return false, err
	}
	return true, nil
}

// configPath places file, the value of a -<plugin>-config flag, in dir,
// the value of -config-dir. A bare file name is dir's; a path with a
// directory part (absolute, or relative to the working directory, such as
// ./x.conf) is the operator's own. The default file name missing from dir
// means no file ("": the defaults apply), and so does no dir: the default
// file is not looked for anywhere else. A file the operator named is
// returned even when missing, so that loading it fails naming it; with no
// dir, a bare name is relative to the working directory.
func configPath(file, dir string, named bool) string {
	path := placeConfig(file, dir, named)
	if path == "" || named || filepath.Base(file) != file {
		return path
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return path
}

// placeConfig is configPath whether or not the file is there.
func placeConfig(file, dir string, named bool) string {
	if filepath.Base(file) != file {
		return file
	}
	if dir == "" {
		if named {
			return file
		}
		return ""
	}
	return filepath.Join(dir, file)
}
