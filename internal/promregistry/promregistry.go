package promregistry

import (
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// Default returns a Registerer over the default registry of plugin, the
// one cn-infra serves at /metrics.
func Default(plugin cnprometheus.API) prometheus.Registerer {
	return registryAt{plugin: plugin, path: cnprometheus.DefaultRegistry}
}

// registryAt is a prometheus.Registerer over the registry of plugin served
// at path.
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
