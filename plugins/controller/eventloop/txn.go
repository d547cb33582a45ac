package eventloop

import (
	"fmt"

	"github.com/gogo/protobuf/proto"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// eventTxn is the controllerapi.EventOperations handed to handlers for one event. It
// is used only from the loop goroutine.
type eventTxn struct {
	changes map[string]proto.Message
	// followUps collects events pushed by handlers, in push order.
	followUps    []controllerapi.Event
	maxFollowUps int
}

func newEventTxn(maxFollowUps int) *eventTxn {
	return &eventTxn{changes: map[string]proto.Message{}, maxFollowUps: maxFollowUps}
}

// Put sets the value of key.
func (t *eventTxn) Put(key string, value proto.Message) { t.changes[key] = value }

// Delete removes key.
func (t *eventTxn) Delete(key string) { t.changes[key] = nil }

// PushFollowUp queues event to run right after the current one.
func (t *eventTxn) PushFollowUp(event controllerapi.Event) error {
	if err := validate(event); err != nil {
		return fmt.Errorf("push follow-up: %w", err)
	}
	spec := event.Spec()
	if spec.Blocking {
		return fmt.Errorf("push follow-up %s: %w", spec.Name, controllerapi.ErrBlockingFollowUp)
	}
	if len(t.followUps) >= t.maxFollowUps {
		return fmt.Errorf("push follow-up %s: more than %d follow-ups from one event: %w",
			spec.Name, t.maxFollowUps, controllerapi.ErrEventQueueFull)
	}
	t.followUps = append(t.followUps, event)
	return nil
}

// applyTo returns the configuration after committing the transaction on top
// of committed. With resync, the changes replace everything.
func (t *eventTxn) applyTo(committed map[string]proto.Message, resync bool) map[string]proto.Message {
	next := make(map[string]proto.Message, len(committed)+len(t.changes))
	if !resync {
		for key, value := range committed {
			next[key] = value
		}
	}
	for key, value := range t.changes {
		if value == nil {
			delete(next, key)
			continue
		}
		next[key] = value
	}
	return next
}

// commitChanges is what goes to the Committer: for a resync the complete
// value set (deletions dropped), otherwise the changes as made.
func (t *eventTxn) commitChanges(resync bool) map[string]proto.Message {
	if !resync {
		return t.changes
	}
	return t.applyTo(nil, true)
}
