package controller

import (
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// registryAt is a prometheus.Registerer over one registry of cn-infra's
// Prometheus plugin, so the loop's metrics are served with the agent's.
type registryAt struct {
	plugin cnprometheus.API
	path   string
}

func (r registryAt) Register(collector prometheus.Collector) error {
	return r.plugin.Register(r.path, collector)
}

// MustRegister panics on error, as prometheus.Registerer documents.
func (r registryAt) MustRegister(collectors ...prometheus.Collector) {
	for _, collector := range collectors {
		if err := r.Register(collector); err != nil {
			panic(err)
		}
	}
}

func (r registryAt) Unregister(collector prometheus.Collector) bool {
	return r.plugin.Unregister(r.path, collector)
}
