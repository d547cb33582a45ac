package vswitch

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ligato/cn-infra/logging"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
)

// linkWatcher reads the memifs' links and counters from VPP and logs each
// change: a link that comes up, goes down, or is refused (a wrong secret
// shows as VPP's "incorrect secret"). When a link comes up, or is up when
// the watcher starts, it applies the model's rx modes to the queues VPP
// holds in other modes (none after an agent restart). It keeps what it
// read last for MemifLinks, and tells events of a wrong secret and of a
// link refused or left by its pod side for longer than grace.
type linkWatcher struct {
	conn    descriptor.ConnFunc
	rxModes func(name string) []*vpp_interfaces.Interface_RxMode
	log     logging.Logger
	// events is told of wrong secrets and links down past grace; nil:
	// nothing is told.
	events vswitchapi.LinkEvents
	grace  time.Duration
	now    func() time.Time

	// known, downSince, troubleSince and warned are the watcher
	// goroutine's own.
	known     map[string]descriptor.Link
	downSince map[string]time.Time
	// troubleSince is when each link was first seen down with a reason:
	// VPP refused its pod side, or the pod side left.
	troubleSince map[string]time.Time
	// warned are the links down whose LinkDown was told.
	warned map[string]bool

	mu sync.Mutex
	// last is what the last check read, for MemifLinks.
	last []vswitchapi.MemifLink
}

func newLinkWatcher(conn descriptor.ConnFunc, rxModes func(string) []*vpp_interfaces.Interface_RxMode, log logging.Logger) *linkWatcher {
	return &linkWatcher{conn: conn, rxModes: rxModes, log: log, now: time.Now,
		known: map[string]descriptor.Link{}, downSince: map[string]time.Time{}, troubleSince: map[string]time.Time{}, warned: map[string]bool{}}
}

func (w *linkWatcher) run(ctx context.Context, period time.Duration) {
	every(ctx, period, w.check)
}

func (w *linkWatcher) check(ctx context.Context) {
	conn, err := w.conn()
	if errors.Is(err, vppapi.ErrNotConnected) {
		w.setLast(nil)
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
		w.logChange(ctx, conn, name, link)
	}
	w.known = links
	w.setLast(w.track(links, w.readCounters(ctx, conn, links)))
}

func (w *linkWatcher) logChange(ctx context.Context, conn *vppapi.Conn, name string, link descriptor.Link) {
	switch {
	case link.Up:
		w.log.Infof("memif %s (VPP %s) link up: the pod side connected on %s", name, link.VPPName, link.Socket)
		set, err := descriptor.EnsureRxModes(ctx, conn, link.Index, w.rxModes(name))
		if err != nil {
			w.log.Warnf("memif %s (VPP %s): %v", name, link.VPPName, err)
		} else if set {
			w.log.Debugf("memif %s (VPP %s): rx modes applied to its queues", name, link.VPPName)
		}
	case link.DownReason == vswitchapi.WrongSecret:
		w.log.Warnf("memif %s (VPP %s) link down: VPP refused the pod side on %s: incorrect secret; the pod must use the MEMIF_SECRET of its current allocation (memifctl get)", name, link.VPPName, link.Socket)
	case link.DownReason != "":
		w.log.Warnf("memif %s (VPP %s) link down on %s: %s", name, link.VPPName, link.Socket, link.DownReason)
	default:
		w.log.Infof("memif %s (VPP %s) link down: waiting for the pod side on %s", name, link.VPPName, link.Socket)
	}
}

// readCounters reads the links' counters; none when VPP does not answer
// (the metrics then show the counters read before, not zeros).
func (w *linkWatcher) readCounters(ctx context.Context, conn *vppapi.Conn, links map[string]descriptor.Link) map[string]descriptor.Counters {
	names := make([]string, 0, len(links))
	for _, link := range links {
		names = append(names, link.VPPName)
	}
	slices.Sort(names)
	counters, err := descriptor.ReadCounters(ctx, conn, names)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debugf("read memif counters: %v", err)
		}
		return nil
	}
	return counters
}

// track records since when each link is down and tells events what they
// are owed, then returns the links as MemifLinks.
func (w *linkWatcher) track(links map[string]descriptor.Link, counters map[string]descriptor.Counters) []vswitchapi.MemifLink {
	now := w.now()
	previous := map[string]vswitchapi.MemifLink{}
	for _, link := range w.lastLinks() {
		previous[link.Name] = link
	}
	var result []vswitchapi.MemifLink
	for _, name := range slices.Sorted(maps.Keys(links)) {
		link := links[name]
		memif := vswitchapi.MemifLink{Name: name, VPPName: link.VPPName, Up: link.Up, DownReason: link.DownReason,
			Counters: previous[name].Counters}
		if c, ok := counters[link.VPPName]; ok {
			memif.Counters = vswitchapi.Counters(c)
		}
		if link.Up {
			w.forget(name)
		} else {
			memif.DownSince = since(w.downSince, name, now)
			if link.DownReason != "" {
				w.tell(memif, previous[name], since(w.troubleSince, name, now), now)
			}
		}
		result = append(result, memif)
	}
	for name := range w.downSince {
		if _, ok := links[name]; !ok {
			w.forget(name)
		}
	}
	return result
}

// since returns when name was first put in times, putting it at now the
// first time.
func since(times map[string]time.Time, name string, now time.Time) time.Time {
	at, ok := times[name]
	if !ok {
		at = now
		times[name] = at
	}
	return at
}

// forget forgets a link up or gone.
func (w *linkWatcher) forget(name string) {
	delete(w.downSince, name)
	delete(w.troubleSince, name)
	delete(w.warned, name)
}

// tell tells events of a link down with a reason since trouble: a wrong
// secret newly refused, and, once, a link down so for longer than the
// grace. A link whose pod side never came (no reason) is waiting, not in
// trouble: a pod may start its data plane whenever it likes.
func (w *linkWatcher) tell(link, previous vswitchapi.MemifLink, trouble, now time.Time) {
	if w.events == nil {
		return
	}
	if link.DownReason == vswitchapi.WrongSecret && (previous.Name == "" || previous.Up || previous.DownReason != link.DownReason) {
		w.events.WrongSecret(link)
	}
	if !w.warned[link.Name] && now.Sub(trouble) >= w.grace {
		w.warned[link.Name] = true
		w.events.LinkDown(link, w.grace)
	}
}

func (w *linkWatcher) setLast(links []vswitchapi.MemifLink) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = links
}

func (w *linkWatcher) lastLinks() []vswitchapi.MemifLink {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
