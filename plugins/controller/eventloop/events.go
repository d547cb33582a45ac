package eventloop

import (
	"fmt"

	"github.com/contivpp/memif-agent/plugins/controller/api"
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
	*api.Result
	name   string
	method api.EventMethodType
}

// NewResyncEvent returns a resync event of the given name and method (one of
// the resync methods).
func NewResyncEvent(name string, method api.EventMethodType) *ResyncEvent {
	return &ResyncEvent{Result: api.NewResult(), name: name, method: method}
}

// GetName returns the event name.
func (e *ResyncEvent) GetName() string { return e.name }

// String describes the event.
func (e *ResyncEvent) String() string { return fmt.Sprintf("%s (%s)", e.name, e.method) }

// Method returns the resync method.
func (e *ResyncEvent) Method() api.EventMethodType { return e.method }

// IsBlocking is true: the pusher may wait for the resync.
func (e *ResyncEvent) IsBlocking() bool { return true }

// ShutdownEvent is run through the handlers by Close, in reverse order, so
// that each can release what it holds. Errors are reported and ignored.
type ShutdownEvent struct{}

// GetName returns ShutdownName.
func (ShutdownEvent) GetName() string { return ShutdownName }

// String describes the event.
func (ShutdownEvent) String() string { return "agent shutdown" }

// Method is api.Update.
func (ShutdownEvent) Method() api.EventMethodType { return api.Update }

// IsBlocking is false.
func (ShutdownEvent) IsBlocking() bool { return false }

// Done does nothing: no one waits for the shutdown.
func (ShutdownEvent) Done(error) {}

// TransactionType is api.BestEffortIgnoreErrors: nothing heals a shutdown.
func (ShutdownEvent) TransactionType() api.UpdateTransactionType { return api.BestEffortIgnoreErrors }

// Direction is api.Reverse: what was built last is released first.
func (ShutdownEvent) Direction() api.UpdateDirectionType { return api.Reverse }
