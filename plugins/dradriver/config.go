package dradriver

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// Defaults of dradriver.conf.
const (
	DefaultPluginDataDir = "/var/lib/kubelet/plugins/" + claims.DefaultDriverName
	DefaultRegistrarDir  = "/var/lib/kubelet/plugins_registry"
	DefaultCDIDir        = "/var/run/cdi"
	// NodeNameEnv is read when node-name is empty (the DaemonSet sets it
	// from spec.nodeName).
	NodeNameEnv = "NODE_NAME"
)

// Config is dradriver.conf.
type Config struct {
	// Enabled switches the DRA driver on.
	Enabled bool `json:"enabled"`
	// DriverName is the driver's name in ResourceSlices and DeviceClasses.
	DriverName string `json:"driver-name"`
	// NodeName is this node's name; empty: $NODE_NAME.
	NodeName string `json:"node-name"`
	// Kubeconfig is the API server's kubeconfig file; empty: the pod's
	// service account (in-cluster).
	Kubeconfig string `json:"kubeconfig"`
	// PluginDataDir holds the DRA socket kubelet calls; RegistrarDir is
	// kubelet's plugin registration directory.
	PluginDataDir string `json:"plugin-data-dir"`
	RegistrarDir  string `json:"registrar-dir"`
	// CDIDir is where the claims' CDI specs are written (mode 0600; the
	// directory, when the driver creates it, 0700). The container runtime
	// must read CDI specs from it.
	CDIDir string `json:"cdi-dir"`
}

// DefaultConfig returns the defaults dradriver.conf documents.
func DefaultConfig() Config {
	return Config{
		DriverName:    claims.DefaultDriverName,
		PluginDataDir: DefaultPluginDataDir,
		RegistrarDir:  DefaultRegistrarDir,
		CDIDir:        DefaultCDIDir,
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	for _, reason := range validation.IsDNS1123Subdomain(c.DriverName) {
		problems.Addf("driver-name", "must be a DNS subdomain such as %q: %s, got %q", claims.DefaultDriverName, reason, c.DriverName)
	}
	if c.NodeName != "" {
		for _, reason := range validation.IsDNS1123Subdomain(c.NodeName) {
			problems.Addf("node-name", "must be a node name (DNS subdomain) or empty for $%s: %s, got %q", NodeNameEnv, reason, c.NodeName)
		}
	}
	if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		problems.Addf("kubeconfig", "must be an absolute path, or empty for the pod's service account, got %q", c.Kubeconfig)
	}
	for key, dir := range map[string]string{"plugin-data-dir": c.PluginDataDir, "registrar-dir": c.RegistrarDir, "cdi-dir": c.CDIDir} {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" {
			problems.Addf(key, "must be an absolute directory other than /, got %q", dir)
		}
	}
	return problems.Err()
}

// ParseConfig reads dradriver.conf's content over the defaults and
// validates it; an error names the key.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	err := configfile.Decode(data, &cfg)
	return cfg, err
}
