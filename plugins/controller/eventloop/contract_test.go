package eventloop

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// TestSpecDecidesHowAnEventRuns: the spec alone says how an event runs;
// the zero spec (a name aside) is a best-effort update visiting the
// handlers forward.
func TestSpecDecidesHowAnEventRuns(t *testing.T) {
	tests := []struct {
		name     string
		spec     controllerapi.EventSpec
		failing  string
		want     []string
		wantRec  controllerapi.EventRecord
		wantFail bool
	}{
		{name: "zero spec: best effort, forward", spec: controllerapi.EventSpec{Name: "E"}, failing: "h1",
			want:    []string{"h1:update:E", "h2:update:E"},
			wantRec: controllerapi.EventRecord{Method: "update", TxnType: "best-effort", Direction: "forward"}, wantFail: true},
		{name: "reverse", spec: controllerapi.EventSpec{Name: "E", Direction: controllerapi.Reverse},
			want:    []string{"h2:update:E", "h1:update:E"},
			wantRec: controllerapi.EventRecord{Method: "update", TxnType: "best-effort", Direction: "reverse"}},
		{name: "revert on failure", spec: controllerapi.EventSpec{Name: "E", Transaction: controllerapi.RevertOnFailure}, failing: "h2",
			want:    []string{"h1:update:E", "h2:update:E", "h1:revert:E"},
			wantRec: controllerapi.EventRecord{Method: "update", TxnType: "revert-on-failure", Direction: "forward"}, wantFail: true},
		{name: "full resync", spec: controllerapi.EventSpec{Name: "E", Method: controllerapi.FullResync},
			want:    []string{"h1:resync#2:E", "h2:resync#2:E"},
			wantRec: controllerapi.EventRecord{Method: "full-resync"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2")
			for _, h := range handlers {
				h.failUpdate = map[string]bool{"E": h.name == tc.failing}
			}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers)})
			loop.Start()
			waitHealthy(t, loop)
			event := &testEvent{EventSpec: tc.spec, Result: controllerapi.NewResult()}
			mustPush(t, loop, event)
			if err := mustWait(t, event); (err != nil) != tc.wantFail {
				t.Errorf("event = %v, want failure %v", err, tc.wantFail)
			}
			// After the startup resync; a failed best-effort event
			// schedules a healing resync, which may run meanwhile.
			got := slices.DeleteFunc(calls.get()[2:], func(call string) bool { return strings.HasSuffix(call, ":"+HealingResyncName) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("handler calls = %v, want %v", got, tc.want)
			}
			rec := loop.history.All()[1]
			if rec.Name != "E" || rec.Method != tc.wantRec.Method || rec.TxnType != tc.wantRec.TxnType || rec.Direction != tc.wantRec.Direction {
				t.Errorf("history record = %+v, want method %q, transaction %q, direction %q",
					rec, tc.wantRec.Method, tc.wantRec.TxnType, tc.wantRec.Direction)
			}
		})
	}
}

// unawaited is an event no one can wait for: it has no Done.
type unawaited struct{ controllerapi.EventSpec }

func (unawaited) String() string { return "unawaited" }

