package eventloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// callLog records what handlers were asked to do, in order.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) add(format string, args ...interface{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

func (c *callLog) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// testHandler puts one interface per event it handles and records its calls.
type testHandler struct {
	name  string
	calls *callLog
	// skip lists event names the handler does not handle.
	skip map[string]bool
	// failUpdate lists event names whose Update fails.
	failUpdate map[string]bool
	// failResync tells whether resync number n fails.
	failResync func(n int) bool
	// followUps lists the events to push as follow-ups, by event name.
	followUps map[string][]controllerapi.Event
	// onUpdate, if set, runs inside Update (on the loop goroutine).
	onUpdate func(event controllerapi.Event, txn controllerapi.EventOperations)
	// followUpErrs collects what PushFollowUp returned.
	followUpErrs chan error
	// putNothing: Update commits nothing.
	putNothing bool
	// resyncs counts the handler's resyncs (on the loop goroutine).
	resyncs int
}

var errHandlerFailed = errors.New("handler failed on purpose")

func (h *testHandler) String() string { return h.name }

func (h *testHandler) HandlesEvent(event controllerapi.Event) bool { return !h.skip[event.Spec().Name] }

func (h *testHandler) Resync(event controllerapi.Event, txn controllerapi.EventOperations) error {
	h.resyncs++
	h.calls.add("%s:resync#%d:%s", h.name, h.resyncs, event.Spec().Name)
	txn.Put(ifKey(h.name, "resync"), ifValue(h.name, "resync"))
	if h.failResync != nil && h.failResync(h.resyncs) {
		return errHandlerFailed
	}
	return nil
}

func (h *testHandler) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	name := event.Spec().Name
	h.calls.add("%s:update:%s", h.name, name)
	if h.onUpdate != nil {
		h.onUpdate(event, txn)
	}
	for _, followUp := range h.followUps[name] {
		err := txn.PushFollowUp(followUp)
		if h.followUpErrs != nil {
			h.followUpErrs <- err
		}
	}
	if h.failUpdate[name] {
		return "", errHandlerFailed
	}
	if h.putNothing {
		return "", nil
	}
	key := ifKey(h.name, name)
	txn.Put(key, ifValue(h.name, name))
	return "put " + key, nil
}

func (h *testHandler) Revert(event controllerapi.Event) error {
	h.calls.add("%s:revert:%s", h.name, event.Spec().Name)
	return nil
}

func ifName(handler, event string) string { return handler + "-" + event }

func ifKey(handler, event string) string { return vpp_interfaces.InterfaceKey(ifName(handler, event)) }

func ifValue(handler, event string) *vpp_interfaces.Interface {
	return &vpp_interfaces.Interface{Name: ifName(handler, event), Type: vpp_interfaces.Interface_MEMIF, Enabled: true}
}

// testEvent is an update event whose spec is its own; every testEvent can
// be waited for, and Blocking says what it declares.
type testEvent struct {
	controllerapi.EventSpec
	*controllerapi.Result
}

func newEvent(name string, txnType controllerapi.UpdateTransactionType, dir controllerapi.UpdateDirectionType) *testEvent {
	return &testEvent{
		EventSpec: controllerapi.EventSpec{Name: name, Transaction: txnType, Direction: dir},
		Result:    controllerapi.NewResult(),
	}
}

// newAdmission returns a blocking event a pod's admission waits on, as
// kubelet's Allocate pushes it.
func newAdmission(name string) *testEvent {
	event := newEvent(name, controllerapi.RevertOnFailure, controllerapi.Forward)
	event.Blocking, event.Admission = true, true
	return event
}

func (e *testEvent) String() string { return "test event " + e.Name }

// recordingCommitter keeps every commit and the configuration they add up
// to, like the KV scheduler's northbound view.
type recordingCommitter struct {
	mu      sync.Mutex
	commits []controllerapi.CommitRequest
	state   map[string]proto.Message
	// fail, if set, decides whether a commit fails.
	fail func(req controllerapi.CommitRequest) bool
}

var errCommitFailed = errors.New("commit failed on purpose")

func (c *recordingCommitter) Commit(_ context.Context, req controllerapi.CommitRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits = append(c.commits, req)
	if c.fail != nil && c.fail(req) {
		return errCommitFailed
	}
	if req.Resync || c.state == nil {
		c.state = map[string]proto.Message{}
	}
	for key, value := range req.Changes {
		if value == nil {
			delete(c.state, key)
			continue
		}
		c.state[key] = value
	}
	return nil
}

func (c *recordingCommitter) getCommits() []controllerapi.CommitRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]controllerapi.CommitRequest(nil), c.commits...)
}

func (c *recordingCommitter) getState() map[string]proto.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.state)
}

// testConfig is DefaultConfig with a healing delay short enough for tests
// that wait for healing.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.HealingDelay = configfile.Duration(time.Millisecond)
	cfg.HealingMaxDelay = configfile.Duration(4 * time.Millisecond)
	return cfg
}

func newTestLoop(t *testing.T, cfg Config, deps Deps) *Loop {
	t.Helper()
	if deps.Committer == nil {
		deps.Committer = &recordingCommitter{}
	}
	loop, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("create loop: %v", err)
	}
	t.Cleanup(func() { _ = loop.Close() })
	return loop
}

func newHandlers(calls *callLog, names ...string) []*testHandler {
	handlers := make([]*testHandler, len(names))
	for i, name := range names {
		handlers[i] = &testHandler{name: name, calls: calls}
	}
	return handlers
}

func asHandlers(handlers []*testHandler) []controllerapi.EventHandler {
	out := make([]controllerapi.EventHandler, len(handlers))
	for i, h := range handlers {
		out[i] = h
	}
	return out
}

// waitCtx bounds a wait in a test so a bug fails the test instead of hanging.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustPush(t *testing.T, loop *Loop, events ...controllerapi.Event) {
	t.Helper()
	for _, event := range events {
		if err := loop.PushEvent(event); err != nil {
			t.Fatalf("push %s: %v", event.Spec().Name, err)
		}
	}
}

func mustWait(t *testing.T, event *testEvent) error {
	t.Helper()
	err := event.Wait(waitCtx(t))
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("event %s was never done", event.Name)
	}
	return err
}

// eventually polls cond until it holds; a bug makes the test fail after a
// generous bound instead of hanging.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := waitCtx(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// waitHealthy waits until the startup resync is committed.
func waitHealthy(t *testing.T, loop *Loop) {
	t.Helper()
	eventually(t, "the startup resync committed", func() bool { return loop.Health().State == Healthy })
}

func withoutResyncs(calls []string) []string {
	var out []string
	for _, call := range calls {
		if !strings.Contains(call, ":resync#") {
			out = append(out, call)
		}
	}
	return out
}
