package podmanager

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
)

// Runtimes podmanager.conf's runtime key takes.
const (
	RuntimeAuto   = "auto"
	RuntimeCRI    = "cri"
	RuntimeDocker = "docker"
	RuntimeNone   = "none"
)

// Config is podmanager.conf.
type Config struct {
	// Runtime is where containers are read from: cri (containerd, CRI-O),
	// docker (cri-dockerd nodes), none (kubelet's pod-resources alone) or
	// auto: the CRI when cri-endpoint is set, Docker when docker-endpoint
	// is, else the CRI when a default CRI socket exists, else Docker when
	// its socket exists, else none.
	Runtime string `json:"runtime"`
	// CRIEndpoint is the CRI runtime's socket; empty: the first of the
	// default sockets (containerd's, CRI-O's) that exists.
	CRIEndpoint string `json:"cri-endpoint"`
	// DockerEndpoint is Docker's API; empty follows DOCKER_HOST (and
	// Docker's default socket without it).
	DockerEndpoint string `json:"docker-endpoint"`
	// DockerReconnectMinBackoff and DockerReconnectMaxBackoff bound the
	// wait before reconnecting to Docker's event stream.
	DockerReconnectMinBackoff configfile.Duration `json:"docker-reconnect-min-backoff"`
	DockerReconnectMaxBackoff configfile.Duration `json:"docker-reconnect-max-backoff"`
	// PodResourcesSocket is kubelet's pod-resources socket; empty disables
	// pod-resources, leaving Docker alone to tell which pods live.
	PodResourcesSocket string `json:"pod-resources-socket"`
	// PodResourcesTimeout bounds one call to kubelet.
	PodResourcesTimeout configfile.Duration `json:"pod-resources-timeout"`
	// ReconcilePeriod is how often both sources are compared with the pods
	// announced and, when the comparison may decide, LivePods pushed: the
	// agent's one reconcile period (the device manager has none).
	ReconcilePeriod configfile.Duration `json:"reconcile-period"`
}

// DefaultConfig returns the defaults podmanager.conf documents.
func DefaultConfig() Config {
	return Config{
		Runtime:                   RuntimeAuto,
		DockerReconnectMinBackoff: configfile.Duration(dockerpods.DefaultMinBackoff),
		DockerReconnectMaxBackoff: configfile.Duration(dockerpods.DefaultMaxBackoff),
		PodResourcesSocket:        podresources.DefaultSocket,
		PodResourcesTimeout:       configfile.Duration(podresources.DefaultCallTimeout),
		ReconcilePeriod:           configfile.Duration(podtracker.DefaultReconcilePeriod),
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	switch c.Runtime {
	case RuntimeAuto, RuntimeCRI, RuntimeDocker, RuntimeNone:
	default:
		problems.Addf("runtime", "must be auto, cri, docker or none, got %q", c.Runtime)
	}
	if path := strings.TrimPrefix(c.CRIEndpoint, "unix://"); c.CRIEndpoint != "" && !filepath.IsAbs(path) {
		problems.Addf("cri-endpoint", "must be an absolute socket path or unix:///path, or empty for the default sockets, got %q", c.CRIEndpoint)
	}
	if c.DockerEndpoint != "" {
		endpoint, err := url.Parse(c.DockerEndpoint)
		if err != nil || (endpoint.Scheme != "unix" && endpoint.Scheme != "tcp" && endpoint.Scheme != "http" && endpoint.Scheme != "https") {
			problems.Addf("docker-endpoint", "must be unix:///path, tcp://host:port or empty for DOCKER_HOST, got %q", c.DockerEndpoint)
		}
	}
	if c.PodResourcesSocket != "" && !filepath.IsAbs(c.PodResourcesSocket) {
		problems.Addf("pod-resources-socket", "must be an absolute path, or empty to disable pod-resources, got %q", c.PodResourcesSocket)
	}
	problems.CheckPositive("docker-reconnect-min-backoff", c.DockerReconnectMinBackoff, "1s")
	problems.CheckPositive("docker-reconnect-max-backoff", c.DockerReconnectMaxBackoff, "30s")
	problems.CheckPositive("pod-resources-timeout", c.PodResourcesTimeout, "10s")
	problems.CheckPositive("reconcile-period", c.ReconcilePeriod, "1m")
	if c.DockerReconnectMaxBackoff < c.DockerReconnectMinBackoff {
		problems.Addf("docker-reconnect-max-backoff", "must not be less than docker-reconnect-min-backoff (%s), got %s",
			c.DockerReconnectMinBackoff, c.DockerReconnectMaxBackoff)
	}
	return problems.Err()
}

// ParseConfig reads podmanager.conf's content over the defaults and
// validates it; an error names the key.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	err := configfile.Decode(data, &cfg)
	return cfg, err
}