// TestEventsTheLoopCannotHonourAreRefused: an event without a name, or
// blocking with no Done to tell its pusher, is refused when it is pushed,
// from outside the loop or as a follow-up.
func TestEventsTheLoopCannotHonourAreRefused(t *testing.T) {
	tests := []struct {
		name  string
		event controllerapi.Event
	}{
		{name: "no name", event: unawaited{}},
		{name: "blocking without Done", event: unawaited{controllerapi.EventSpec{Name: "Blocking", Blocking: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			handler := &testHandler{name: "h", calls: &callLog{}, followUpErrs: make(chan error, 1),
				followUps: map[string][]controllerapi.Event{"Pushing": {tc.event}}}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}})
			loop.Start()
			if err := loop.PushEvent(tc.event); !errors.Is(err, controllerapi.ErrInvalidEvent) {
				t.Errorf("PushEvent = %v, want ErrInvalidEvent", err)
			}
			pushing := newEvent("Pushing", controllerapi.BestEffort, controllerapi.Forward)
			mustPush(t, loop, pushing)
			if err := mustWait(t, pushing); err != nil {
				t.Fatal(err)
			}
			if err := <-handler.followUpErrs; !errors.Is(err, controllerapi.ErrInvalidEvent) {
				t.Errorf("PushFollowUp = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

// countingEvent counts the outcomes it is told.
type countingEvent struct {
	controllerapi.EventSpec
	mu    sync.Mutex
	told  []error
	done  chan struct{}
	close sync.Once
}

func newCountingEvent(name string) *countingEvent {
	return &countingEvent{EventSpec: controllerapi.EventSpec{Name: name}, done: make(chan struct{})}
}

func (e *countingEvent) String() string { return "counting " + e.Name }

func (e *countingEvent) Done(err error) {
	e.mu.Lock()
	e.told = append(e.told, err)
	e.mu.Unlock()
	e.close.Do(func() { close(e.done) })
}

func (e *countingEvent) outcomes() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.told)
}

// TestEveryAwaitedEventIsToldOnce: an event with a Done is told its
// outcome exactly once, however its processing ends.
func TestEveryAwaitedEventIsToldOnce(t *testing.T) {
	tests := []struct {
		name string
		// run pushes event into a started loop of one handler and ends as
		// the case says; want is the error the event is told.
		run  func(t *testing.T, loop *Loop, handler *testHandler, event *countingEvent)
		want error
	}{
		{name: "processed", run: func(t *testing.T, loop *Loop, _ *testHandler, event *countingEvent) {
			mustPush(t, loop, event)
		}},
		{name: "failed", want: errHandlerFailed, run: func(t *testing.T, loop *Loop, handler *testHandler, event *countingEvent) {
			handler.failUpdate = map[string]bool{event.Name: true}
			mustPush(t, loop, event)
		}},
		{name: "a follow-up run", run: func(t *testing.T, loop *Loop, handler *testHandler, event *countingEvent) {
			handler.followUps = map[string][]controllerapi.Event{"Pushing": {event}}
			mustPush(t, loop, newEvent("Pushing", controllerapi.BestEffort, controllerapi.Forward))
		}},
		{name: "a follow-up dropped", want: controllerapi.ErrDroppedFollowUp, run: func(t *testing.T, loop *Loop, handler *testHandler, event *countingEvent) {
			handler.followUps = map[string][]controllerapi.Event{"Pushing": {event}}
			handler.failUpdate = map[string]bool{"Pushing": true}
			mustPush(t, loop, newEvent("Pushing", controllerapi.BestEffort, controllerapi.Forward))
		}},
		{name: "queued when the loop closed", want: controllerapi.ErrClosedEventLoop, run: func(t *testing.T, loop *Loop, handler *testHandler, event *countingEvent) {
			entered, release := make(chan struct{}), make(chan struct{})
			handler.onUpdate = func(e controllerapi.Event, _ controllerapi.EventOperations) {
				if e.Spec().Name == "Slow" {
					close(entered)
					<-release
				}
			}
			mustPush(t, loop, newEvent("Slow", controllerapi.BestEffort, controllerapi.Forward))
			<-entered
			mustPush(t, loop, event)
			closed := make(chan struct{})
			go func() { _ = loop.Close(); close(closed) }()
			<-loop.stop
			close(release)
			<-closed
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			handler := &testHandler{name: "h", calls: &callLog{}, putNothing: true}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}})
			loop.Start()
			waitHealthy(t, loop)
			event := newCountingEvent("Counted")
			tc.run(t, loop, handler, event)
			select {
			case <-event.done:
			case <-waitCtx(t).Done():
				t.Fatal("the event was never told its outcome")
			}
			// A resync behind it is done once everything before it is.
			_ = loop.Resync(waitCtx(t))
			_ = loop.Close()
			told := event.outcomes()
			if len(told) != 1 || !errors.Is(told[0], tc.want) || (tc.want == nil && told[0] != nil) {
				t.Errorf("the event was told %v, want once %v", told, tc.want)
			}
		})
	}
}
