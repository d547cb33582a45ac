package dockerpods

import (
	"context"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/internal/logs"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Source is Docker as the pod manager's podapi.Runtime: the Inspector's
// listings and the Watcher's events.
type Source struct {
	*Inspector
	minBackoff time.Duration
	maxBackoff time.Duration
}

var _ podapi.Runtime = (*Source)(nil)

// NewSource returns Docker at client as a runtime; the backoffs bound the
// wait before reconnecting to its event stream (zero: the defaults).
func NewSource(client *docker.Client, log logs.Logger, minBackoff, maxBackoff time.Duration) *Source {
	return &Source{Inspector: NewInspector(client, log), minBackoff: minBackoff, maxBackoff: maxBackoff}
}

// String implements podapi.Runtime.
func (s *Source) String() string { return "Docker at " + s.client.Endpoint() }

// Watch implements podapi.Runtime.
func (s *Source) Watch(ctx context.Context, listener podapi.RuntimeListener) {
	NewWatcher(s.client, listener, s.log, s.minBackoff, s.maxBackoff).Run(ctx)
}
