package eventloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

func TestUpdateVisitsHandlersInOrder(t *testing.T) {
	tests := []struct {
		name string
		dir  controllerapi.UpdateDirectionType
		skip string // handler that does not handle the event
		want []string
	}{
		{name: "forward", dir: controllerapi.Forward, want: []string{"h1:update:E", "h2:update:E", "h3:update:E"}},
		{name: "reverse", dir: controllerapi.Reverse, want: []string{"h3:update:E", "h2:update:E", "h1:update:E"}},
		{name: "forward skips a handler not handling the event", dir: controllerapi.Forward, skip: "h2",
			want: []string{"h1:update:E", "h3:update:E"}},
		{name: "reverse skips a handler not handling the event", dir: controllerapi.Reverse, skip: "h1",
			want: []string{"h3:update:E", "h2:update:E"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2", "h3")
			for _, h := range handlers {
				h.skip = map[string]bool{}
				if h.name == tc.skip {
					h.skip["E"] = true
				}
			}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers)})
			loop.Start()
			event := newEvent("E", controllerapi.BestEffort, tc.dir)
			mustPush(t, loop, event)
			if err := mustWait(t, event); err != nil {
				t.Fatalf("event failed: %v", err)
			}
			if got := withoutResyncs(calls.get()); !slices.Equal(got, tc.want) {
				t.Errorf("handler calls = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStartupResyncRunsBeforeHeldUpdates(t *testing.T) {
	calls := &callLog{}
	committer := &recordingCommitter{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(newHandlers(calls, "h1", "h2")), Committer: committer})
	first, second := newEvent("A", controllerapi.BestEffort, controllerapi.Forward), newEvent("B", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, first, second)
	if got := loop.Health().State; got != Starting {
		t.Errorf("health before Start = %s, want starting", got)
	}
	loop.Start()
	if err := mustWait(t, second); err != nil {
		t.Fatalf("held event B failed: %v", err)
	}
	want := []string{
		"h1:resync#1:StartupResync", "h2:resync#1:StartupResync",
		"h1:update:A", "h2:update:A", "h1:update:B", "h2:update:B",
	}
	if got := calls.get(); !slices.Equal(got, want) {
		t.Errorf("handler calls = %v, want %v", got, want)
	}
	// The updates ran while the resync's commit was in progress: they may
	// be merged into it or into one commit of their own, but come after it.
	if commits := committer.getCommits(); len(commits) == 0 || !commits[0].Resync {
		t.Errorf("commits = %+v, want the resync's first", commits)
	}
	state := committer.getState()
	for _, name := range []string{"h1", "h2"} {
		for _, event := range []string{"resync", "A", "B"} {
			if _, held := state[ifKey(name, event)]; !held {
				t.Errorf("committer lacks %s", ifKey(name, event))
			}
		}
	}
	if got := loop.Health().State; got != Healthy {
		t.Errorf("health after startup resync = %s, want healthy", got)
	}
}

func TestFollowUpsRunBeforeQueuedEvents(t *testing.T) {
	calls := &callLog{}
	followUp1, followUp2 := newEvent("F1", controllerapi.BestEffort, controllerapi.Forward), newEvent("F2", controllerapi.BestEffort, controllerapi.Forward)
	nested := newEvent("G", controllerapi.BestEffort, controllerapi.Forward)
	handler := &testHandler{name: "h", calls: calls, putNothing: true, followUps: map[string][]controllerapi.Event{
		"A":  {followUp1, followUp2},
		"F1": {nested},
	}}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}})
	queued := newEvent("B", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, newEvent("A", controllerapi.BestEffort, controllerapi.Forward), queued)
	loop.Start()
	if err := mustWait(t, queued); err != nil {
		t.Fatalf("event B failed: %v", err)
	}
	want := []string{"h:update:A", "h:update:F1", "h:update:G", "h:update:F2", "h:update:B"}
	if got := withoutResyncs(calls.get()); !slices.Equal(got, want) {
		t.Errorf("handler calls = %v, want %v", got, want)
	}
}

