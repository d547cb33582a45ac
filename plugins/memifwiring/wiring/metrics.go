package wiring

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// metrics of the wiring; every method is safe on a nil *metrics (no
// registerer given).
type metrics struct {
	refused        *prometheus.CounterVec
	changesWaiting *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memif_wiring_memifs_refused_total",
			Help: "Memifs left unwired because their spec was refused (a malformed annotation, an unknown network, an address taken...), by reason.",
		}, []string{"reason"}),
		changesWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memif_wiring_network_changes_waiting",
			Help: "1 for each networks.conf change refused while pods use the network; it applies once the pods named are gone.",
		}, []string{"network", "change", "pods"}),
	}
	for _, reason := range memifspec.Reasons() {
		m.refused.WithLabelValues(string(reason))
	}
	for _, collector := range []prometheus.Collector{m.refused, m.changesWaiting} {
		if err := reg.Register(collector); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) memifRefused(reason string) {
	if m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
}

// changesRefused sets the changes waiting now.
func (m *metrics) changesRefused(refusals []netconf.Refusal) {
	if m == nil {
		return
	}
	m.changesWaiting.Reset()
	for _, r := range refusals {
		m.changesWaiting.WithLabelValues(r.Network, string(r.Change), strings.Join(r.Pods, ",")).Set(1)
	}
}
