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
	// ShutdownName is the event Close runs through the handlers.
	ShutdownName = "Shutdown"
)

// ResyncEvent asks every handler to resync. It is blocking: the pusher may
// wait for the outcome with Wait.
type ResyncEvent struct {
	*controllerapi.Result
	name string
}

// NewResyncEvent returns a full resync event of the given name.
func NewResyncEvent(name string) *ResyncEvent {
	return &ResyncEvent{Result: controllerapi.NewResult(), name: name}
}

// GetName returns the event name.
func (e *ResyncEvent) GetName() string { return e.name }

// String describes the event.
func (e *ResyncEvent) String() string {
	return fmt.Sprintf("%s (%s)", e.name, controllerapi.FullResync)
}

// Method returns controllerapi.FullResync.
func (e *ResyncEvent) Method() controllerapi.EventMethodType { return controllerapi.FullResync }

// IsBlocking is true: the pusher may wait for the resync.
func (e *ResyncEvent) IsBlocking() bool { return true }

// ShutdownEvent is run through the handlers by Close, in reverse order, so
// that each can release what it holds. Errors are reported and ignored.
type ShutdownEvent struct{}

// GetName returns ShutdownName.
func (ShutdownEvent) GetName() string { return ShutdownName }

// String describes the event.
func (ShutdownEvent) String() string { return "agent shutdown" }

// Method is controllerapi.Update.
func (ShutdownEvent) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking is false.
func (ShutdownEvent) IsBlocking() bool { return false }

// Done does nothing: no one waits for the shutdown.
func (ShutdownEvent) Done(error) {}

// TransactionType is controllerapi.BestEffortIgnoreErrors: nothing heals a shutdown.
func (ShutdownEvent) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffortIgnoreErrors
}

// Direction is controllerapi.Reverse: what was built last is released first.
func (ShutdownEvent) Direction() controllerapi.UpdateDirectionType { return controllerapi.Reverse }
