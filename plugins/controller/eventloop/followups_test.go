package eventloop

import (
	"errors"
	"slices"
	"strings"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// TestFollowUpsOfAFailedEventAreDropped: a follow-up is pushed for the
// change its event makes (a DeletePod's release of the socket directory
// once the vswitch side is removed). When the event fails or is reverted,
// that change did not happen as the pushing handler saw it, so the
// follow-up must not run: it would remove a directory the vswitch still
// listens on.
func TestFollowUpsOfAFailedEventAreDropped(t *testing.T) {
	tests := []struct {
		name    string
		txnType controllerapi.UpdateTransactionType
		// failing is the handler that fails, "" for none.
		failing string
		want    []string
	}{
		{name: "succeeded: the follow-up runs", txnType: controllerapi.BestEffort,
			want: []string{"h1:update:E", "h2:update:E", "h1:update:Release", "h2:update:Release", "h1:update:After", "h2:update:After"}},
		{name: "reverted by a later handler", txnType: controllerapi.RevertOnFailure, failing: "h2",
			want: []string{"h1:update:E", "h2:update:E", "h1:revert:E", "h1:update:After", "h2:update:After"}},
		{name: "failed in the pushing handler itself", txnType: controllerapi.RevertOnFailure, failing: "h1",
			want: []string{"h1:update:E", "h1:update:After", "h2:update:After"}},
		{name: "best effort, a later handler failed", txnType: controllerapi.BestEffort, failing: "h2",
			want: []string{"h1:update:E", "h2:update:E", "h1:update:After", "h2:update:After"}},
		{name: "best effort ignoring errors, a later handler failed", txnType: controllerapi.BestEffortIgnoreErrors, failing: "h2",
			want: []string{"h1:update:E", "h2:update:E", "h1:update:After", "h2:update:After"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := &callLog{}
			handlers := newHandlers(calls, "h1", "h2")
			release := newEvent("Release", controllerapi.BestEffort, controllerapi.Forward)
			handlers[0].followUps = map[string][]controllerapi.Event{"E": {release}}
			for _, h := range handlers {
				// Nothing to commit: a follow-up that runs runs right
				// after its event.
				h.putNothing = true
				h.failUpdate = map[string]bool{"E": h.name == tc.failing}
			}
			loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(handlers)})
			loop.Start()
			waitHealthy(t, loop)
			event, after := newEvent("E", tc.txnType, controllerapi.Forward), newEvent("After", controllerapi.BestEffortIgnoreErrors, controllerapi.Forward)
			mustPush(t, loop, event, after)
			if err := mustWait(t, event); (err != nil) != (tc.failing != "") {
				t.Fatalf("event E = %v, want failure %v", err, tc.failing != "")
			}
			if err := mustWait(t, after); err != nil {
				t.Fatalf("the event after E: %v", err)
			}
			err := mustWait(t, release)
			if dropped := errors.Is(err, controllerapi.ErrDroppedFollowUp); dropped != (tc.failing != "") {
				t.Errorf("follow-up told %v; want dropped %v", err, tc.failing != "")
			}
			if got := withoutResyncs(calls.get()); !slices.Equal(got, tc.want) {
				t.Errorf("handler calls = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFollowUpsRunAfterAFailedCommit: a commit that fails does not drop
// the follow-ups of its events. The configuration the loop keeps already
// holds what the events put, and the healing resync applies it; the
// handlers' state moved on, so their follow-ups run as after a commit.
func TestFollowUpsRunAfterAFailedCommit(t *testing.T) {
	calls := &callLog{}
	release := newEvent("Release", controllerapi.BestEffort, controllerapi.Forward)
	handler := &testHandler{name: "h", calls: calls, followUps: map[string][]controllerapi.Event{"DeletePod": {release}}}
	committer := &recordingCommitter{fail: func(req controllerapi.CommitRequest) bool {
		return strings.Contains(req.Description, " DeletePod")
	}}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}, Committer: committer})
	loop.Start()
	waitHealthy(t, loop)
	deletePod := newEvent("DeletePod", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, deletePod)
	if err := mustWait(t, deletePod); !errors.Is(err, errCommitFailed) {
		t.Errorf("DeletePod = %v, want its commit's failure", err)
	}
	if err := mustWait(t, release); err != nil {
		t.Errorf("the follow-up of an event whose commit failed: %v", err)
	}
	if !slices.Contains(calls.get(), "h:update:Release") {
		t.Errorf("the follow-up did not run: %v", calls.get())
	}
}
