package podmanager

import (
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
)

// Config is podmanager.conf.
type Config struct {
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
	// announced.
	ReconcilePeriod configfile.Duration `json:"reconcile-period"`
}

// DefaultConfig returns the defaults podmanager.conf documents.
func DefaultConfig() Config {
	return Config{
		DockerReconnectMinBackoff: configfile.Duration(dockerpods.DefaultMinBackoff),
		DockerReconnectMaxBackoff: configfile.Duration(dockerpods.DefaultMaxBackoff),
		PodResourcesSocket:        podresources.DefaultSocket,
		PodResourcesTimeout:       configfile.Duration(podresources.DefaultCallTimeout),
		ReconcilePeriod:           configfile.Duration(podtracker.DefaultReconcilePeriod),
	}
}

// Validate names the first invalid key.
func (c Config) Validate() error {
	if c.DockerEndpoint != "" {
		endpoint, err := url.Parse(c.DockerEndpoint)
		if err != nil || (endpoint.Scheme != "unix" && endpoint.Scheme != "tcp" && endpoint.Scheme != "http" && endpoint.Scheme != "https") {
			return fmt.Errorf("docker-endpoint %q: want unix:///path, tcp://host:port or empty for DOCKER_HOST", c.DockerEndpoint)
		}
	}
	if c.PodResourcesSocket != "" && !filepath.IsAbs(c.PodResourcesSocket) {
		return fmt.Errorf("pod-resources-socket %q: want an absolute path, or empty to disable", c.PodResourcesSocket)
	}
	positive := []struct {
		key   string
		value configfile.Duration
	}{
		{"docker-reconnect-min-backoff", c.DockerReconnectMinBackoff},
		{"docker-reconnect-max-backoff", c.DockerReconnectMaxBackoff},
		{"pod-resources-timeout", c.PodResourcesTimeout},
		{"reconcile-period", c.ReconcilePeriod},
	}
	for _, p := range positive {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %s", p.key, p.value.Duration())
		}
	}
	if c.DockerReconnectMaxBackoff < c.DockerReconnectMinBackoff {
		return fmt.Errorf("docker-reconnect-max-backoff %s is below docker-reconnect-min-backoff %s",
			c.DockerReconnectMaxBackoff.Duration(), c.DockerReconnectMinBackoff.Duration())
	}
	return nil
}

// ParseConfig reads podmanager.conf's content over the defaults and
// validates it; an error names the key.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	err := configfile.Decode(data, &cfg)
	return cfg, err
}