func TestBlockingFollowUpIsRefused(t *testing.T) {
	calls := &callLog{}
	blocking := newEvent("Blocking", controllerapi.BestEffort, controllerapi.Forward)
	blocking.Blocking = true
	handler := &testHandler{name: "h", calls: calls, followUps: map[string][]controllerapi.Event{"A": {blocking}},
		followUpErrs: make(chan error, 1)}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}})
	loop.Start()
	pushing, after := newEvent("A", controllerapi.BestEffort, controllerapi.Forward), newEvent("After", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, pushing, after)
	if err := mustWait(t, pushing); err != nil {
		t.Fatalf("pushing event failed: %v", err)
	}
	if err := <-handler.followUpErrs; !errors.Is(err, controllerapi.ErrBlockingFollowUp) {
		t.Errorf("PushFollowUp(blocking) = %v, want ErrBlockingFollowUp", err)
	}
	if err := mustWait(t, after); err != nil {
		t.Fatalf("the loop did not go on after the refused follow-up: %v", err)
	}
	if slices.Contains(calls.get(), "h:update:Blocking") {
		t.Errorf("the refused blocking follow-up was processed: %v", calls.get())
	}
}

func TestRevertOnFailure(t *testing.T) {
	tests := []struct {
		name        string
		dir         controllerapi.UpdateDirectionType
		failHandler string
		want        []string
	}{
		{name: "first handler fails: nothing to revert", dir: controllerapi.Forward, failHandler: "h1",
			want: []string{"h1:update:E"}},
		{name: "last handler fails: the others reverted last first", dir: controllerapi.Forward, failHandler: "h3",
			want: []string{"h1:update:E", "h2:update:E", "h3:update:E", "h2:revert:E", "h1:revert:E"}},
		{name: "middle handler fails: the rest do not run", dir: controllerapi.Forward, failHandler: "h2",
			want: []string{"h1:update:E", "h2:update:E", "h1:revert:E"}},
		{name: "reverse direction: reverted in forward order", dir: controllerapi.Reverse, failHandler: "h1",
			want: []string{"h3:update:E", "h2:update:E", "h1:update:E", "h2:revert:E", "h3:revert:E"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2", "h3")
			for _, h := range handlers {
				h.failUpdate = map[string]bool{"E": h.name == tc.failHandler}
			}
			committer := &recordingCommitter{}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers), Committer: committer})
			loop.Start()
			waitHealthy(t, loop)
			event := newEvent("E", controllerapi.RevertOnFailure, tc.dir)
			mustPush(t, loop, event)
			if err := mustWait(t, event); !errors.Is(err, errHandlerFailed) {
				t.Errorf("event error = %v, want %v", err, errHandlerFailed)
			}
			if got := withoutResyncs(calls.get()); !slices.Equal(got, tc.want) {
				t.Errorf("handler calls = %v, want %v", got, tc.want)
			}
			assertOnlyResyncValues(t, committer)
			if got := loop.history.All()[1]; got.Committed != 0 || got.Error == "" {
				t.Errorf("history record = %+v, want an error and nothing committed", got)
			}
		})
	}
}

// TestFailedCommitHeals: a commit that failed (or timed out while the
// scheduler went on) may have applied part of the transaction; the event
// is not reverted, since later events ran on top of it, and a healing
// resync puts back exactly what the handlers hold.
func TestFailedCommitHeals(t *testing.T) {
	tests := []struct {
		name    string
		txnType controllerapi.UpdateTransactionType
	}{
		{name: "revert on failure", txnType: controllerapi.RevertOnFailure},
		{name: "best effort", txnType: controllerapi.BestEffort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2", "h3")
			committer := &recordingCommitter{fail: func(req controllerapi.CommitRequest) bool { return !req.Resync }}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers), Committer: committer})
			loop.Start()
			waitHealthy(t, loop)
			event := newEvent("E", tc.txnType, controllerapi.Forward)
			mustPush(t, loop, event)
			if err := mustWait(t, event); !errors.Is(err, errCommitFailed) {
				t.Fatalf("event error = %v, want the commit's error", err)
			}
			if got := withoutResyncs(calls.get()); slices.ContainsFunc(got, func(call string) bool { return strings.Contains(call, ":revert:") }) {
				t.Errorf("handler calls = %v, want no revert after a failed commit", got)
			}
			eventually(t, "a healing resync committed after the failed commit", func() bool {
				commits := committer.getCommits()
				return slices.ContainsFunc(loop.history.All(), func(rec controllerapi.EventRecord) bool {
					return rec.Name == HealingResyncName
				}) && commits[len(commits)-1].Resync
			})
			if rec, _ := loop.history.BySeqNum(2); !strings.Contains(rec.Error, errCommitFailed.Error()) {
				t.Errorf("history record of E = %+v, want the commit's error", rec)
			}
			state := committer.getState()
			for _, name := range []string{"h1", "h2", "h3"} {
				if _, ok := state[ifKey(name, "resync")]; !ok {
					t.Errorf("committer lacks %s after healing", ifKey(name, "resync"))
				}
			}
		})
	}
}

