package listener

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Defaults of metrics.conf.
const (
	// AddressEnv names the environment variable holding the address the
	// metrics are served on when metrics.conf names none: the pod's IP
	// (the node's IP on hostNetwork), from the downward API.
	AddressEnv = "MEMIF_AGENT_POD_IP"
	// FallbackAddress is the address without metrics.conf's address and
	// without AddressEnv: only the node itself can scrape it.
	FallbackAddress = "127.0.0.1"
	// DefaultPort is the port the metrics are served on.
	DefaultPort = 9752
)

// Config is the content of metrics.conf; every key is optional.
type Config struct {
	// Address is the IP address the metrics are served on.
	Address string `json:"address"`
	// Port is the TCP port the metrics are served on.
	Port int `json:"port"`
}

// Source says where a Config's address came from, for the log.
type Source string

// The sources of the address.
const (
	FromFile     Source = "metrics.conf"
	FromEnv      Source = "$" + AddressEnv
	FromFallback Source = "neither metrics.conf's address nor $" + AddressEnv + " is set: the metrics are served on loopback only"
)

// Load returns the configuration: metrics.conf at path (decoded strictly;
// "" means no file) over the defaults, the address taken from
// podIP (the value of AddressEnv) when the file names none, else
// FallbackAddress. It says where the address came from.
func Load(path, podIP string) (Config, Source, error) {
	cfg := Config{Port: DefaultPort}
	if err := configfile.Load(path, &cfg); err != nil {
		return Config{}, "", err
	}
	switch {
	case cfg.Address != "":
		return cfg, FromFile, nil
	case podIP != "":
		if _, err := netip.ParseAddr(podIP); err != nil {
			return Config{}, "", fmt.Errorf("%s=%s: want an IP address (the downward API's status.podIP): %w", AddressEnv, configfile.Echo(podIP), err)
		}
		cfg.Address = podIP
		return cfg, FromEnv, nil
	default:
		cfg.Address = FallbackAddress
		return cfg, FromFallback, nil
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError. An address left out is valid: Load fills it in.
func (c Config) Validate() error {
	var problems configfile.Problems
	if c.Address != "" {
		if addr, err := netip.ParseAddr(c.Address); err != nil || addr.Zone() != "" {
			problems.Addf("address", "want an IP address such as 10.0.0.5 or fd00::5 (no host name, no port), got %s", configfile.Echo(c.Address))
		}
	}
	if c.Port < 1 || c.Port > 65535 {
		problems.Addf("port", "want a TCP port from 1 to 65535, got %d", c.Port)
	}
	return problems.Err()
}

// Endpoint is the address and port to listen on.
func (c Config) Endpoint() string {
	return net.JoinHostPort(c.Address, strconv.Itoa(c.Port))
}
