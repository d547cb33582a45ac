package vswitch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// Reachability implements vswitchapi.VswitchAPI.
func (p *Plugin) Reachability() (vswitchapi.Reachability, <-chan struct{}) {
	return p.reachability.Reachability()
}

// reachable records that VPP answers.
func (p *Plugin) reachable() {
	p.reachability.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
}

// unreachable records that VPP stopped answering at since, unless it was
// unreachable already: the first call left unanswered says since when.
func (p *Plugin) unreachable(since time.Time, err error) {
	if current, _ := p.reachability.Reachability(); current.Configured && !current.Reachable {
		return
	}
	p.reachability.Set(vswitchapi.Reachability{Configured: true, Since: since, Err: err})
}

// checkHealth asks VPP for a control_ping every period until ctx ends. A
// ping left unanswered for request-timeout makes VPP unreachable since the
// ping was sent, and drops the connection: a stopped VPP would leave every
// call waiting for request-timeout and execute them all when it runs
// again, so calls fail at once instead (vppapi.ErrNotConnected) until a
// new connection's handshake is answered, and the resync pushed then
// applies what VPP owes, read back from VPP first.
func (p *Plugin) checkHealth(ctx context.Context, period time.Duration) {
	every(ctx, period, p.ping)
}

// every calls do each period until ctx ends: the plugin's pollers.
func every(ctx context.Context, period time.Duration, do func(context.Context)) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			do(ctx)
		}
	}
}

func (p *Plugin) ping(ctx context.Context) {
	conn, err := p.client.Conn()
	if err != nil {
		return
	}
	sent := time.Now()
	pingCtx, cancel := context.WithTimeout(ctx, p.config.RequestTimeout.Duration())
	defer cancel()
	err = conn.Request(pingCtx, &vppmsg.ControlPing{}, &vppmsg.ControlPingReply{})
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return
	}
	err = fmt.Errorf("VPP at %s did not answer control_ping within request-timeout %s", p.config.VPPAPISocket, p.config.RequestTimeout)
	p.log.WarnS("VPP did not answer: dropping the connection; vswitch changes fail at once until VPP answers again", "err", err)
	p.unreachable(sent, err)
	conn.Close()
}

// ensure the plugin offers the API the device manager consumes.
var _ vswitchapi.VswitchAPI = (*Plugin)(nil)

// errNotConnectedYet is the reachability of a configured VPP before the
// first dial.
var errNotConnectedYet = fmt.Errorf("not connected to VPP yet: %w", vppapi.ErrNotConnected)
