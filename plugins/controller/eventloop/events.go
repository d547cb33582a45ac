package eventloop

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Names of the events the loop makes itself.
const (
	// StartupResyncName is the full resync run by Start.
	StartupResyncName = "StartupResync"
	// HealingResyncName is the full resync run after an error.
	HealingResyncName = "HealingResync"
	// RequestedResyncName is the full resync asked for with Loop.Resync.
	RequestedResyncName = "RequestedResync"
)

// ResyncEvent asks every handler to resync. It is blocking: the pusher may
// wait for the outcome with Wait.
type ResyncEvent struct {
	controllerapi.EventSpec
	*controllerapi.Result
}

// NewResyncEvent returns a full resync event of the given name.
func NewResyncEvent(name string) *ResyncEvent {
	return &ResyncEvent{
		EventSpec: controllerapi.EventSpec{Name: name, Method: controllerapi.FullResync, Blocking: true},
		Result:    controllerapi.NewResult(),
	}
}

// String describes the event.
func (e *ResyncEvent) String() string {
	return fmt.Sprintf("%s (%s)", e.Name, controllerapi.FullResync)
}

// validate refuses an event the loop cannot process as its spec says.
func validate(event controllerapi.Event) error {
	spec := event.Spec()
	if spec.Name == "" {
		return fmt.Errorf("event %q (%T) has no name in its spec: %w", event, event, controllerapi.ErrInvalidEvent)
	}
	if _, awaited := event.(controllerapi.AwaitedEvent); spec.Blocking && !awaited {
		return fmt.Errorf("event %s is blocking but has no Done to tell its pusher (embed *controllerapi.Result): %w", spec.Name, controllerapi.ErrInvalidEvent)
	}
	return nil
}

// tell gives err to event's pusher, if it has one waiting.
func tell(event controllerapi.Event, err error) {
	if awaited, ok := event.(controllerapi.AwaitedEvent); ok {
		awaited.Done(err)
	}
}
