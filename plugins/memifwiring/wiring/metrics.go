package wiring

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// metrics of the wiring; every method is safe on a nil *metrics (no
// registerer given).
type metrics struct {
	refused        *prometheus.CounterVec
	changesWaiting *prometheus.GaugeVec
	addressesInUse *prometheus.GaugeVec
	addresses      *prometheus.GaugeVec
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
		addressesInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memif_network_addresses_in_use",
			Help: "Addresses of the l3 network's pool handed out to memifs on this node.",
		}, []string{"network"}),
		addresses: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "memif_network_addresses",
			Help: "Addresses the l3 network's pool can hand out on this node: its share of the subnet, without the gateway (and the subnet's network and broadcast addresses when the share holds them).",
		}, []string{"network"}),
	}
	for _, reason := range memifspec.Reasons() {
		m.refused.WithLabelValues(string(reason))
	}
	for _, collector := range []prometheus.Collector{m.refused, m.changesWaiting, m.addressesInUse, m.addresses} {
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

// addressUse sets each l3 network's address pool use now.
func (m *metrics) addressUse(use map[string]ipam.Use) {
	if m == nil {
		return
	}
	m.addressesInUse.Reset()
	m.addresses.Reset()
	for network, u := range use {
		m.addressesInUse.WithLabelValues(network).Set(float64(u.InUse))
		m.addresses.WithLabelValues(network).Set(float64(u.Capacity))
	}
}