// assertOnlyResyncValues checks that the committer holds only what the
// startup resync put, and that nothing but the resync reached it.
func assertOnlyResyncValues(t *testing.T, committer *recordingCommitter) {
	t.Helper()
	if got := len(committer.getCommits()); got != 1 {
		t.Errorf("commits = %d, want 1", got)
	}
	state := committer.getState()
	for _, name := range []string{"h1", "h2", "h3"} {
		if _, ok := state[ifKey(name, "E")]; ok {
			t.Errorf("committer holds %s after a reverted event", ifKey(name, "E"))
		}
		if _, ok := state[ifKey(name, "resync")]; !ok {
			t.Errorf("committer lost %s from the startup resync", ifKey(name, "resync"))
		}
	}
}

func TestBestEffortErrors(t *testing.T) {
	tests := []struct {
		name        string
		txnType     controllerapi.UpdateTransactionType
		wantHealing bool
	}{
		{name: "best effort schedules a healing resync", txnType: controllerapi.BestEffort, wantHealing: true},
		{name: "best effort ignore errors does not", txnType: controllerapi.BestEffortIgnoreErrors, wantHealing: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2", "h3")
			handlers[1].failUpdate = map[string]bool{"E": true}
			var healingArmed bool
			committer := &recordingCommitter{}
			cfg := testConfig()
			cfg.HealingDelay, cfg.HealingMaxDelay = configfile.Duration(time.Hour), configfile.Duration(time.Hour)
			loop := newTestLoop(t, cfg, Deps{Handlers: asHandlers(handlers), Committer: committer})
			// The probe runs on the loop goroutine, where the timer lives.
			handlers[0].onUpdate = func(event controllerapi.Event, _ controllerapi.EventOperations) {
				if event.Spec().Name == "Probe" {
					healingArmed = loop.healingTimer != nil
				}
			}
			loop.Start()
			event, probe := newEvent("E", tc.txnType, controllerapi.Forward), newEvent("Probe", controllerapi.BestEffort, controllerapi.Forward)
			mustPush(t, loop, event, probe)
			if err := mustWait(t, event); !errors.Is(err, errHandlerFailed) {
				t.Errorf("event error = %v, want the handler's error", err)
			}
			if err := mustWait(t, probe); err != nil {
				t.Fatalf("probe failed: %v", err)
			}
			want := []string{"h1:update:E", "h2:update:E", "h3:update:E"}
			if got := withoutResyncs(calls.get())[:3]; !slices.Equal(got, want) {
				t.Errorf("handler calls = %v, want %v", got, want)
			}
			state := committer.getState()
			for key, wantHeld := range map[string]bool{ifKey("h1", "E"): true, ifKey("h2", "E"): false, ifKey("h3", "E"): true} {
				if _, held := state[key]; held != wantHeld {
					t.Errorf("committer holds %s: %v, want %v", key, held, wantHeld)
				}
			}
			if healingArmed != tc.wantHealing {
				t.Errorf("healing resync scheduled: %v, want %v", healingArmed, tc.wantHealing)
			}
		})
	}
}

func TestHealingResync(t *testing.T) {
	calls := &callLog{}
	handlers := newHandlers(calls, "h1", "h2")
	handlers[0].failUpdate = map[string]bool{"E": true}
	// Resync #2 is the first healing resync: it fails; #3 succeeds.
	handlers[1].failResync = func(n int) bool { return n == 2 }
	var (
		healthMu sync.Mutex
		states   []HealthState
	)
	loop := newTestLoop(t, testConfig(), Deps{
		Handlers: asHandlers(handlers),
		HealthChanged: func(h Health) {
			healthMu.Lock()
			defer healthMu.Unlock()
			states = append(states, h.State)
		},
	})
	loop.Start()
	// The startup resync is committed off the loop: E waits until the
	// loop is healthy, or E's healing could fail before that commit lands
	// and the startup's Healthy would never be reported.
	eventually(t, "healthy after the startup resync", func() bool {
		healthMu.Lock()
		defer healthMu.Unlock()
		return len(states) > 0
	})
	event := newEvent("E", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, event)
	if err := mustWait(t, event); !errors.Is(err, errHandlerFailed) {
		t.Fatalf("event error = %v, want the handler's error", err)
	}
	// The loop turns healthy once the second healing resync is committed.
	want := []HealthState{Healthy, Unhealthy, Healthy}
	var got []HealthState
	eventually(t, "healthy again after a failed healing resync", func() bool {
		healthMu.Lock()
		defer healthMu.Unlock()
		got = slices.Clone(states)
		return len(got) >= len(want)
	})
	if !slices.Equal(got, want) {
		t.Errorf("health changes = %v, want %v", got, want)
	}
	var healingErrors []string
	for _, rec := range loop.history.All() {
		if rec.Name == HealingResyncName {
			healingErrors = append(healingErrors, rec.Error)
		}
	}
	if !slices.Contains(calls.get(), "h2:resync#3:HealingResync") {
		t.Errorf("handler calls %v lack the second healing resync", calls.get())
	}
	if len(healingErrors) != 2 || healingErrors[0] == "" || healingErrors[1] != "" {
		t.Errorf("healing resyncs in history: errors %q, want a failed one then a successful one", healingErrors)
	}
}

