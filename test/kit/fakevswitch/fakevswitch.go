package fakevswitch

import (
	"context"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Committer accepts every transaction.
type Committer struct{}

var _ controllerapi.Committer = Committer{}

// Commit implements controllerapi.Committer.
func (Committer) Commit(context.Context, controllerapi.CommitRequest) error { return nil }
