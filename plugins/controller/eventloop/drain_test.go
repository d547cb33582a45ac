package eventloop

import (
	"errors"
	"maps"
	"slices"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// TestDrainProcessesWhatWasQueued: unlike Close, Drain processes and
// commits the events queued before it, their follow-ups included, and
// only then refuses new ones: a handover loses no admission.
func TestDrainProcessesWhatWasQueued(t *testing.T) {
	calls := &callLog{}
	entered, release := make(chan struct{}), make(chan struct{})
	followUp := newEvent("FollowUp", controllerapi.BestEffort, controllerapi.Forward)
	handlers := newHandlers(calls, "h1")
	handlers[0].followUps = map[string][]controllerapi.Event{"Q1": {followUp}}
	handlers[0].onUpdate = func(event controllerapi.Event, _ controllerapi.EventOperations) {
		if event.Spec().Name == "Slow" {
			close(entered)
			<-release
		}
	}
	committer := &recordingCommitter{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers), Committer: committer})
	loop.Start()
	slow := newEvent("Slow", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, slow)
	<-entered
	admission := newAdmission("Admission")
	queued := []*testEvent{newEvent("Q1", controllerapi.BestEffort, controllerapi.Forward), admission}
	mustPush(t, loop, queued[0], queued[1])

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		loop.Drain()
	}()
	<-loop.drain // Drain has begun.
	if err := loop.PushEvent(newEvent("Late", controllerapi.BestEffort, controllerapi.Forward)); !errors.Is(err, controllerapi.ErrClosedEventLoop) {
		t.Errorf("an event pushed while draining got %v, want ErrClosedEventLoop", err)
	}
	close(release)
	<-drained

	for _, event := range append([]*testEvent{slow, followUp}, queued...) {
		if err := mustWait(t, event); err != nil {
			t.Errorf("%s queued before the drain failed: %v", event.Name, err)
		}
	}
	// A follow-up runs once its event's commit is done.
	want := []string{"h1:update:Slow", "h1:update:Q1", "h1:update:Admission", "h1:update:FollowUp"}
	if got := withoutResyncs(calls.get()); !slices.Equal(got, want) {
		t.Errorf("handler calls = %v, want %v", got, want)
	}
	state := committer.getState()
	for _, name := range []string{"Slow", "Q1", "Admission", "FollowUp"} {
		if _, ok := state[ifKey("h1", name)]; !ok {
			t.Errorf("%s's change is not committed after the drain; committed: %v", name, slices.Collect(maps.Keys(state)))
		}
	}
	if err := loop.Close(); err != nil {
		t.Errorf("Close after Drain: %v", err)
	}
}