// TestHealingBackoffFollowsTheConfig: the healing delay starts at
// healing-delay, doubles at each healing scheduled up to
// healing-max-delay (backoff.Delay), and starts over after a successful
// resync.
func TestHealingBackoffFollowsTheConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HealingDelay, cfg.HealingMaxDelay = configfile.Duration(time.Second), configfile.Duration(5*time.Second)
	loop := newTestLoop(t, cfg, Deps{})
	for range 3 {
		loop.scheduleHealing(0)
		loop.stopHealing()
	}
	if got := loop.healingDelay.Next(); got != 5*time.Second {
		t.Errorf("fourth healing delay = %v, want healing-max-delay 5s", got)
	}
	loop.resetHealing()
	if got := loop.healingDelay.Next(); got != time.Second {
		t.Errorf("delay after a successful resync = %v, want healing-delay 1s", got)
	}
}

func TestPushEventRefusals(t *testing.T) {
	background := func(name string) controllerapi.Event {
		return newEvent(name, controllerapi.BestEffort, controllerapi.Forward)
	}
	admission := func(name string) controllerapi.Event { return newAdmission(name) }
	tests := []struct {
		name    string
		closeIt bool
		// pushes are made in order into a loop that has not started, with
		// event-queue-size 2 and admission-queue-size 2; the last is the
		// one refused.
		pushes     []controllerapi.Event
		wantErr    error
		wantLane   string
		wantReason string
	}{
		{
			name:    "background beyond its room",
			pushes:  []controllerapi.Event{background("B"), background("B"), background("E")},
			wantErr: controllerapi.ErrEventQueueFull, wantLane: backgroundLane, wantReason: refusedQueueFull,
		},
		{
			name:    "background room taken by admissions",
			pushes:  []controllerapi.Event{admission("A"), admission("A"), admission("A"), admission("A"), background("E")},
			wantErr: controllerapi.ErrEventQueueFull, wantLane: backgroundLane, wantReason: refusedQueueFull,
		},
		{
			name: "admission beyond its own room",
			pushes: []controllerapi.Event{background("B"), background("B"),
				admission("A"), admission("A"), admission("E")},
			wantErr: controllerapi.ErrEventQueueFull, wantLane: admissionLane, wantReason: refusedQueueFull,
		},
		{
			name: "closed loop, background", closeIt: true, pushes: []controllerapi.Event{background("E")},
			wantErr: controllerapi.ErrClosedEventLoop, wantLane: backgroundLane, wantReason: refusedClosed,
		},
		{
			name: "closed loop, admission", closeIt: true, pushes: []controllerapi.Event{admission("E")},
			wantErr: controllerapi.ErrClosedEventLoop, wantLane: admissionLane, wantReason: refusedClosed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.QueueSize, cfg.AdmissionQueueSize = 2, 2
			loop := newTestLoop(t, cfg, Deps{})
			if tc.closeIt {
				_ = loop.Close()
			}
			last := len(tc.pushes) - 1
			mustPush(t, loop, tc.pushes[:last]...)
			if err := loop.PushEvent(tc.pushes[last]); !errors.Is(err, tc.wantErr) {
				t.Errorf("last PushEvent = %v, want %v", err, tc.wantErr)
			}
			if got := counterValue(t, loop.metrics.refused.WithLabelValues("E", tc.wantLane, tc.wantReason)); got != 1 {
				t.Errorf("refused pushes counted for lane %s, %s: %v, want 1", tc.wantLane, tc.wantReason, got)
			}
		})
	}
}

