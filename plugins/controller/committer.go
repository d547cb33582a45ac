package controller

import (
	"context"
	"fmt"

	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// kvSchedulerCommitter commits event transactions as northbound transactions
// of the vpp-agent KV scheduler.
type kvSchedulerCommitter struct {
	scheduler kvs.KVScheduler
}

// Commit runs req as one blocking KV scheduler transaction: a nil value
// deletes its key, a resync becomes a full resync of the scheduler.
func (c kvSchedulerCommitter) Commit(ctx context.Context, req controllerapi.CommitRequest) error {
	txn := c.scheduler.StartNBTransaction()
	for key, value := range req.Changes {
		txn.SetValue(key, value)
	}
	if req.Resync {
		ctx = kvs.WithResync(ctx, kvs.FullResync, true)
	}
	ctx = kvs.WithDescription(ctx, req.Description)
	seqNum, err := txn.Commit(ctx)
	if err != nil {
		return fmt.Errorf("kv scheduler transaction %d (%s, %d values): %w", seqNum, req.Description, len(req.Changes), err)
	}
	return nil
}
