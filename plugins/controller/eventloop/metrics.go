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

type metrics struct {
	events   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newMetrics creates the loop's metrics and registers them, with the queue
// depth read by queueDepth, on reg (nil: not exposed).
func newMetrics(reg prometheus.Registerer, queueDepth func() float64) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "events_total",
			Help: "Events processed by the controller event loop, by event name and outcome (ok, error, reverted).",
		}, []string{"event", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "memif_agent", Subsystem: "controller", Name: "event_processing_seconds",
			Help:    "Time to run an event through the handlers and commit its transaction.",
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
	for _, c := range []prometheus.Collector{m.events, m.duration, depth} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register controller metrics: %w", err)
		}
	}
	return m, nil
}
