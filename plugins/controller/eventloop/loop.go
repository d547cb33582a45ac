package eventloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/internal/backoff"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Deps are what the loop works with.
type Deps struct {
	// Handlers in registration order.
	Handlers []controllerapi.EventHandler
	// Committer receives the transaction of every event.
	Committer controllerapi.Committer
	// Metrics is where the loop registers its metrics; nil: not exposed.
	Metrics prometheus.Registerer
	// Log receives a line per event; nil: no logging.
	Log logs.Logger
	// HealthChanged, if set, is called from the loop goroutine whenever the
	// health state changes.
	HealthChanged func(Health)
}

// Loop is the controller event loop. Create it with New, run it with Start,
// stop it with Close.
type Loop struct {
	cfg     Config
	deps    Deps
	metrics *metrics
	history *History
	// queue holds the events of both lanes in push order: QueueSize places
	// for background events, AdmissionQueueSize more that only admission
	// events may take (lanes.go).
	queue chan controllerapi.Event
	// commits commits the handlers' transactions off the loop goroutine.
	commits *commitWorker
	// backgroundQueued counts the background events in queue.
	backgroundQueued atomic.Int64

	mu      sync.RWMutex // guards started and closed against PushEvent
	started bool
	closed  bool
	stop    chan struct{}
	stopped chan struct{}
	// drain, closed by Drain, makes the loop stop once the queue is empty
	// and every commit is done.
	drain chan struct{}

	healthMu sync.Mutex
	health   Health

	// requested is the resync Resync pushed that the loop has not started
	// yet: later calls wait for it instead of queueing another, so that a
	// flood of requests costs one resync.
	requestedMu sync.Mutex
	requested   *ResyncEvent

	// Owned by the loop goroutine (by Close once it has stopped).
	committed    map[string]proto.Message
	followUps    []controllerapi.Event
	seqNum       uint64
	healingTimer *time.Timer
	healingDelay *backoff.Delay
	// lastFailure is the last event whose failure asked for healing,
	// lastFailedResync the last failed resync (health.go).
	lastFailure, lastFailedResync uint64
}

// New validates cfg and returns a loop that has not started yet; events
// pushed now wait for the startup resync.
func New(cfg Config, deps Deps) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Committer == nil {
		return nil, fmt.Errorf("create controller event loop: no committer given")
	}
	if deps.Log == nil {
		deps.Log = logs.Discard()
	}
	l := &Loop{
		cfg:          cfg,
		deps:         deps,
		history:      newHistory(cfg.HistorySize),
		queue:        make(chan controllerapi.Event, cfg.QueueSize+cfg.AdmissionQueueSize),
		commits:      newCommitWorker(deps.Committer, time.Duration(cfg.CommitTimeout)),
		stop:         make(chan struct{}),
		stopped:      make(chan struct{}),
		drain:        make(chan struct{}),
		committed:    map[string]proto.Message{},
		healingDelay: backoff.New(time.Duration(cfg.HealingDelay), time.Duration(cfg.HealingMaxDelay)),
		health:       Health{State: Starting},
	}
	m, err := newMetrics(deps.Metrics, func() float64 { return float64(len(l.queue)) })
	if err != nil {
		return nil, err
	}
	l.metrics = m
	return l, nil
}

// Start runs the loop goroutine: the startup resync first, then the queue.
// Calling it again, or after Close, does nothing.
func (l *Loop) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closed {
		return
	}
	l.started = true
	l.commits.start()
	go l.run()
}

