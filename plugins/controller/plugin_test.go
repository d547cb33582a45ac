package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/ligato/cn-infra/health/statuscheck/model/status"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/health"
)

// memifHandler renders one memif interface per event, named after the
// handler and the event, and deletes it on "Delete" events.
type memifHandler struct {
	name string
	// failUpdate makes Update fail for every event.
	failUpdate bool
	// failResync makes every resync after the startup one fail.
	failResync bool
	// resyncs counts the resyncs so far (on the loop goroutine).
	resyncs int
}

var errRenderFailed = errors.New("rendering the memif interface failed")

func (h *memifHandler) String() string { return h.name }
func (h *memifHandler) HandlesEvent(event controllerapi.Event) bool {
	_, ours := event.(*updateEvent)
	return ours || event.Spec().Method.IsResync()
}

func (h *memifHandler) Resync(_ controllerapi.Event, txn controllerapi.EventOperations) error {
	h.resyncs++
	if h.failResync && h.resyncs > 1 {
		return errRenderFailed
	}
	txn.Put(vpp_interfaces.InterfaceKey(h.name+"-resync"), memif(h.name+"-resync"))
	return nil
}

func (h *memifHandler) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	if h.failUpdate {
		return "", errRenderFailed
	}
	name := h.name + "-" + event.Spec().Name
	if deletes := event.(*updateEvent).deletes; deletes != "" {
		txn.Delete(vpp_interfaces.InterfaceKey(h.name + "-" + deletes))
		return "deleted", nil
	}
	txn.Put(vpp_interfaces.InterfaceKey(name), memif(name))
	return "put " + name, nil
}

func (h *memifHandler) Revert(controllerapi.Event) error { return nil }

func memif(name string) proto.Message {
	return &vpp_interfaces.Interface{
		Name: name, Type: vpp_interfaces.Interface_MEMIF, Enabled: true,
		Link: &vpp_interfaces.Interface_Memif{Memif: &vpp_interfaces.MemifLink{
			Master: true, SocketFilename: "/var/run/contiv/memif/" + name + "/memif.sock",
		}},
	}
}

type updateEvent struct {
	*controllerapi.Result
	name    string
	deletes string // event whose interfaces this event deletes
}

func (e *updateEvent) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: e.name, Blocking: true, Transaction: controllerapi.RevertOnFailure}
}
func (e *updateEvent) String() string { return "update " + e.name }

// startAgent runs the real KV scheduler, the agent's status check
// (plugins/health, as cmd/memif-agent wires it) and the controller plugin
// in-process, without HTTP, as cn-infra would: every Init, then every
// AfterInit; Close in reverse order at cleanup.
func startAgent(t *testing.T, handlers ...controllerapi.EventHandler) (*Plugin, *kvscheduler.Scheduler, *health.Plugin) {
	t.Helper()
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) { deps.HTTPHandlers = nil }))
	statusCheck := health.NewPlugin()
	controller := NewPlugin(UseDeps(func(deps *Deps) {
		deps.KVScheduler = scheduler
		deps.StatusCheck = statusCheck
		deps.EventHandlers = handlers
	}))
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"scheduler Init", scheduler.Init}, {"health Init", statusCheck.Init}, {"controller Init", controller.Init},
		{"controller AfterInit", controller.AfterInit},
	} {
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	t.Cleanup(func() {
		for _, closer := range []func() error{controller.Close, statusCheck.Close, scheduler.Close} {
			if err := closer(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return controller, scheduler, statusCheck
}

func push(t *testing.T, controller *Plugin, event *updateEvent) error {
	t.Helper()
	if err := controller.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event.name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := event.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("event %s never finished", event.name)
	}
	return err
}

// heldBy tells whether the scheduler holds a value for key (as requested
// by the northbound, whether or not a descriptor applies it).
func heldBy(scheduler *kvscheduler.Scheduler, key string) bool {
	state := scheduler.GetValueStatus(key).GetValue().GetState()
	return state != kvs.ValueState_NONEXISTENT && state != kvs.ValueState_REMOVED
}

func TestControllerCommitsToKVScheduler(t *testing.T) {
	ok1, ok2 := &memifHandler{name: "wiring"}, &memifHandler{name: "stats"}
	failing := &memifHandler{name: "failing"}
	controller, scheduler, _ := startAgent(t, ok1, ok2, failing)

	tests := []struct {
		name     string
		event    *updateEvent
		setup    func()
		wantErr  error
		wantHeld map[string]bool
	}{
		{
			name: "update puts every handler's value", event: &updateEvent{Result: controllerapi.NewResult(), name: "A"},
			wantHeld: map[string]bool{"wiring-A": true, "stats-A": true, "failing-A": true, "wiring-resync": true},
		},
		{
			name: "revert on failure commits nothing", event: &updateEvent{Result: controllerapi.NewResult(), name: "B"},
			setup: func() { failing.failUpdate = true }, wantErr: errRenderFailed,
			wantHeld: map[string]bool{"wiring-B": false, "stats-B": false, "failing-B": false, "wiring-A": true},
		},
		{
			name: "delete removes the value", event: &updateEvent{Result: controllerapi.NewResult(), name: "C", deletes: "A"},
			setup:    func() { failing.failUpdate = false },
			wantHeld: map[string]bool{"wiring-A": false, "stats-A": false, "failing-A": false, "wiring-resync": true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			if err := push(t, controller, tc.event); !errors.Is(err, tc.wantErr) {
				t.Errorf("event error = %v, want %v", err, tc.wantErr)
			}
			for name, want := range tc.wantHeld {
				if got := heldBy(scheduler, vpp_interfaces.InterfaceKey(name)); got != want {
					t.Errorf("scheduler holds %s: %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestControllerFullResyncReplacesSchedulerValues(t *testing.T) {
	controller, scheduler, _ := startAgent(t, &memifHandler{name: "wiring"})
	if err := push(t, controller, &updateEvent{Result: controllerapi.NewResult(), name: "A"}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := controller.loop.Resync(context.Background()); err != nil {
		t.Fatalf("resync: %v", err)
	}
	for name, want := range map[string]bool{"wiring-A": false, "wiring-resync": true} {
		if got := heldBy(scheduler, vpp_interfaces.InterfaceKey(name)); got != want {
			t.Errorf("after a full resync the scheduler holds %s: %v, want %v", name, got, want)
		}
	}
}

func TestControllerHealthDrivesAgentStatus(t *testing.T) {
	tests := []struct {
		name       string
		failResync bool
		want       status.OperationalState
	}{
		{name: "successful resync: agent OK", want: status.OperationalState_OK},
		{name: "failed resync: agent in error", failResync: true, want: status.OperationalState_ERROR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			controller, _, statusCheck := startAgent(t, &memifHandler{name: "wiring", failResync: tc.failResync})
			_ = controller.loop.Resync(context.Background())
			if got := statusCheck.GetAgentStatus().State; got != tc.want {
				t.Errorf("agent state = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestUnimplementedValuesAreKeptByScheduler(t *testing.T) {
	controller, scheduler, _ := startAgent(t, &memifHandler{name: "wiring"})
	if err := push(t, controller, &updateEvent{Result: controllerapi.NewResult(), name: "A"}); err != nil {
		t.Fatalf("update: %v", err)
	}
	got := scheduler.GetValueStatus(vpp_interfaces.InterfaceKey("wiring-A")).GetValue().GetState()
	if got != kvs.ValueState_UNIMPLEMENTED {
		t.Errorf("state of a value without descriptor = %s, want UNIMPLEMENTED", got)
	}
}
