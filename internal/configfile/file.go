package configfile

import (
	"errors"
	"io/fs"
	"os"
)

// Locator is a plugin's config (a cn-infra config.PluginConfig) that
// says where its file is, or would be while it is missing, so that a
// plugin that watches its file live sees one written after its start.
type Locator interface {
	// ConfigPath is the file's path, or "" when no file would be read.
	ConfigPath() string
}

var _ Locator = File("")

// File is a plugin's config file at a path, as cn-infra's
// config.PluginConfig: the plugin reads it with Load. A missing file
// means the plugin's defaults.
type File string

// GetConfigName implements cn-infra's config.PluginConfig: the path, or
// "" when no file is there.
func (f File) GetConfigName() string {
	if _, err := os.Stat(string(f)); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return string(f)
}

// ConfigPath implements Locator: the path, whether or not a file is
// there.
func (f File) ConfigPath() string { return string(f) }

// LoadValue implements cn-infra's config.PluginConfig: it decodes the
// file strictly (Load) over the defaults value already holds, and tells
// whether there was a file.
func (f File) LoadValue(value any) (found bool, err error) {
	path := f.GetConfigName()
	if path == "" {
		return false, nil
	}
	if err := Load(path, value); err != nil {
		return false, err
	}
	return true, nil
}