// PushEvent queues event without blocking; see controllerapi.EventLoop.
func (l *Loop) PushEvent(event controllerapi.Event) error {
	if err := validate(event); err != nil {
		return fmt.Errorf("push event: %w", err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	name, lane := event.Spec().Name, laneOf(event)
	if l.closed {
		l.metrics.refused.WithLabelValues(name, lane, refusedClosed).Inc()
		return fmt.Errorf("push event %s: %w", name, controllerapi.ErrClosedEventLoop)
	}
	if lane == backgroundLane && !l.takeBackgroundRoom() {
		l.metrics.refused.WithLabelValues(name, lane, refusedQueueFull).Inc()
		return fmt.Errorf("push event %s: %d background events already queued (event-queue-size): %w",
			name, l.cfg.QueueSize, controllerapi.ErrEventQueueFull)
	}
	select {
	case l.queue <- event:
		return nil
	default:
		if lane == backgroundLane {
			l.backgroundQueued.Add(-1)
		}
		l.metrics.refused.WithLabelValues(name, lane, refusedQueueFull).Inc()
		return fmt.Errorf("push event %s: %d events already queued, admissions' own room (admission-queue-size %d) included: %w",
			name, cap(l.queue), l.cfg.AdmissionQueueSize, controllerapi.ErrEventQueueFull)
	}
}

// Resync pushes a full resync and waits for its outcome or the end of ctx.
// Calls made while a requested resync is queued and not started yet share
// it: it starts after every one of them.
func (l *Loop) Resync(ctx context.Context) error {
	l.requestedMu.Lock()
	event := l.requested
	if event == nil {
		event = NewResyncEvent(RequestedResyncName)
		if err := l.PushEvent(event); err != nil {
			l.requestedMu.Unlock()
			return err
		}
		l.requested = event
	}
	l.requestedMu.Unlock()
	return event.Wait(ctx)
}

// starting forgets event as the queued requested resync: a Resync call
// from now on may need what it is about to miss.
func (l *Loop) starting(event controllerapi.Event) {
	l.requestedMu.Lock()
	if l.requested == event {
		l.requested = nil
	}
	l.requestedMu.Unlock()
}

// EventHistory implements controllerapi.EventHistory.
func (l *Loop) EventHistory(query controllerapi.HistoryQuery) []controllerapi.EventRecord {
	return l.history.Select(query)
}

// Close stops the loop after the event in progress, waits for the commits
// of every event processed (each bounded by commit-timeout) and fails
// every unprocessed event with controllerapi.ErrClosedEventLoop. Later
// calls do nothing.
func (l *Loop) Close() error {
	l.shutdown(l.stop)
	return nil
}

// Drain is Close for an agent that hands its node over to the agent
// replacing it: PushEvent fails from now on, but the events already
// queued, and their follow-ups, are processed and committed before the
// loop stops, and no healing resync starts. When it returns, every
// admission the loop took is answered and in the checkpoint. Close
// afterwards does nothing.
func (l *Loop) Drain() { l.shutdown(l.drain) }

// shutdown stops the loop by closing signal (l.stop or l.drain), then
// closes it.
func (l *Loop) shutdown(signal chan struct{}) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	started := l.started
	l.mu.Unlock()

	if started {
		close(signal)
		<-l.stopped
	}
	l.drainCommits()
	l.stopHealing()
	l.failUnprocessed()
	l.metrics.unregister()
}

// drainRecheck is how often a draining loop looks whether its last
// commit is done.
const drainRecheck = 10 * time.Millisecond

func (l *Loop) run() {
	defer close(l.stopped)
	l.process(NewResyncEvent(StartupResyncName))
	drain, draining := l.drain, false
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		if len(l.followUps) > 0 {
			next := l.followUps[0]
			l.followUps = l.followUps[1:]
			if outcomes, ok := next.(*pendingOutcomes); ok {
				l.deliver(outcomes)
				continue
			}
			l.process(next)
			continue
		}
		healing := l.healingC()
		// A commit's result is delivered before its worker is idle: a
		// draining loop looks again after drainRecheck.
		var recheck <-chan time.Time
		if draining {
			if len(l.queue) == 0 && l.commits.idle() {
				return
			}
			healing, recheck = nil, time.After(drainRecheck)
		}
		select {
		case <-l.stop:
			return
		case <-drain:
			drain, draining = nil, true
		case event := <-l.queue:
			l.dequeued(event)
			l.process(event)
		case res := <-l.commits.results:
			l.commitDone(res)
		case <-recheck:
		case <-healing:
			l.healingTimer = nil
			l.process(NewResyncEvent(HealingResyncName))
		}
	}
}

// failUnprocessed gives controllerapi.ErrClosedEventLoop to every event that will not
// run; PushEvent refuses new ones by now.
func (l *Loop) failUnprocessed() {
	for _, event := range l.followUps {
		tell(event, controllerapi.ErrClosedEventLoop)
	}
	l.followUps = nil
	for {
		select {
		case event := <-l.queue:
			l.dequeued(event)
			tell(event, controllerapi.ErrClosedEventLoop)
		default:
			return
		}
	}
}
