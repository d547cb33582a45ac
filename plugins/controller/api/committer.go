package api

import (
	"context"

	"github.com/gogo/protobuf/proto"
)

// Committer applies the transaction of one event; in the agent it is the
// vpp-agent KV scheduler.
type Committer interface {
	// Commit applies req. An error means the values may be only partly
	// applied; the loop reacts according to the event's transaction type.
	Commit(ctx context.Context, req CommitRequest) error
}

// CommitRequest is the transaction of one event as the Committer sees it.
type CommitRequest struct {
	// Changes maps keys to their new values; a nil value deletes the key.
	Changes map[string]proto.Message
	// Resync tells that Changes is the complete value set: every key not in
	// it must be removed.
	Resync bool
	// RevertOnFailure asks the Committer to undo what it applied when the
	// commit fails, because the handlers are reverted too.
	RevertOnFailure bool
	// Description names the event, for the Committer's own logs.
	Description string
}
