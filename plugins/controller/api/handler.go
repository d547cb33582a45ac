package api

import "github.com/gogo/protobuf/proto"

// Transaction collects the KV-scheduler values an event produces. Keys and
// values follow the vpp-agent models (for example vpp_interfaces.InterfaceKey
// and *vpp_interfaces.Interface).
type Transaction interface {
	// Put sets the value of key.
	Put(key string, value proto.Message)
	// Delete removes key.
	Delete(key string)
}

// EventOperations is what a handler receives while it processes an event:
// the event's transaction and a way to push follow-up events.
type EventOperations interface {
	Transaction
	// PushFollowUp queues an event that runs once the current one's
	// transaction is committed, before anything queued then: right after
	// the current event when it commits nothing. If the current event
	// fails (any handler's error) or is reverted, its follow-ups are
	// dropped, each told ErrDroppedFollowUp. A blocking follow-up is
	// refused with ErrBlockingFollowUp: it would wait on the loop that
	// runs it.
	PushFollowUp(event Event) error
}

// EventHandler reacts to events. Handlers are registered in a fixed order;
// all their state is touched only from the loop unless they document a lock.
type EventHandler interface {
	// String names the handler in logs and the event history.
	String() string
	// HandlesEvent tells whether the handler wants the event.
	HandlesEvent(event Event) bool
	// Resync rebuilds the handler's state and puts the complete
	// configuration it wants into txn.
	Resync(event Event, txn EventOperations) error
	// Update processes one update event and returns a short description of
	// what changed (empty when nothing did).
	Update(event Event, txn EventOperations) (changeDescription string, err error)
	// Revert undoes what a successful Update did for the same event. It is
	// called only under RevertOnFailure, in reverse order, for handlers whose
	// Update succeeded before another handler failed.
	Revert(event Event) error
}
