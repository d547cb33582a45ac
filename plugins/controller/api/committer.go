package api

import (
	"context"

	"github.com/gogo/protobuf/proto"
)

// Committer applies the transaction of one event; in the agent it is the
// vpp-agent KV scheduler.
type Committer interface {
	// Commit applies req. An error means the values may be only partly
	// applied: the loop keeps them as the configuration and schedules a
	// healing resync, which sends the complete value set again. Commit runs
	// on the loop's commit worker, never on the loop goroutine, one call at
	// a time.
	Commit(ctx context.Context, req CommitRequest) error
}

// CommitRequest is the transaction of one event as the Committer sees it.
type CommitRequest struct {
	// Changes maps keys to their new values; a nil value deletes the key.
	Changes map[string]proto.Message
	// Resync tells that Changes is the complete value set: every key not in
	// it must be removed.
	Resync bool
	// Description names the event, for the Committer's own logs.
	Description string
}
