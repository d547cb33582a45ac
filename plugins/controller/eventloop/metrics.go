package eventloop

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of an event, the "outcome" label of the events counter.
const (
	outcomeOK       = "ok"
	outcomeError    = "error"
	outcomeReverted = "reverted"
)

// Reasons for refusing a push, the "reason" label of the refusals counter.
const (
	refusedQueueFull = "queue-full"
	refusedClosed    = "closed"
)

type metrics struct {
	events   *prometheus.CounterVec
	commits  *prometheus.CounterVec
	refused  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// registry and registered are what unregister removes.
	registry   prometheus.Registerer
	registered []prometheus.Collector
}

// newMetrics creates the loop's metrics and registers them, with the queue
// depth read by queueDepth, on reg (nil: not exposed).
func newMetrics(reg prometheus.Registerer, queueDepth func() float64) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "events_total",
			Help: "Events processed by the controller event loop, by event name and outcome (ok, error, reverted).",
		}, []string{"event", "outcome"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "commits_total",
			Help: "Commits to the KV scheduler, by outcome (ok, error); one commit may hold the transactions of several events, merged while the one before it ran.",
		}, []string{"outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "events_refused_total",
			Help: "Events PushEvent refused, by event name, queue lane (admission, background) and reason (queue-full, closed).",
		}, []string{"event", "lane", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "event_processing_seconds",
			Help:    "Time to run an event through the handlers and hand its transaction to the commit worker; the commit runs apart (commits_total).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"event"}),
	}
	if reg == nil {
		return m, nil
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "memif_agent", Subsystem: "controller", Name: "event_queue_depth",
		Help: "Events waiting in the controller event queue.",
	}, queueDepth)
	m.registry = reg
	for _, c := range []prometheus.Collector{m.events, m.commits, m.refused, m.duration, depth} {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, fmt.Errorf("register controller metrics: %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return m, nil
}

// unregister removes the metrics from the registry, so that a closed loop
// stops exporting and a new loop can register again.
func (m *metrics) unregister() {
	for _, c := range m.registered {
		m.registry.Unregister(c)
	}
	m.registered = nil
}
