package health

import (
	"path/filepath"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/health/probesocket"
)

// PluginName is the plugin's name; its config file is health.conf (flag
// -health-config).
const PluginName = "health"

// Config is the content of health.conf; every key is optional.
type Config struct {
	// ProbeSocket is the root-only Unix socket kubelet's exec probes ask
	// (memif-agent probe); empty means the default.
	ProbeSocket string `json:"probe-socket"`
}

// DefaultConfig returns the defaults health.conf documents.
func DefaultConfig() Config {
	return Config{ProbeSocket: probesocket.DefaultPath}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if c.ProbeSocket != "" && !filepath.IsAbs(c.ProbeSocket) {
		problems.Addf("probe-socket", "must be an absolute path, got %q", c.ProbeSocket)
	}
	return problems.Err()
}
