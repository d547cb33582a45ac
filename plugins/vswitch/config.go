package vswitch

import (
	"path/filepath"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Config is vswitch.conf. The JSON names are its keys.
type Config struct {
	// VPPAPISocket is VPP's binary API socket (socksvr { socket-name }).
	// Empty: VPP is not programmed by this agent.
	VPPAPISocket string `json:"vpp-api-socket"`
	// RequestTimeout bounds each call to VPP.
	RequestTimeout configfile.Duration `json:"request-timeout"`
	// LinkCheckPeriod is how often the memifs' counters are read from VPP,
	// and, while links are down, why (VPP refuses a pod side with a wrong
	// secret without an event). Links coming up and going down are VPP's
	// interface events.
	LinkCheckPeriod configfile.Duration `json:"link-check-period"`
	// HealthCheckPeriod is how often VPP is asked for a control_ping. One
	// left unanswered for request-timeout makes VPP unreachable: the
	// connection is dropped, so that no call waits on a hung VPP, and
	// dialled again until VPP answers.
	HealthCheckPeriod configfile.Duration `json:"health-check-period"`
	// LinkDownGrace is how long a memif's link may stay down for a reason
	// (VPP refused its pod side, or the pod side left) before a Warning
	// event tells its pod.
	LinkDownGrace configfile.Duration `json:"link-down-grace"`
}

// DefaultConfig is the config of a missing or empty vswitch.conf.
func DefaultConfig() Config {
	return Config{
		RequestTimeout:    configfile.Duration(5 * time.Second),
		LinkCheckPeriod:   configfile.Duration(time.Second),
		HealthCheckPeriod: configfile.Duration(time.Second),
		LinkDownGrace:     configfile.Duration(30 * time.Second),
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if c.VPPAPISocket != "" && !filepath.IsAbs(c.VPPAPISocket) {
		problems.Addf("vpp-api-socket", "must be an absolute path, got %q", c.VPPAPISocket)
	}
	problems.CheckPositive("request-timeout", c.RequestTimeout, "5s")
	problems.CheckPositive("link-check-period", c.LinkCheckPeriod, "1s")
	problems.CheckPositive("health-check-period", c.HealthCheckPeriod, "1s")
	problems.CheckPositive("link-down-grace", c.LinkDownGrace, "30s")
	return problems.Err()
}
