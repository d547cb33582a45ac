package eventloop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// hangingCommitter is a recordingCommitter whose commits hang, as a
// KV scheduler transaction on a stopped VPP does, until release is closed
// or their context ends. entered gets a value as each hanging commit
// starts.
type hangingCommitter struct {
	recordingCommitter
	// hangs picks the commits that hang; nil: all.
	hangs   func(controllerapi.CommitRequest) bool
	entered chan struct{}
	release chan struct{}
}

func newHangingCommitter(hangs func(controllerapi.CommitRequest) bool) *hangingCommitter {
	return &hangingCommitter{hangs: hangs, entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (c *hangingCommitter) Commit(ctx context.Context, req controllerapi.CommitRequest) error {
	if c.hangs != nil && !c.hangs(req) {
		return c.recordingCommitter.Commit(ctx, req)
	}
	c.entered <- struct{}{}
	select {
	case <-c.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.recordingCommitter.Commit(ctx, req)
}

// TestAdmissionAnswersWhileCommitHangs: an admission queued behind an
// event whose commit hangs answers at once; the event waits for its
// commit, and both transactions reach the Committer once each, in order.
func TestAdmissionAnswersWhileCommitHangs(t *testing.T) {
	committer := newHangingCommitter(nil)
	calls := &callLog{}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: asHandlers(newHandlers(calls, "h")), Committer: committer})
	loop.Start()
	<-committer.entered // the startup resync's commit hangs
	addPod := newEvent("AddPod", controllerapi.BestEffort, controllerapi.Forward)
	addPod.Blocking = true
	allocate := newAdmission("Allocate")
	mustPush(t, loop, addPod, allocate)

	if err := mustWait(t, allocate); err != nil {
		t.Fatalf("admission behind a hanging commit: %v", err)
	}
	if err := waitBriefly(addPod); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AddPod was done (%v) before its commit", err)
	}
	close(committer.release)
	if err := mustWait(t, addPod); err != nil {
		t.Fatalf("AddPod after its commit: %v", err)
	}
	puts := map[string]int{}
	for _, commit := range committer.getCommits() {
		for key := range commit.Changes {
			puts[key]++
		}
	}
	for _, event := range []string{"resync", "AddPod", "Allocate"} {
		if got := puts[ifKey("h", event)]; got != 1 {
			t.Errorf("%s handed to the committer %d times, want once", ifKey("h", event), got)
		}
		if _, held := committer.getState()[ifKey("h", event)]; !held {
			t.Errorf("committer lacks %s", ifKey("h", event))
		}
	}
}

// waitBriefly waits a little for event: long enough for an outcome
// already known, context.DeadlineExceeded for one that is not.
func waitBriefly(event *testEvent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return event.Wait(ctx)
}

// keyHandler puts or deletes one key per event, as the event's name says;
// it leaves it alone for a Probe.
type keyHandler struct{ testHandler }

const mergedKey = "config/vpp/v2/interfaces/merged"

func (h *keyHandler) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	switch name := event.Spec().Name; name {
	case "Probe":
	case "Delete":
		txn.Delete(mergedKey)
	default:
		txn.Put(mergedKey, ifValue("v", name))
	}
	return "", nil
}

func (h *keyHandler) Resync(_ controllerapi.Event, txn controllerapi.EventOperations) error {
	txn.Put(ifKey("h", "resync"), ifValue("h", "resync"))
	return nil
}

