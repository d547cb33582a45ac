package vswitch

import (
	"context"
	"errors"
	"time"

	"github.com/ligato/cn-infra/logging"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
)

// linkWatcher reads the memifs' links from VPP and logs each change: a
// link that comes up, goes down, or is refused (a wrong secret shows as
// VPP's "incorrect secret"). When a link comes up, or is up when the
// watcher starts, it applies the model's rx modes to the queues VPP holds in
// other modes (none after an agent restart).
type linkWatcher struct {
	conn    descriptor.ConnFunc
	rxModes func(name string) []*vpp_interfaces.Interface_RxMode
	log     logging.Logger
	known   map[string]descriptor.Link
}

func newLinkWatcher(conn descriptor.ConnFunc, rxModes func(string) []*vpp_interfaces.Interface_RxMode, log logging.Logger) *linkWatcher {
	return &linkWatcher{conn: conn, rxModes: rxModes, log: log, known: map[string]descriptor.Link{}}
}

func (w *linkWatcher) run(ctx context.Context, period time.Duration) {
	every(ctx, period, w.check)
}

func (w *linkWatcher) check(ctx context.Context) {
	conn, err := w.conn()
	if errors.Is(err, vppapi.ErrNotConnected) {
		return
	}
	links, err := descriptor.ReadLinks(ctx, conn)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debugf("read memif links: %v", err)
		}
		return
	}
	for name, link := range links {
		before, seen := w.known[name]
		if seen && before.Up == link.Up && before.DownReason == link.DownReason {
			continue
		}
		switch {
		case link.Up:
			w.log.Infof("memif %s (VPP %s) link up: the pod side connected on %s", name, link.VPPName, link.Socket)
			set, err := descriptor.EnsureRxModes(ctx, conn, link.Index, w.rxModes(name))
			if err != nil {
				w.log.Warnf("memif %s (VPP %s): %v", name, link.VPPName, err)
			} else if set {
				w.log.Debugf("memif %s (VPP %s): rx modes applied to its queues", name, link.VPPName)
			}
		case link.DownReason == "incorrect secret":
			w.log.Warnf("memif %s (VPP %s) link down: VPP refused the pod side on %s: incorrect secret; the pod must use the MEMIF_SECRET of its current allocation (memifctl get)", name, link.VPPName, link.Socket)
		case link.DownReason != "":
			w.log.Warnf("memif %s (VPP %s) link down on %s: %s", name, link.VPPName, link.Socket, link.DownReason)
		default:
			w.log.Infof("memif %s (VPP %s) link down: waiting for the pod side on %s", name, link.VPPName, link.Socket)
		}
	}
	w.known = links
}