// TestAdmissionsGetTheirOwnRoom fills the background room of a queue, as a
// flood of AddPods does, then admits as many pods as the admission room
// holds: none is refused, every event runs in push order, and the
// background room is free again once the queue drains.
func TestAdmissionsGetTheirOwnRoom(t *testing.T) {
	calls := &callLog{}
	cfg := testConfig()
	cfg.QueueSize, cfg.AdmissionQueueSize = 5, 3
	loop := newTestLoop(t, cfg, Deps{Handlers: asHandlers(newHandlers(calls, "h"))})
	var want []string
	for i := 0; ; i++ {
		event := newEvent(fmt.Sprintf("AddPod%d", i), controllerapi.BestEffort, controllerapi.Forward)
		if err := loop.PushEvent(event); err != nil {
			if !errors.Is(err, controllerapi.ErrEventQueueFull) || i != cfg.QueueSize {
				t.Fatalf("background push %d refused with %v, want ErrEventQueueFull after %d", i, err, cfg.QueueSize)
			}
			break
		}
		want = append(want, "h:update:"+event.Name)
	}
	var admissions []*testEvent
	for i := range cfg.AdmissionQueueSize {
		event := newAdmission(fmt.Sprintf("Allocate%d", i))
		if err := loop.PushEvent(event); err != nil {
			t.Fatalf("admission %d refused behind a full background room: %v", i, err)
		}
		admissions = append(admissions, event)
		want = append(want, "h:update:"+event.Name)
	}
	loop.Start()
	for _, event := range admissions {
		if err := mustWait(t, event); err != nil {
			t.Errorf("admission %s failed: %v", event.Name, err)
		}
	}
	if got := calls.get(); !slices.Equal(got[1:], want) {
		t.Errorf("handler calls after the startup resync\n got %v\nwant %v (push order)", got[1:], want)
	}
	for i := range cfg.QueueSize {
		if err := loop.PushEvent(newEvent("Later", controllerapi.BestEffort, controllerapi.Forward)); err != nil {
			t.Fatalf("background push %d after the queue drained: %v", i, err)
		}
	}
}

func TestCloseBeforeStart(t *testing.T) {
	calls := &callLog{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(newHandlers(calls, "h1", "h2"))})
	held := newEvent("Held", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, held)
	_ = loop.Close()
	if err := mustWait(t, held); !errors.Is(err, controllerapi.ErrClosedEventLoop) {
		t.Errorf("waiter of a held event got %v, want ErrClosedEventLoop", err)
	}
	loop.Start()
	if got := calls.get(); len(got) != 0 {
		t.Errorf("handler calls = %v, want none (Start after Close must do nothing)", got)
	}
}

func TestCloseFailsEveryWaiter(t *testing.T) {
	calls := &callLog{}
	entered, release := make(chan struct{}), make(chan struct{})
	followUp := newEvent("FollowUp", controllerapi.BestEffort, controllerapi.Forward)
	handlers := newHandlers(calls, "h1", "h2")
	handlers[0].followUps = map[string][]controllerapi.Event{"Slow": {followUp}}
	handlers[0].onUpdate = func(event controllerapi.Event, _ controllerapi.EventOperations) {
		if event.Spec().Name == "Slow" {
			close(entered)
			<-release
		}
	}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers)})
	loop.Start()
	slow := newEvent("Slow", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, slow)
	<-entered
	queued := []*testEvent{newEvent("Q1", controllerapi.BestEffort, controllerapi.Forward), newEvent("Q2", controllerapi.RevertOnFailure, controllerapi.Forward)}
	queued[1].Blocking = true
	mustPush(t, loop, queued[0], queued[1])

	closed := make(chan error)
	go func() { closed <- loop.Close() }()
	<-loop.stop // Close has begun: nothing new starts after the slow event.
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}

	if err := mustWait(t, slow); err != nil {
		t.Errorf("the event in progress failed: %v", err)
	}
	for _, event := range append(queued, followUp) {
		if err := mustWait(t, event); !errors.Is(err, controllerapi.ErrClosedEventLoop) {
			t.Errorf("waiter of %s got %v, want ErrClosedEventLoop", event.Name, err)
		}
	}
	want := []string{"h1:update:Slow", "h2:update:Slow"}
	if got := withoutResyncs(calls.get()); !slices.Equal(got, want) {
		t.Errorf("handler calls = %v, want %v", got, want)
	}
	if err := loop.PushEvent(newEvent("Late", controllerapi.BestEffort, controllerapi.Forward)); !errors.Is(err, controllerapi.ErrClosedEventLoop) {
		t.Errorf("PushEvent after Close = %v, want ErrClosedEventLoop", err)
	}
}