// TestCommitsMergeInOrder: what the loop hands over while a commit hangs
// is merged into one commit that leaves every key as committing each event
// in turn would.
func TestCommitsMergeInOrder(t *testing.T) {
	tests := []struct {
		name   string
		events []string // "Resync", "Delete" or a value to put
		want   proto.Message
	}{
		{name: "last put wins", events: []string{"V1", "V2"}, want: ifValue("v", "V2")},
		{name: "put then delete", events: []string{"V1", "Delete"}, want: nil},
		{name: "delete then put", events: []string{"Delete", "V2"}, want: ifValue("v", "V2")},
		{name: "resync drops the update before it", events: []string{"V1", "Resync"}, want: nil},
		{name: "update after a resync", events: []string{"Resync", "V2"}, want: ifValue("v", "V2")},
		{name: "delete after a resync", events: []string{"V1", "Resync", "V2", "Delete"}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			committer := newHangingCommitter(func(req controllerapi.CommitRequest) bool {
				return strings.HasSuffix(req.Description, " First")
			})
			loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{&keyHandler{}}, Committer: committer})
			loop.Start()
			waitHealthy(t, loop)
			first := newEvent("First", controllerapi.BestEffort, controllerapi.Forward)
			mustPush(t, loop, first)
			<-committer.entered // First's commit hangs
			var last *ResyncEvent
			var lastEvent *testEvent
			for _, name := range tc.events {
				if name == "Resync" {
					last = NewResyncEvent(RequestedResyncName)
					mustPush(t, loop, last)
					continue
				}
				lastEvent = newEvent(name, controllerapi.BestEffort, controllerapi.Forward)
				mustPush(t, loop, lastEvent)
			}
			// Every event has run once the loop processed a probe behind them.
			probe := newAdmission("Probe")
			mustPush(t, loop, probe)
			mustWait(t, probe)
			close(committer.release)
			if last != nil {
				if err := last.Wait(waitCtx(t)); err != nil {
					t.Fatalf("resync: %v", err)
				}
			}
			if lastEvent != nil {
				mustWait(t, lastEvent)
			}
			commits := committer.getCommits()
			if len(commits) != 3 {
				t.Errorf("commits = %d, want the resync, First's and one of the %d events merged", len(commits), len(tc.events)+1)
			}
			got := committer.getState()[mergedKey]
			if !proto.Equal(got, tc.want) && !(got == nil && tc.want == nil) {
				t.Errorf("committer holds %s = %v, want %v", mergedKey, got, tc.want)
			}
		})
	}
}

// TestCloseCommitsWhatIsPending: Close returns once the commits of the
// events processed are done, and their waiters get the commits' outcome.
func TestCloseCommitsWhatIsPending(t *testing.T) {
	committer := newHangingCommitter(nil)
	cfg := testConfig()
	cfg.CommitTimeout = configfile.Duration(time.Hour)
	loop := newTestLoop(t, cfg, Deps{Handlers: asHandlers(newHandlers(&callLog{}, "h")), Committer: committer})
	loop.Start()
	<-committer.entered
	event := newEvent("AddPod", controllerapi.BestEffort, controllerapi.Forward)
	mustPush(t, loop, event)
	probe := newAdmission("Probe")
	mustPush(t, loop, probe)
	mustWait(t, probe)

	closed := make(chan error)
	go func() { closed <- loop.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a commit was pending", err)
	case <-time.After(20 * time.Millisecond): // long enough for a Close that does not wait
	}
	close(committer.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := mustWait(t, event); errors.Is(err, controllerapi.ErrClosedEventLoop) || err != nil {
		t.Errorf("AddPod's waiter got %v, want its commit's outcome, nil", err)
	}
	if _, held := committer.getState()[ifKey("h", "AddPod")]; !held {
		t.Errorf("committer lacks %s after Close", ifKey("h", "AddPod"))
	}
}

// TestFollowUpsRunAfterTheirEventsCommit: the follow-ups of an event whose
// transaction is being committed run once the commit is done, as a
// DeletePod's releases must (the socket directory outlives the interface
// VPP is told to delete); the events queued meanwhile do not wait.
func TestFollowUpsRunAfterTheirEventsCommit(t *testing.T) {
	calls := &callLog{}
	followUp := newEvent("Release", controllerapi.BestEffort, controllerapi.Forward)
	committer := newHangingCommitter(func(req controllerapi.CommitRequest) bool {
		return strings.Contains(req.Description, " DeletePod")
	})
	handler := &testHandler{name: "h", calls: calls, followUps: map[string][]controllerapi.Event{"DeletePod": {followUp}}}
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{handler}, Committer: committer})
	loop.Start()
	waitHealthy(t, loop)
	deletePod, allocate := newEvent("DeletePod", controllerapi.BestEffort, controllerapi.Forward), newAdmission("Allocate")
	mustPush(t, loop, deletePod, allocate)
	<-committer.entered
	if err := mustWait(t, allocate); err != nil {
		t.Fatalf("admission queued behind the commit: %v", err)
	}
	if slices.Contains(calls.get(), "h:update:Release") {
		t.Fatalf("the follow-up ran before its event's commit: %v", calls.get())
	}
	close(committer.release)
	if err := mustWait(t, followUp); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	want := []string{"h:update:DeletePod", "h:update:Allocate", "h:update:Release"}
	if got := withoutResyncs(calls.get()); !slices.Equal(got, want) {
		t.Errorf("handler calls = %v, want %v", got, want)
	}
}
