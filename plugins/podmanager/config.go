package podmanager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/ghodss/yaml"

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
	DockerReconnectMinBackoff Duration `json:"docker-reconnect-min-backoff"`
	DockerReconnectMaxBackoff Duration `json:"docker-reconnect-max-backoff"`
	// PodResourcesSocket is kubelet's pod-resources socket; empty disables
	// pod-resources, leaving Docker alone to tell which pods live.
	PodResourcesSocket string `json:"pod-resources-socket"`
	// PodResourcesTimeout bounds one call to kubelet.
	PodResourcesTimeout Duration `json:"pod-resources-timeout"`
	// ReconcilePeriod is how often both sources are compared with the pods
	// announced.
	ReconcilePeriod Duration `json:"reconcile-period"`
}

// DefaultConfig returns the defaults podmanager.conf documents.
func DefaultConfig() Config {
	return Config{
		DockerReconnectMinBackoff: Duration(dockerpods.DefaultMinBackoff),
		DockerReconnectMaxBackoff: Duration(dockerpods.DefaultMaxBackoff),
		PodResourcesSocket:        podresources.DefaultSocket,
		PodResourcesTimeout:       Duration(podresources.DefaultCallTimeout),
		ReconcilePeriod:           Duration(podtracker.DefaultReconcilePeriod),
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
		value Duration
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

// loadConfig reads the config file at path; "" gives the defaults.
func loadConfig(path string) (Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig reads YAML over the defaults and validates it. An unknown key
// is an error, so a misspelt key is not silently ignored.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return cfg, fmt.Errorf("parse YAML: %w", err)
	}
	if string(bytes.TrimSpace(asJSON)) == "null" {
		return cfg, nil
	}
	decoder := json.NewDecoder(bytes.NewReader(asJSON))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("decode: %w", err)
	}
	return cfg, cfg.Validate()
}

// Duration is a time.Duration written as "30s" in the config file.
type Duration time.Duration

// Duration returns the value as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("want a duration such as \"30s\", got %s", data)
	}
	parsed, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\": %w", err)
	}
	*d = Duration(parsed)
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
