package manager

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
)

// metrics of the device manager; every method is safe on a nil *metrics
// (no registerer given).
type metrics struct {
	allocateLatency prometheus.Histogram
	registrations   prometheus.Counter
	reRegistrations prometheus.Counter
	errors          *prometheus.CounterVec
	checkpointLost  prometheus.Counter
	takeovers       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, state *allocation.State) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		allocateLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "memif_device_manager_allocate_seconds",
			Help:    "Latency of kubelet's Allocate calls, through the event loop.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memif_device_manager_registrations_total",
			Help: "Successful registrations with kubelet.",
		}),
		reRegistrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memif_device_manager_reregistrations_total",
			Help: "Successful registrations after the first (kubelet restarts).",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memif_device_manager_errors_total",
			Help: "Device manager failures by kind.",
		}, []string{"kind"}),
		checkpointLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memif_device_manager_checkpoint_lost_parts_total",
			Help: "Parts of the checkpoint lost to damage when it was loaded: the snapshot, the journal, each skipped stretch of journal records, a torn last record.",
		}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memif_device_manager_takeovers_total",
			Help: "Allocations released because kubelet handed their devices to a new Allocate, by what became of the holder.",
		}, []string{"holder"}),
	}
	allocations := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "memif_device_manager_allocations",
		Help: "memif allocations held now.",
	}, func() float64 { return float64(len(state.List())) })
	for _, c := range []prometheus.Collector{m.allocateLatency, m.registrations, m.reRegistrations, m.errors, m.checkpointLost, m.takeovers, allocations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) countError(kind string) {
	if m != nil {
		m.errors.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) countCheckpointLoss(parts int) {
	if m != nil {
		m.checkpointLost.Add(float64(parts))
	}
}

func (m *metrics) countTakeover(kind string) {
	if m != nil {
		m.takeovers.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) countRegistration(again bool) {
	if m == nil {
		return
	}
	m.registrations.Inc()
	if again {
		m.reRegistrations.Inc()
	}
}

// observeAllocate records one of kubelet's Allocate calls.
func (m *metrics) observeAllocate(latency time.Duration, err error) {
	if m == nil {
		return
	}
	m.allocateLatency.Observe(latency.Seconds())
	if err != nil {
		m.errors.WithLabelValues("allocate-rpc").Inc()
	}
}

// registrationErrorKind tells a Register call that ran out of time, which
// a healthy kubelet restart never causes (a registration whose sockets go
// away is cancelled at once), and one kubelet answered with a refusal
// (such as "already connected", which a healthy restart never causes
// either), from one kubelet was absent for.
func registrationErrorKind(err error) string {
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		return "registration-timeout"
	}
	if answer, fromKubelet := status.FromError(err); fromKubelet && answer.Code() == codes.Unknown {
		return "registration-refused"
	}
	return "registration"
}