func TestFullResyncCommitsCompleteValueSet(t *testing.T) {
	handler := &testHandler{name: "h", calls: &callLog{}}
	committer := &recordingCommitter{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}, Committer: committer})
	loop.Start()
	event := newEvent("A", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, event)
	if err := mustWait(t, event); err != nil {
		t.Fatalf("event failed: %v", err)
	}
	if err := loop.Resync(waitCtx(t)); err != nil {
		t.Fatalf("resync: %v", err)
	}
	commits := committer.getCommits()
	last := commits[len(commits)-1]
	if !last.Resync || len(last.Changes) != 1 || last.Changes[ifKey("h", "resync")] == nil {
		t.Errorf("resync commit = %+v, want only %s with Resync set", last, ifKey("h", "resync"))
	}
	if _, held := committer.getState()[ifKey("h", "A")]; held {
		t.Errorf("a value not put by the resync survived it: %s", ifKey("h", "A"))
	}
}

func TestHistoryIsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.HistorySize = 3
	loop := newTestLoop(t, cfg, Deps{})
	loop.Start()
	events := []*testEvent{}
	for _, name := range []string{"A", "B", "C", "D"} {
		events = append(events, newEvent(name, controllerapi.BestEffort, controllerapi.Forward))
		mustPush(t, loop, events[len(events)-1])
	}
	_ = mustWait(t, events[3])
	var got []uint64
	for _, rec := range loop.history.All() {
		got = append(got, rec.SeqNum)
	}
	if want := []uint64{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("kept seqNums = %v, want %v", got, want)
	}
}

func counterValue(t *testing.T, counter prometheus.Counter) float64 {
	t.Helper()
	var metric dto.Metric
	if err := counter.Write(&metric); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return metric.GetCounter().GetValue()
}

// TestFullResyncReplacesTheValueSet: a resync commits the complete value
// set, so a value an earlier update put and no handler puts again goes.
func TestFullResyncReplacesTheValueSet(t *testing.T) {
	calls := &callLog{}
	committer := &recordingCommitter{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{&testHandler{name: "h", calls: calls}}, Committer: committer})
	loop.Start()
	update := newEvent("A", controllerapi.BestEffort, controllerapi.Forward)
	resync := NewResyncEvent("Resync")
	mustPush(t, loop, update, resync)
	if err := resync.Wait(waitCtx(t)); err != nil {
		t.Fatalf("resync: %v", err)
	}
	if want := "h:resync#2:Resync"; !slices.Contains(calls.get(), want) {
		t.Errorf("handler calls = %v, want %s", calls.get(), want)
	}
	commits := committer.getCommits()
	if last := commits[len(commits)-1]; !last.Resync {
		t.Errorf("last commit Resync = false, want true")
	}
	if _, held := committer.getState()[ifKey("h", "A")]; held {
		t.Errorf("committer holds the update's value after the resync, want it removed")
	}
}

// TestRequestedResyncsCoalesce: while the loop is busy, any number of
// Resync calls queue one resync, which every caller gets the outcome of.
func TestRequestedResyncsCoalesce(t *testing.T) {
	calls := &callLog{}
	running, release := make(chan struct{}), make(chan struct{})
	handler := &testHandler{name: "h", calls: calls, onUpdate: func(event controllerapi.Event, _ controllerapi.EventOperations) {
		if event.Spec().Name == "hold" {
			close(running)
			<-release
		}
	}}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}})
	loop.Start()
	hold := newEvent("hold", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, hold)
	<-running

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 * testConfig().QueueSize {
		if err := loop.Resync(gone); !errors.Is(err, context.Canceled) {
			t.Fatalf("Resync while the loop is busy = %v, want it queued and its caller gone", err)
		}
	}
	loop.requestedMu.Lock()
	queued := loop.requested
	loop.requestedMu.Unlock()
	close(release)
	if err := queued.Wait(waitCtx(t)); err != nil {
		t.Fatalf("the queued resync: %v", err)
	}
	requested := 0
	for _, call := range calls.get() {
		if strings.HasSuffix(call, ":"+RequestedResyncName) {
			requested++
		}
	}
	if requested != 1 {
		t.Errorf("%d requested resyncs ran, want 1 for all %d calls: %v", requested, 10*testConfig().QueueSize, calls.get())
	}
}
