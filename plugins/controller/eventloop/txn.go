package eventloop

import (
	"fmt"

	"github.com/gogo/protobuf/proto"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// eventTxn is the controllerapi.EventOperations handed to handlers for one event. It
// is used only from the loop goroutine.
type eventTxn struct {
	// base is what Get falls back to: the committed configuration for an
	// update, nothing for a resync that builds the complete value set.
	base    map[string]proto.Message
	changes map[string]proto.Message
	// followUps collects events pushed by handlers, in push order.
	followUps    []controllerapi.Event
	maxFollowUps int
}

func newEventTxn(base map[string]proto.Message, maxFollowUps int) *eventTxn {
	return &eventTxn{base: base, changes: map[string]proto.Message{}, maxFollowUps: maxFollowUps}
}

// Put sets the value of key.
func (t *eventTxn) Put(key string, value proto.Message) { t.changes[key] = value }

// Delete removes key.
func (t *eventTxn) Delete(key string) { t.changes[key] = nil }

// Get returns the value of key as this transaction leaves it.
func (t *eventTxn) Get(key string) proto.Message {
	if value, changed := t.changes[key]; changed {
		return value
	}
	return t.base[key]
}

// PushFollowUp queues event to run right after the current one.
func (t *eventTxn) PushFollowUp(event controllerapi.Event) error {
	if event.IsBlocking() {
		return fmt.Errorf("push follow-up %s: %w", event.GetName(), controllerapi.ErrBlockingFollowUp)
	}
	if len(t.followUps) >= t.maxFollowUps {
		return fmt.Errorf("push follow-up %s: more than %d follow-ups from one event: %w",
			event.GetName(), t.maxFollowUps, controllerapi.ErrEventQueueFull)
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
